//go:build lab

// Package apiserver tests unprune against the lab's real kube-apiserver, without an Argo CD
// controller: Applications and their .status are seeded explicitly, so every outcome here is decided
// by the API server itself — resourceVersion preconditions, dry-run, RBAC — and can be compared
// exactly (golden files use fixed names: no controller adopts anything in this lab).
package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

const argocdNamespace = "argocd"

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, func(env *labtest.Env) error {
		ctx := context.Background()
		if err := env.State.InstallCRDs(ctx, env.Root, "v3.6.1"); err != nil {
			return err
		}
		for _, obj := range []map[string]any{
			{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": argocdNamespace}},
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
				"name": "argocd-cm", "namespace": argocdNamespace,
				"labels": map[string]any{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": "argocd-cm"}},
				"data": map[string]any{"application.resourceTrackingMethod": "annotation+label"}},
		} {
			if err := env.Create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	}))
}

// seeded is an Application whose status lists namespaces as requiring pruning, and those namespaces
// carrying the tracking metadata Argo CD (annotation+label mode) would have put there.
type seeded struct {
	App        string
	Namespaces []string
}

// seed creates an Application named app with the given namespaces requiring pruning.
func seed(t *testing.T, env *labtest.Env, app string, namespaces ...string) seeded {
	t.Helper()
	ctx := labtest.Context(t)
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
	application := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app, "namespace": argocdNamespace},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "default"},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": false}},
		},
		"status": map[string]any{
			"sync":      map[string]any{"status": "OutOfSync", "revision": "0123456789abcdef0123456789abcdef01234567"},
			"resources": rows,
		},
	}
	if err := env.Create(ctx, application); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(labtest.GVRApplication).Namespace(argocdNamespace).Delete(context.Background(), app, metav1.DeleteOptions{})
	})
	return seeded{App: app, Namespaces: namespaces}
}

// run is one unprune invocation, in process.
type run struct {
	Stdout, Stderr string
	Code           int
}

func unprune(t *testing.T, kubeconfig, journals string, args ...string) run {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--kubeconfig", kubeconfig, "--journal-dir", journals}, args...)
	code := cli.Execute(context.Background(), "unprune", full, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	r := run{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	t.Logf("unprune %s → exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, r.Stdout, r.Stderr)
	return r
}

// namespace reads a namespace.
func namespace(t *testing.T, env *labtest.Env, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := env.Dynamic.Resource(labtest.GVRNamespace).Get(labtest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seedRow adds a requires-pruning row for a namespace that does not exist to app's status.
func seedRow(t *testing.T, env *labtest.Env, app, ns string) {
	t.Helper()
	ri := env.Dynamic.Resource(labtest.GVRApplication).Namespace(argocdNamespace)
	u, err := ri.Get(labtest.Context(t), app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	rows = append(rows, map[string]any{"version": "v1", "kind": "Namespace", "name": ns, "status": "OutOfSync", "requiresPruning": true})
	if err := unstructured.SetNestedSlice(u.Object, rows, "status", "resources"); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Update(labtest.Context(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
