//go:build lab

// Package apiserver tests unprune against the lab's real kube-apiserver, without an Argo CD
// controller: Applications and their .status are seeded explicitly, so every outcome here is decided
// by the API server itself — resourceVersion preconditions, dry-run, RBAC — and can be compared
// exactly (golden files use fixed names: no controller adopts anything in this lab).
package apiserver

import (
	"encoding/json"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

const argocdNamespace = "argocd"

func TestMain(m *testing.M) {
	os.Exit(labtest.MainSeeded(m, argocdNamespace, "v3.6.1", map[string]string{"application.resourceTrackingMethod": "annotation+label"}))
}

func unprune(t *testing.T, kubeconfig, journals string, args ...string) cmdtest.Result {
	t.Helper()
	return cmdtest.Run(t, kubeconfig, journals, args...)
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

func seed(t *testing.T, env *labtest.Env, app string, namespaces ...string) labtest.Seeded {
	t.Helper()
	return env.Seed(t, argocdNamespace, app, namespaces...)
}

func seedRow(t *testing.T, env *labtest.Env, app, ns string) {
	t.Helper()
	env.SeedRow(t, argocdNamespace, app, ns)
}
