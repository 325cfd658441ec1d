//go:build lab

package apiserver

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

func row(group, kind, namespace, name string, requiresPruning bool) map[string]any {
	version := "v1"
	r := map[string]any{"version": version, "kind": kind, "name": name, "status": "Synced"}
	if group != "" {
		r["group"] = group
	}
	if namespace != "" {
		r["namespace"] = namespace
	}
	if requiresPruning {
		r["status"], r["requiresPruning"] = "OutOfSync", true
	}
	return r
}

// TestGoldenAudit pins audit's rows on a lab with several apps: a manual app with a requires-pruning
// Namespace holding objects, a requires-pruning CRD with custom resources and an ordinary ConfigMap;
// an auto-pruning app managing a ClusterRole and a PVC (future risk) and a ConfigMap (not listed);
// an app whose options soften pruning, with one object guarded by Prune=confirm. Not parallel: audit
// lists every Application of the lab.
func TestGoldenAudit(t *testing.T) {
	env := labtest.Get(t)
	ctx := labtest.Context(t)
	create := func(obj map[string]any) {
		t.Helper()
		if err := env.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(name, namespace string, extra ...map[string]any) map[string]any {
		m := map[string]any{"name": name}
		if namespace != "" {
			m["namespace"] = namespace
		}
		for _, e := range extra {
			for k, v := range e {
				m[k] = v
			}
		}
		return m
	}

	// The namespace, with two ConfigMaps of its own.
	create(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta("audit-team", "")})
	t.Cleanup(func() { env.DeleteNamespace("audit-team") })
	for _, n := range []string{"one", "two"} {
		create(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(n, "audit-team")})
	}
	// A CRD with three custom resources.
	crd := "gadgets.audit.example.com"
	create(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta(crd, ""),
		"spec": map[string]any{"group": "audit.example.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}})
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).Delete(ctx, crd, metav1.DeleteOptions{})
		// Tests after this one count namespaces' contents over every served kind: a kind still in
		// discovery while its CRD goes away cannot be listed and makes their counts partial.
		labtest.Eventually(t, 60*time.Second, "the CRD to leave discovery", func() (bool, string) {
			_, err := env.Kube.Discovery().ServerResourcesForGroupVersion("audit.example.com/v1")
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	labtest.Eventually(t, 30*time.Second, "the CRD to be served", func() (bool, string) {
		err := env.Create(ctx, map[string]any{"apiVersion": "audit.example.com/v1", "kind": "Gadget", "metadata": meta("g1", "audit-team")})
		return err == nil, fmt.Sprint(err)
	})
	for _, n := range []string{"g2", "g3"} {
		create(map[string]any{"apiVersion": "audit.example.com/v1", "kind": "Gadget", "metadata": meta(n, "default")})
	}
	create(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("audit-leftover", "default")})
	create(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta("audit-role", "")})
	create(map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("audit-data", "default"),
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}})
	create(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta("audit-soft", "",
		map[string]any{"annotations": map[string]any{"argocd.argoproj.io/sync-options": "Prune=confirm"}})})
	t.Cleanup(func() { env.DeleteNamespace("audit-soft") })

	env.WaitDefaultObjects(t, "audit-team", "audit-soft", "kube-public")
	env.SeedApplication(t, argocdNamespace, "audit-manual", map[string]any{"automated": map[string]any{"prune": false}}, []any{
		row("", "Namespace", "", "audit-team", true),
		row("apiextensions.k8s.io", "CustomResourceDefinition", "", crd, true),
		row("", "ConfigMap", "default", "audit-leftover", true),
	})
	env.SeedApplication(t, argocdNamespace, "audit-auto", map[string]any{"automated": map[string]any{"prune": true}}, []any{
		row("rbac.authorization.k8s.io", "ClusterRole", "", "audit-role", false),
		row("", "PersistentVolumeClaim", "default", "audit-data", false),
		row("", "ConfigMap", "default", "audit-leftover", false),
	})
	env.SeedApplication(t, argocdNamespace, "audit-softened", map[string]any{"syncOptions": []any{"Prune=false"}}, []any{
		row("", "Namespace", "", "audit-soft", true),
		row("", "Namespace", "", "kube-public", true),
	})

	journals := labtest.TempDir(t)
	for _, c := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"audit-table", []string{"audit"}, cli.ExitOK},
		{"audit-fail-on-high-json", []string{"audit", "--fail-on=high", "-o", "json"}, cli.ExitFindings},
		{"audit-probe-wide", []string{"audit", "--probe", "-o", "wide"}, cli.ExitOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := unprune(t, env.State.Kubeconfig, journals, c.args...)
			if r.Code != c.wantCode {
				t.Errorf("exit %d, want %d", r.Code, c.wantCode)
			}
			golden(t, c.name, "# stdout\n"+r.Stdout+"# stderr\n"+r.Stderr, env, journals)
		})
	}
}
