//go:build lab

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

const resourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

// renameCase is an app with automated prune and the resources finalizer, holding a Namespace, a
// ConfigMap and a Deployment (and its own first ConfigMap).
type renameCase struct {
	app     *labtest.App
	rev     string
	objects []object
}

func newRenameCase(t *testing.T, env *labtest.Env, install *labtest.Install) *renameCase {
	t.Helper()
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
	ns := labtest.UniqueName("renamed-ns")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	cm, dep := labtest.UniqueName("renamed-cm"), labtest.UniqueName("renamed-dep")
	group := strings.ReplaceAll(labtest.UniqueName("g"), "-", "") + ".example.com"
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(gvrCRD).Delete(context.Background(), "gadgets."+group, metav1.DeleteOptions{})
	})
	app.Repo.Write(t, app.Path+"/ns.yaml", namespaceManifest(ns))
	app.Repo.Write(t, app.Path+"/cm.yaml", configMapManifest(cm, app.DestNamespace))
	app.Repo.Write(t, app.Path+"/dep.yaml", deploymentManifest(dep, app.DestNamespace))
	app.Repo.Write(t, app.Path+"/crd.yaml", gadgetCRD(group))
	app.Repo.Write(t, app.Path+"/gadget.yaml", fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: g1\n  namespace: %s\n"+
		"  annotations:\n    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true\nspec:\n  size: 3\n", group, app.DestNamespace))
	rev := app.Repo.Commit(t, "a Namespace, a ConfigMap, a Deployment, a CRD and a custom resource")
	c := &renameCase{app: app, rev: rev, objects: []object{{kind: "Namespace", name: ns}, {kind: "ConfigMap", namespace: app.DestNamespace, name: cm},
		{kind: "Deployment", namespace: app.DestNamespace, name: dep}, {kind: "ConfigMap", namespace: app.DestNamespace, name: app.Name + "-config"},
		{kind: "CustomResourceDefinition", name: "gadgets." + group, group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{kind: "Gadget", namespace: app.DestNamespace, name: "g1", group: group, resource: "gadgets"}}}
	app.RefreshUntil(t, labtest.ControllerTimeout, "to sync them", func(s labtest.Status) bool {
		for _, o := range c.objects {
			if _, ok := s.Find(o.kind, o.name); !ok {
				return false
			}
		}
		return s.Revision == rev && s.Sync == "Synced"
	})
	waitDeploymentSettled(t, env.Cluster, c.objects[2])
	setFinalizers(t, env, app.Namespace, app.Name, []string{resourcesFinalizer})
	// CreateApp's cleanup deletes the app: without the finalizer first, that would cascade.
	t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
	return c
}

// gadgetCRD is a namespaced CRD written as the API server stores it (no defaulted field missing),
// so that Argo CD shows no diff on it.
func gadgetCRD(group string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
spec:
  group: %[1]s
  conversion:
    strategy: None
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group)
}

func setFinalizers(t *testing.T, env *labtest.Env, namespace, name string, finalizers []string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, jsonList(finalizers))
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(namespace).Patch(labtest.Context(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set finalizers of %s/%s: %v", namespace, name, err)
	}
}

func jsonList(items []string) string {
	if items == nil {
		return "null"
	}
	out := "["
	for i, s := range items {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf("%q", s)
	}
	return out + "]"
}

// dropApp deletes an Application without cascade: finalizers off first.
func dropApp(env *labtest.Env, namespace, name string) {
	apps := env.Dynamic.Resource(labtest.GVRApplication).Namespace(namespace)
	_, _ = apps.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	_ = apps.Delete(context.Background(), name, metav1.DeleteOptions{})
}

