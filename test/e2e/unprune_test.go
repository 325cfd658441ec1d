//go:build lab

package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// unprune runs the tool in process against the lab as its admin.
func unprune(t *testing.T, env *labtest.Env, journalDir string, args ...string) cmdtest.Result {
	t.Helper()
	return cmdtest.Run(t, env.State.Kubeconfig, journalDir, args...)
}

// metadataOf returns a namespace's labels, annotations and UID.
func metadataOf(t *testing.T, env *labtest.Env, name string) (map[string]string, map[string]string, string) {
	t.Helper()
	ns, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace %s: %v", name, err)
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase != "Active" {
		t.Fatalf("namespace %s is %s, deletionTimestamp %v", name, ns.Status.Phase, ns.DeletionTimestamp)
	}
	return copyMap(ns.Labels), copyMap(ns.Annotations), string(ns.UID)
}

// restoredExactly checks that namespace name is still the object with uid and carries exactly
// labels and annotations: what an undo must leave. An empty uid checks only the keys.
func restoredExactly(t *testing.T, env *labtest.Env, name, uid string, labels, annotations map[string]string) {
	t.Helper()
	l, a, after := metadataOf(t, env, name)
	if uid != "" && after != uid {
		t.Fatalf("namespace %s recreated: uid %s → %s", name, uid, after)
	}
	sameExcept(t, "labels after undo", labels, l, nil, nil)
	sameExcept(t, "annotations after undo", annotations, a, nil, nil)
}

func copyMap(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sameExcept checks that after equals before except for the keys in removed (which must be gone)
// and the keys in added (which must hold the given values).
func sameExcept(t *testing.T, what string, before, after map[string]string, removed []string, added map[string]string) {
	t.Helper()
	want := copyMap(before)
	for _, k := range removed {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s was expected on the object before detaching", what, k)
		}
		delete(want, k)
	}
	for k, v := range added {
		want[k] = v
	}
	for k, v := range want {
		if got, ok := after[k]; !ok || got != v {
			t.Errorf("%s %s: got %q (present %t), want %q", what, k, got, ok, v)
		}
	}
	for k, v := range after {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s=%q appeared or was not removed", what, k, v)
		}
	}
}
