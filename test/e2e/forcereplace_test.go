//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cli"
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
// does not name exactly the ConfigMap as B's to recreate (audit.WhenForceSynced).
func TestForceReplaceOfASharedObject(t *testing.T) {
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
			a.Repo.Write(t, a.Path+"/namespace.yaml", namespace)
			a.Repo.Write(t, a.Path+"/shared.yaml", shared)
			rev := a.Repo.Commit(t, "a Namespace and a ConfigMap")
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

			b := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), DestNamespace: labtest.UniqueName("b"), SyncOptions: []string{"Replace=true"}})
			b.Repo.Write(t, b.Path+"/namespace.yaml", namespace)
			b.Repo.Write(t, b.Path+"/shared.yaml", shared)
			brev := b.Repo.Commit(t, "claim A's Namespace and ConfigMap")
			b.RefreshUntil(t, labtest.ControllerTimeout, "to see "+brev, func(s labtest.Status) bool {
				_, ok := s.Find("Namespace", ns)
				return s.Revision == brev && ok
			})
			// What audit says before the forced sync: the shared ConfigMap is B's to delete and
			// recreate, unguarded whatever its Prune=false; the Namespace B would update is no row.
			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "audit", "-o", "json")
			if r.Code != cli.ExitOK {
				t.Fatalf("audit: exit %d", r.Code)
			}
			var doc printer.AuditReport
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
				t.Fatal(err)
			}
			var replaced []string
			for _, it := range doc.Items {
				if it.Deleted == string(audit.WhenForceSynced) && (it.Application.Name == a.Name || it.Application.Name == b.Name) {
					replaced = append(replaced, fmt.Sprintf("%s %s guarded=%t", it.Application.Name, it.Resource, it.Guarded))
				}
			}
			if want := []string{fmt.Sprintf("%s ConfigMap/%s/shared guarded=false", b.Name, a.DestNamespace)}; !slices.Equal(replaced, want) {
				t.Errorf("audit's rows of a forced sync: %q, want %q", replaced, want)
			}

			op := b.ForceSync(t, false)
			t.Logf("B's forced sync with Replace=true: %s %s; %s", op.Phase, op.Message, resultMessages(op))
			if op.Phase != "Succeeded" {
				t.Fatalf("B's forced sync: %s %s", op.Phase, op.Message)
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
		})
	}
}