func appExists(t *testing.T, env *labtest.Env, namespace, name string) (map[string]any, bool) {
	t.Helper()
	u, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(namespace).Get(labtest.Context(t), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.Object, true
}

// TestRenameDeletesNothing: rename an app with the resources finalizer and automated prune — every
// UID unchanged, no rollout, nothing deleted at any moment, the new app Synced with the old one's
// finalizer and sync policy, the old Application gone; undo brings the old app back the same way.
func TestRenameDeletesNothing(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range moveCells {
		tracking := cell.tracking
		t.Run(cell.version+"/"+tracking, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: tracking})
			c := newRenameCase(t, env, install)
			old := c.app
			dep := c.objects[2]
			if dep.kind != "Deployment" {
				t.Fatalf("objects[2] is %s", dep)
			}
			rsBefore := ownedReplicaSets(t, env.Cluster, dep)
			newName := labtest.UniqueName("renamed")
			t.Cleanup(func() { dropApp(env, old.Namespace, newName) })
			journals := labtest.TempDir(t)
			stop := watchNothingDeleted(t, env.Cluster, c.objects...)

			versions := map[object]string{}
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				versions[o] = m.ResourceVersion
			}
			if r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "rename", old.Name, newName, "--dry-run=server"); r.Code != 1 {
				t.Fatalf("rename --dry-run=server: exit %d, want 1 (changes to make)", r.Code)
			}
			if _, ok := appExists(t, env, old.Namespace, newName); ok {
				t.Fatal("a server-side dry run created the new app")
			}
			if o, _ := appExists(t, env, old.Namespace, old.Name); o == nil || len(o["metadata"].(map[string]any)["finalizers"].([]any)) != 1 {
				t.Fatalf("a server-side dry run changed the old app: %v", o)
			}
			for _, o := range c.objects {
				if m, _ := o.meta(t, env.Cluster); m.ResourceVersion != versions[o] {
					t.Errorf("a server-side dry run changed %s", o)
				}
			}
			if r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "rename", old.Name, newName, "--yes", "--timeout", "2m"); r.Code != 0 {
				t.Fatalf("rename: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, old.Namespace, old.Name); ok {
				t.Error("the old Application still exists")
			}
			renamed := &labtest.App{Install: install, Name: newName, Namespace: old.Namespace, Repo: old.Repo, Path: old.Path}
			s := renamed.WaitSynced(t, c.rev)
			obj, _ := appExists(t, env, old.Namespace, newName)
			meta, spec := obj["metadata"].(map[string]any), obj["spec"].(map[string]any)
			if f, _ := meta["finalizers"].([]any); len(f) != 1 || f[0] != resourcesFinalizer {
				t.Errorf("the new app's finalizers: %v", meta["finalizers"])
			}
			if p, _ := spec["syncPolicy"].(map[string]any); p == nil || p["automated"] == nil {
				t.Errorf("the new app's sync policy: %v", spec["syncPolicy"])
			}
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				if o.kind == "CustomResourceDefinition" {
					// Argo CD writes no tracking on CRDs; the app lists the one it declares.
					if trackedBy(m, tracking, renamed.Instance()) || trackedBy(m, tracking, old.Instance()) {
						t.Errorf("the CRD got tracking: labels %v annotations %v", m.Labels, m.Annotations)
					}
				} else if !trackedBy(m, tracking, renamed.Instance()) {
					t.Errorf("%s after the rename: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
				if r, ok := s.Find(o.kind, o.name); !ok || r.Status != "Synced" {
					t.Errorf("the new app's row for %s: %+v (listed %t)", o, r, ok)
				}
			}
			if got := ownedReplicaSets(t, env.Cluster, dep); !slices.Equal(got, rsBefore) {
				t.Errorf("a rollout: ReplicaSets %v, were %v", got, rsBefore)
			}

			if r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "undo", "--latest", "--yes"); r.Code != 0 {
				t.Fatalf("undo: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, old.Namespace, newName); ok {
				t.Error("the new Application still exists after undo")
			}
			back, ok := appExists(t, env, old.Namespace, old.Name)
			if !ok {
				t.Fatal("undo did not bring the old Application back")
			}
			if f, _ := back["metadata"].(map[string]any)["finalizers"].([]any); len(f) != 1 || f[0] != resourcesFinalizer {
				t.Errorf("the old app's finalizers after undo: %v", f)
			}
			old.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced after undo", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == c.rev })
			for _, o := range c.objects {
				if m, _ := o.meta(t, env.Cluster); o.kind != "CustomResourceDefinition" && !trackedBy(m, tracking, old.Instance()) {
					t.Errorf("%s after undo: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
			}
			if got := ownedReplicaSets(t, env.Cluster, dep); !slices.Equal(got, rsBefore) {
				t.Errorf("a rollout after undo: ReplicaSets %v, were %v", got, rsBefore)
			}
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestDeleteApplicationCascades is the control: deleting the same kind of app the way one renames it
// without unprune (kubectl delete application) deletes its resources.
func TestDeleteApplicationCascades(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	c := newRenameCase(t, env, install)
	kubectl(t, env, "--kubeconfig", env.State.Kubeconfig, "delete", "application", "-n", c.app.Namespace, c.app.Name, "--wait=false")
	for _, o := range []object{c.objects[1], c.objects[2], c.objects[5]} {
		labtest.Eventually(t, labtest.ControllerTimeout, o.String()+" to be deleted with its app", func() (bool, string) {
			_, err := o.meta(t, env.Cluster)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}

// TestRenameRemoteDestination: an app deploying to another cluster than Argo CD's, reached with the
// user's own context for it: the tracking moves there, nothing deleted, no rollout.
func TestRenameRemoteDestination(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-remote"})
	install.RegisterRemote(t, remote, "remote")
	kubeconfig := mergedKubeconfig(t, env, remote)
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true, DestServer: remote.Server})
	dep := object{kind: "Deployment", namespace: app.DestNamespace, name: labtest.UniqueName("far-dep")}
	app.Repo.Write(t, app.Path+"/dep.yaml", deploymentManifest(dep.name, dep.namespace))
	rev := app.Repo.Commit(t, "a Deployment")
	objects := []object{dep, {kind: "ConfigMap", namespace: app.DestNamespace, name: app.Name + "-config"}}
	app.RefreshUntil(t, labtest.ControllerTimeout, "to sync it", func(s labtest.Status) bool {
		_, ok := s.Find("Deployment", dep.name)
		return ok && s.Revision == rev && s.Sync == "Synced"
	})
	waitDeploymentSettled(t, remote.Cluster, dep)
	setFinalizers(t, env, app.Namespace, app.Name, []string{resourcesFinalizer})
	t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
	newName := labtest.UniqueName("far-renamed")
	t.Cleanup(func() { dropApp(env, app.Namespace, newName) })
	rsBefore := ownedReplicaSets(t, remote.Cluster, dep)
	stop := watchNothingDeleted(t, remote.Cluster, objects...)

	r := cmdtest.Run(t, kubeconfig, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "rename", app.Name, newName, "--yes", "--timeout", "2m",
		"--cluster-context", remote.Server+"=remote-admin")
	if r.Code != 0 {
		t.Fatalf("rename: exit %d", r.Code)
	}
	renamed := &labtest.App{Install: install, Name: newName, Namespace: app.Namespace, Repo: app.Repo, Path: app.Path}
	renamed.WaitSynced(t, rev)
	if _, ok := appExists(t, env, app.Namespace, app.Name); ok {
		t.Error("the old Application still exists")
	}
	for _, o := range objects {
		if m, _ := o.meta(t, remote.Cluster); !trackedBy(m, "annotation", renamed.Instance()) {
			t.Errorf("%s after the rename: annotations %v", o, m.Annotations)
		}
	}
	if got := ownedReplicaSets(t, remote.Cluster, dep); !slices.Equal(got, rsBefore) {
		t.Errorf("a rollout: ReplicaSets %v, were %v", got, rsBefore)
	}
	if bad := stop(); len(bad) > 0 {
		t.Errorf("deleted at some point: %v", bad)
	}
}
