package labtest

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MainSeeded is Main for test binaries that seed Applications themselves: Argo CD's CRDs of version
// and an argocd-cm with data in namespace, and no Argo CD process.
func MainSeeded(m *testing.M, namespace, version string, data map[string]string) int {
	return Main(m, func(env *Env) error { return env.SeedArgoCD(context.Background(), namespace, version, data) })
}

// SeedArgoCD prepares a cluster for tests that seed Applications themselves: Argo CD's CRDs of
// version, its namespace and an argocd-cm with data. No Argo CD process runs.
func (env *Env) SeedArgoCD(ctx context.Context, namespace, version string, data map[string]string) error {
	if err := env.State.InstallCRDs(ctx, env.Root, version); err != nil {
		return err
	}
	cm := map[string]any{}
	for k, v := range data {
		cm[k] = v
	}
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
			"name": "argocd-cm", "namespace": namespace,
			"labels": map[string]any{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": "argocd-cm"}},
			"data": cm},
	} {
		if err := env.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// Seeded is an Application whose status lists namespaces as requiring pruning, and those namespaces
// carrying the tracking metadata Argo CD (annotation+label mode) would have put there.
type Seeded struct {
	App        string
	Namespaces []string
}

// Seed creates an Application named app in argocdNamespace whose status lists the namespaces,
// created here, as requiring pruning. No controller is involved: the status is written directly.
func (env *Env) Seed(t testing.TB, argocdNamespace, app string, namespaces ...string) Seeded {
	t.Helper()
	ctx := Context(t)
	var rows []any
	for _, ns := range namespaces {
		lastApplied := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"%[1]s:/Namespace:default/%[2]s"},"labels":{"app.kubernetes.io/instance":"%[1]s","team":"storage"},"name":"%[2]s"}}`+"\n", app, ns)
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name": ns,
			"labels": map[string]any{
				"app.kubernetes.io/instance": app, "app.kubernetes.io/part-of": "platform", "team": "storage",
			},
			"annotations": map[string]any{
				"argocd.argoproj.io/tracking-id":                   fmt.Sprintf("%s:/Namespace:default/%s", app, ns),
				"kubectl.kubernetes.io/last-applied-configuration": lastApplied,
				"note": "multi\nline ünïcode ✓",
			},
		}}
		if err := env.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.DeleteNamespace(ns) })
		rows = append(rows, map[string]any{"version": "v1", "kind": "Namespace", "name": ns, "status": "OutOfSync", "requiresPruning": true})
	}
	env.SeedApplication(t, argocdNamespace, app, map[string]any{"automated": map[string]any{"prune": false}}, rows)
	return Seeded{App: app, Namespaces: namespaces}
}

// SeedRow adds a requires-pruning row for namespace ns (which need not exist) to a seeded app's status.
func (env *Env) SeedRow(t testing.TB, argocdNamespace, app, ns string) {
	t.Helper()
	ri := env.Dynamic.Resource(GVRApplication).Namespace(argocdNamespace)
	u, err := ri.Get(Context(t), app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	rows = append(rows, map[string]any{"version": "v1", "kind": "Namespace", "name": ns, "status": "OutOfSync", "requiresPruning": true})
	if err := unstructured.SetNestedSlice(u.Object, rows, "status", "resources"); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Update(Context(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// SeedApplication creates an Application with the given syncPolicy whose status lists rows (each
// {group, version, kind, namespace, name, status, requiresPruning}); it is deleted after the test.
func (env *Env) SeedApplication(t testing.TB, argocdNamespace, app string, syncPolicy map[string]any, rows []any) {
	t.Helper()
	application := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app, "namespace": argocdNamespace},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "default"},
			"syncPolicy":  syncPolicy,
		},
		"status": map[string]any{
			"sync":      map[string]any{"status": "OutOfSync", "revision": "0123456789abcdef0123456789abcdef01234567"},
			"resources": rows,
		},
	}
	if err := env.Create(Context(t), application); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(GVRApplication).Namespace(argocdNamespace).Delete(context.Background(), app, metav1.DeleteOptions{})
	})
}
