package cli

import (
	"os"
	"path/filepath"
	"testing"
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
	runGoldens(t, []goldenCase{
		// Exit 0: a report without --fail-on.
		{name: "check", args: []string{"check", "guestbook", "--manifests", "-"}, stdin: guestbookAfter},
		{name: "check-json", args: []string{"check", "guestbook", "--manifests", "-", "-o", "json"}, stdin: guestbookAfter},
		{name: "check-markdown", args: []string{"check", "guestbook", "--manifests", "-", "-o", "markdown"}, stdin: guestbookAfter},
		{name: "check-nothing", args: []string{"check", "guestbook", "--manifests", "-", "--fail-on", "any"}, stdin: guestbookSame},
		{name: "check-also", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml"}, stdin: guestbookMoved, setup: teams},
		{name: "check-also-yaml", args: []string{"check", "guestbook", "--manifests", "-", "--also", "teams={{ .Dir }}/teams.yaml", "-o", "yaml"}, stdin: guestbookMoved, setup: teams},
		// Exit 1: --fail-on turns findings into a failing CI step.
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
