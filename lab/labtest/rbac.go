package labtest

import (
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ReaderRole is a ClusterRole that may read everything and do nothing else.
const ReaderRole = "unprune-test-reader"

// EnsureReaderRole creates ReaderRole unless it exists.
func (e *Env) EnsureReaderRole(t testing.TB) {
	t.Helper()
	role := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": ReaderRole},
		"rules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"get", "list", "watch"}}},
	}
	if err := e.Create(Context(t), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// ReaderKubeconfig returns a kubeconfig for a real user of the lab's own cluster who may read
// everything but neither delete nor impersonate: ServiceAccount default/<name> bound to ReaderRole,
// authenticated by its own token. Unlike --as, requests it makes are the API server's to judge
// with that user's rights alone (an impersonating client cannot impersonate again).
func (e *Env) ReaderKubeconfig(t testing.TB, name string) string {
	t.Helper()
	e.EnsureReaderRole(t)
	path := filepath.Join(TempDir(t), name+".kubeconfig")
	if err := e.State.ServiceAccountKubeconfig(Context(t), "default", name, ReaderRole, path); err != nil {
		t.Fatal(err)
	}
	return path
}
