//go:build lab

package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

// run is one unprune invocation, in process, against the lab as its admin.
type run struct {
	Stdout, Stderr string
	Code           int
}

func unprune(t *testing.T, env *labtest.Env, journalDir string, args ...string) run {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--kubeconfig", env.State.Kubeconfig, "--journal-dir", journalDir}, args...)
	code := cli.Execute(context.Background(), "unprune", full,
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	r := run{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	t.Logf("unprune %s → exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, r.Stdout, r.Stderr)
	return r
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
