package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// guestbookAfter is guestbook's manifests after a change that drops its namespaces and adds
// platform's ConfigMap (which Argo CD would then take over from platform) and a new Secret.
const guestbookAfter = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
  namespace: guestbook
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: platform
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
`

// guestbookSame is guestbook's manifests as the app tracks them.
const guestbookSame = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
  namespace: guestbook
---
apiVersion: v1
kind: Namespace
metadata:
  name: kube-system
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-b
`

// guestbookMoved is guestbook's manifests after a change that moves Namespace/team-b to "teams".
const guestbookMoved = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook-ui
  namespace: guestbook
---
apiVersion: v1
kind: Namespace
metadata:
  name: kube-system
---
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
`

func TestGoldenCheck(t *testing.T) {
	teams := func(w *world) {
		w.addMoveTarget()
		doc := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n"
		if err := os.WriteFile(filepath.Join(w.dir, "teams.yaml"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// prepared: `unprune move --prepare` marked team-b in guestbook before the change, so guestbook
	// cannot prune it: the move is not counted as a prune.
	prepared := func(w *world) {
		teams(w)
		w.home.Update(w.refs["team-b"], func(o *cluster.Object) {
			o.Annotations[argocd.AnnotationSyncOptions] = "Prune=false,Delete=false"
		})
	}
	runGoldens(t, []goldenCase{
		// Exit 0: a report without --fail-on.
		{name: "check", args: []string{"check", "guestbook", "--manifests", "-"}, stdin: guestbookAfter},
		{name: "check-json", args: []string{"check", "guestbook", "--manifests", "-", "-o", "json"}, stdin: guestbookAfter},
		{name: "check-markdown", args: []string{"check", "guestbook", "--manifests", "-", "-o", "markdown"}, stdin: guestbookAfter},
		{name: "check-nothing", args: []string{"check", "guestbook", "--manifests", "-", "--fail-on", "any"}, stdin: guestbookSame},
		{name: "check-also", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml"}, stdin: guestbookMoved, setup: teams},
		{name: "check-also-yaml", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml", "-o", "yaml"}, stdin: guestbookMoved, setup: teams},
		// ledger's Prune=false stops Argo CD's DELETE of it, not the namespace controller's.
		{name: "check-guard-in-pruned-namespace", args: []string{"check", "guestbook", "--manifests", "-"}, stdin: guestbookAfter,
			setup: func(w *world) { w.addGuardedInTeamA() }},
		{name: "check-also-prepared", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml", "--fail-on", "high"},
			stdin: guestbookMoved, setup: prepared},
		// Exit 1: --fail-on turns findings into a failing CI step.
		// A move nothing prepared is the prune it folds: guestbook deletes team-b before teams syncs.
		{name: "check-also-fail-on-high", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml", "--fail-on", "high"},
			stdin: guestbookMoved, setup: teams},
		{name: "check-also-markdown", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml", "-o", "markdown", "--fail-on", "high"},
			stdin: guestbookMoved, setup: teams},
		{name: "check-fail-on-adoption", args: []string{"check", "guestbook", "--manifests", "-", "--fail-on", "adoption", "-o", "name"}, stdin: guestbookAfter},
		{name: "check-fail-on-high-markdown", args: []string{"check", "guestbook", "--manifests", "-", "--fail-on", "high", "-o", "markdown"}, stdin: guestbookAfter},
		// Exit 2: bad input. --revision needs Argo CD's API to render, which is the lab's.
		{name: "check-no-manifests", args: []string{"check", "guestbook"}},
		{name: "check-revision-without-via", args: []string{"check", "guestbook", "--revision", "main"}},
		{name: "check-bad-fail-on", args: []string{"check", "guestbook", "--manifests", "-", "--fail-on", "some"}, stdin: guestbookAfter},
		{name: "check-bad-manifests", args: []string{"check", "guestbook", "--manifests", "-"}, stdin: "kind: [\n"},
		// Judged before connecting: the kubeconfig is never read.
		{name: "check-bad-manifests-before-connecting", args: []string{"check", "guestbook", "--manifests", "-", "--kubeconfig", "/nonexistent/kubeconfig"}, stdin: "kind: [\n"},
		{name: "check-missing-file", args: []string{"check", "guestbook", "--manifests", "{{ .Dir }}/nope.yaml"}},
		{name: "check-no-set", args: []string{"check", "applicationset/teams", "--manifests", "-"}, stdin: guestbookSame},
		{name: "check-two-apps", args: []string{"check", "guestbook", "platform", "--manifests", "-"}},
	})
}
