//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestForceReplaceOfASharedObject tries argo-cd #29739 ("a sync with Force and Replace=true of app B
// deletes and recreates a Namespace that app A tracks; Prune=false does not stop it") against the
// real controller. App A syncs a Namespace holding a ConfigMap of data nobody manages, and a
// ConfigMap of its own; app B's manifests claim both objects, with Replace=true, and every manifest
// says Prune=false. Then a manual sync of B with FORCE.
//
// What gitops-engine does (pkg/sync/sync_context.go, applyObject; gitops-engine v0.7.1 for v2.14.11,
// the in-tree gitops-engine/v3 for v3.6.1): with Replace, a live Namespace or CRD is updated, never
// replaced, "since 'replace' might recreate resource and so delete all CRD instances"; any other
// kind goes to `kubectl replace --force`, which deletes it and creates it anew. Prune=false guards
// only prunes. So the Namespace and what is in it survive (the report does not reproduce for
// Namespaces) while the shared ConfigMap is deleted and recreated: a new UID, whatever its own
// sync options say. This test fails if either changes, or if audit, asked before the forced sync,
// does not name exactly the ConfigMaps B recreates (audit.WhenForceSynced).
//
// What keeps a shared object is an admission policy that denies its DELETE, which audit names: a
// third ConfigMap, "kept", is protected by `guard policy --kinds configmaps` and `guard protect`.
// Audit counts it guarded; B's forced sync fails on it (the API server denies the replace's DELETE)
// and leaves it as it was. Then an ordinary sync of B, with Replace=true, writes B's manifest over it:
// the label is gone and audit counts it unguarded again, which is why audit's advice protects such
// an object by name, and why guard protect then refuses to label it.
//
// Before gitops-engine #623's fix (argocd.RuleForcedReplaceDryRunIsDry: v2.14, v3.0.15, v3.1.3) the
// forced sync's dry run runs kubectl's replace --force for real: kept's DELETE is denied in the dry
// run and the sync fails there, yet shared is recreated all the same. Audit's note says so on
// exactly the lines where Argo CD does it.
func TestForceReplaceOfASharedObject(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1", "v2.14.11") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
			a := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
			ns := labtest.UniqueName("shared")
			t.Cleanup(func() { env.DeleteNamespace(ns) })
			namespace := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\n", ns)
			shared := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: %s\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\ndata:\n  owner: a\n", a.DestNamespace)
			kept := strings.Replace(shared, "name: shared", "name: kept", 1)
			a.Repo.Write(t, a.Path+"/namespace.yaml", namespace)
			a.Repo.Write(t, a.Path+"/shared.yaml", shared)
			a.Repo.Write(t, a.Path+"/kept.yaml", kept)
			rev := a.Repo.Commit(t, "a Namespace and two ConfigMaps")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to see "+rev, func(s labtest.Status) bool { return s.Revision == rev })
			if op := a.Sync(t, false); op.Phase != "Succeeded" {
				t.Fatalf("sync of A: %s %s", op.Phase, op.Message)
			}
			a.WaitSynced(t, rev)
			ledger := labtest.UniqueName("ledger")
			if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(labtest.Context(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ledger}, Data: map[string]string{"balance": "42"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			uid := func(namespace, kind, name string) string {
				t.Helper()
				var m metav1.Object
				var err error
				if kind == "Namespace" {
					m, err = env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), name, metav1.GetOptions{})
				} else {
					m, err = env.Kube.CoreV1().ConfigMaps(namespace).Get(labtest.Context(t), name, metav1.GetOptions{})
				}
				if err != nil {
					t.Fatalf("%s %s/%s: %v", kind, namespace, name, err)
				}
				return string(m.GetUID())
			}
			nsUID, ledgerUID, sharedUID := uid("", "Namespace", ns), uid(ns, "ConfigMap", ledger), uid(a.DestNamespace, "ConfigMap", "shared")

			// kept is guarded by the admission policy, once the API server enforces it.
			installPolicy(t, env)
			argocdNS := "--argocd-namespace=" + install.Namespace()
			if r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "protect", "ConfigMap/"+a.DestNamespace+"/kept", "--yes"); r.Code != cli.ExitOK {
				t.Fatalf("guard protect: exit %d", r.Code)
			}
			labtest.Eventually(t, 30*time.Second, "the policy to deny deleting kept", func() (bool, string) {
				err := env.Kube.CoreV1().ConfigMaps(a.DestNamespace).Delete(labtest.Context(t), "kept", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
				return apierrors.IsForbidden(err), fmt.Sprintf("dry-run DELETE: %v", err)
			})
			keptUID := uid(a.DestNamespace, "ConfigMap", "kept")

			b := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), DestNamespace: labtest.UniqueName("b"), SyncOptions: []string{"Replace=true"}})
			b.Repo.Write(t, b.Path+"/namespace.yaml", namespace)
			b.Repo.Write(t, b.Path+"/shared.yaml", shared)
			b.Repo.Write(t, b.Path+"/kept.yaml", kept)
			brev := b.Repo.Commit(t, "claim A's Namespace and ConfigMaps")
			b.RefreshUntil(t, labtest.ControllerTimeout, "to see "+brev, func(s labtest.Status) bool {
				_, ok := s.Find("Namespace", ns)
				return s.Revision == brev && ok
			})
			// What audit says before the forced sync: the shared ConfigMaps are B's to delete and
			// recreate whatever their Prune=false, kept guarded by the policy; the Namespace B would
			// update is no row.
			forced := func() ([]string, string) {
				t.Helper()
				r := unprune(t, env, labtest.TempDir(t), argocdNS, "audit", "-o", "json")
				if r.Code != cli.ExitOK {
					t.Fatalf("audit: exit %d", r.Code)
				}
				var doc printer.AuditReport
				if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
					t.Fatal(err)
				}
				var replaced []string
				notes := ""
				for _, it := range doc.Items {
					if it.Deleted == string(audit.WhenForceSynced) && (it.Application.Name == a.Name || it.Application.Name == b.Name) {
						replaced = append(replaced, fmt.Sprintf("%s %s guarded=%t %v", it.Application.Name, it.Resource, it.Guarded, it.Guards))
						notes += strings.Join(it.Notes, "; ")
					}
				}
				sort.Strings(replaced)
				return replaced, notes
			}
			row := func(name string, guarded bool) string {
				guards := "[]"
				if guarded {
					guards = "[" + string(guard.PolicyGuard) + "]"
				}
				return fmt.Sprintf("%s ConfigMap/%s/%s guarded=%t %s", b.Name, a.DestNamespace, name, guarded, guards)
			}
			got, notes := forced()
			if want := []string{row("kept", true), row("shared", false)}; !slices.Equal(got, want) {
				t.Errorf("audit's rows of a forced sync: %q, want %q", got, want)
			}

			// The API server denies the replace's DELETE of kept: B's sync fails on it alone.
			op := b.ForceSync(t, false)
			t.Logf("B's forced sync with Replace=true: %s %s; %s", op.Phase, op.Message, resultMessages(op))
			if op.Phase == "Succeeded" {
				t.Errorf("B's forced sync succeeded, though the policy denies deleting kept")
			}
			if msgs := resultMessages(op); !strings.Contains(msgs, "ConfigMap/kept: ") || !strings.Contains(msgs, "is protected from deletion") {
				t.Errorf("B's sync results do not say kept is protected: %s", msgs)
			}
			// Before gitops-engine #623's fix the dry run itself sent the DELETEs (kept's was denied
			// there, shared was recreated all the same); audit, asked before, says so exactly then.
			inDryRun := strings.Contains(op.Message, "(dry run)")
			if said := strings.Contains(notes, "the forced sync's dry run already deletes and creates it anew"); said != inDryRun {
				t.Errorf("the forced sync failed in its dry run: %t (%q); audit said the dry run recreates: %t (%s)", inDryRun, op.Message, said, notes)
			}
			if got := uid(a.DestNamespace, "ConfigMap", "kept"); got != keptUID {
				t.Errorf("the protected ConfigMap was recreated (UID %s → %s)", keptUID, got)
			}

			if got := uid("", "Namespace", ns); got != nsUID {
				t.Errorf("#29739 reproduced: Namespace %s was deleted and recreated (UID %s → %s)", ns, nsUID, got)
			}
			if got := uid(ns, "ConfigMap", ledger); got != ledgerUID {
				t.Errorf("ConfigMap %s/%s in the Namespace was recreated (UID %s → %s)", ns, ledger, ledgerUID, got)
			}
			if got := uid(a.DestNamespace, "ConfigMap", "shared"); got == sharedUID {
				t.Errorf("the shared ConfigMap kept its UID %s: Replace=true with FORCE no longer deletes and recreates it", got)
			}

			// An ordinary sync of B replaces kept with B's manifest: the label guard protect added goes.
			op = b.Sync(t, false)
			t.Logf("B's sync with Replace=true: %s %s; %s", op.Phase, op.Message, resultMessages(op))
			if op.Phase != "Succeeded" {
				t.Fatalf("B's sync: %s %s", op.Phase, op.Message)
			}
			cm, err := env.Kube.CoreV1().ConfigMaps(a.DestNamespace).Get(labtest.Context(t), "kept", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := cm.Labels[guard.ProtectLabel]; ok || string(cm.UID) != keptUID {
				t.Errorf("after B's sync with Replace=true: label %s=%q (present %t), UID %s (was %s); want the label gone, the UID kept", guard.ProtectLabel, v, ok, cm.UID, keptUID)
			}
			if got, _ := forced(); !slices.Equal(got, []string{row("kept", false), row("shared", false)}) {
				t.Errorf("audit's rows of a forced sync after the label went: %q, want kept and shared unguarded", got)
			}
			// guard protect now refuses to put back a label B's next sync would take off again.
			r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "protect", "ConfigMap/"+a.DestNamespace+"/kept", "--yes")
			if r.Code != cli.ExitRefused || !strings.Contains(r.Stdout+r.Stderr, "syncs with Replace=true") {
				t.Errorf("guard protect of an object B replaces: exit %d, want %d and the reason", r.Code, cli.ExitRefused)
			}
			if cm, err := env.Kube.CoreV1().ConfigMaps(a.DestNamespace).Get(labtest.Context(t), "kept", metav1.GetOptions{}); err != nil {
				t.Error(err)
			} else if _, ok := cm.Labels[guard.ProtectLabel]; ok {
				t.Errorf("the refused guard protect labelled kept: %v", cm.Labels)
			}
		})
	}
}
