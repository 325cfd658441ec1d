//go:build lab

package apiserver

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

// TestGuardPolicyCompiles: the API server compiles the policy's CEL (a server-side dry run persists
// nothing), whatever characters the break-glass group name holds.
func TestGuardPolicyCompiles(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, group := range []string{"", "platform-admins", `O'Neil "ops" \ admins`, "cn=Smith\\, John"} {
		r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "guard", "policy", "--kinds=namespaces,crds,pvs",
			"--name=namespaces/team-a", "--break-glass-group="+group, "--apply", "--dry-run=server")
		if r.Code != cli.ExitFindings || strings.Count(r.Stdout, "accepted by a server-side dry run") != 2 {
			t.Errorf("group %q: exit %d; want both objects accepted by the dry run", group, r.Code)
		}
	}
}

// TestGuardProtectIsUndoable: guard protect and guard confirm are journaled like detach, and undo
// restores the labels and annotations exactly.
func TestGuardProtectIsUndoable(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	seed(t, env, "protectme", "protect-a")
	if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), "protect-a", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/sync-options":"ServerSideApply=true"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := namespace(t, env, "protect-a")
	journals := labtest.TempDir(t)
	for _, verb := range []string{"protect", "confirm"} {
		if r := unprune(t, env.State.Kubeconfig, journals, "guard", verb, "ns/protect-a", "--yes"); r.Code != cli.ExitOK {
			t.Fatalf("guard %s exit %d", verb, r.Code)
		}
	}
	u := namespace(t, env, "protect-a")
	if u.GetLabels()["unprune.dev/protected"] != "true" || u.GetAnnotations()["argocd.argoproj.io/sync-options"] != "ServerSideApply=true,Prune=confirm" {
		t.Fatalf("after guard: labels %v, sync-options %q", u.GetLabels(), u.GetAnnotations()["argocd.argoproj.io/sync-options"])
	}
	// Undo both journals; they touch different keys, so their order does not matter.
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 2 {
		t.Fatalf("want two journals, got %v", paths)
	}
	for _, p := range paths {
		if r := unprune(t, env.State.Kubeconfig, journals, "undo", p, "--yes"); r.Code != cli.ExitOK {
			t.Fatalf("undo %s exit %d", p, r.Code)
		}
	}
	u = namespace(t, env, "protect-a")
	if !reflect.DeepEqual(u.GetLabels(), before.GetLabels()) || !reflect.DeepEqual(u.GetAnnotations(), before.GetAnnotations()) {
		t.Errorf("after undo: labels %v annotations %v; want %v %v", u.GetLabels(), u.GetAnnotations(), before.GetLabels(), before.GetAnnotations())
	}
}
