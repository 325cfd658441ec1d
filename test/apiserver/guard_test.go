//go:build lab

package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/lab/labtest"
)

// TestGuardPolicyCompiles: the API server compiles the policy's CEL (a server-side dry run persists
// nothing), whatever characters the break-glass group name holds.
func TestGuardPolicyCompiles(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, group := range []string{"", "platform-admins", `O'Neil "ops" \ admins`, "cn=Smith\\, John"} {
		r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "guard", "policy", "--kinds=namespaces,crds,pvs,cm,statefulsets.apps",
			"--name=namespaces/team-a", "--name=crds/widgets.example.com", "--name=configmaps/team-a/settings", "--name=statefulsets/db/postgres",
			"--break-glass-group="+group, "--apply", "--dry-run=server")
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

// TestGuardPolicyOfAnyKind applies a policy of kinds beyond namespaces, crds and pvs (named as
// kubectl names them, looked up in discovery) for real, and lets the API server enforce it: a
// ConfigMap named with its namespace is kept, its namesake in another namespace is not; a labelled
// Secret is kept, an unlabelled one is not. Not parallel: the policy is cluster-wide, and it is
// gone, and no longer enforced, before the parallel tests run. Then --merge adds to it.
func TestGuardPolicyOfAnyKind(t *testing.T) {
	env := labtest.Get(t)
	ctx := labtest.Context(t)
	for _, ns := range []string{"anykind-a", "anykind-b"} {
		env.CreateNamespace(t, ns)
		if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, labels := range map[string]map[string]string{"labelled": {"unprune.dev/protected": "true"}, "plain": nil} {
		if _, err := env.Kube.CoreV1().Secrets("anykind-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dryRunDelete := func(ns, kind, name string) error {
		opts := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
		if kind == "Secret" {
			return env.Kube.CoreV1().Secrets(ns).Delete(ctx, name, opts)
		}
		return env.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, opts)
	}

	r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "guard", "policy", "--kinds=namespaces,cm,secrets",
		"--name=configmaps/anykind-a/settings", "--apply", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("guard policy --apply: exit %d", r.Code)
	}
	t.Cleanup(func() {
		admission := env.Kube.AdmissionregistrationV1()
		_ = admission.ValidatingAdmissionPolicyBindings().Delete(context.Background(), guard.PolicyName, metav1.DeleteOptions{})
		_ = admission.ValidatingAdmissionPolicies().Delete(context.Background(), guard.PolicyName, metav1.DeleteOptions{})
		labtest.Eventually(t, 30*time.Second, "the policy to be enforced no more", func() (bool, string) {
			err := dryRunDelete("anykind-a", "Secret", "labelled")
			return err == nil, fmt.Sprintf("dry-run DELETE: %v", err)
		})
	})
	labtest.Eventually(t, 30*time.Second, "the policy to be enforced", func() (bool, string) {
		err := dryRunDelete("anykind-a", "ConfigMap", "settings")
		return apierrors.IsForbidden(err), fmt.Sprintf("dry-run DELETE: %v", err)
	})
	for _, c := range []struct {
		ns, kind, name string
		kept           bool
	}{
		{"anykind-a", "ConfigMap", "settings", true},
		{"anykind-b", "ConfigMap", "settings", false},
		{"anykind-a", "Secret", "labelled", true},
		{"anykind-a", "Secret", "plain", false},
	} {
		err := dryRunDelete(c.ns, c.kind, c.name)
		switch {
		case c.kept && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is protected from deletion by ValidatingAdmissionPolicy "+guard.PolicyName)):
			t.Errorf("%s %s/%s: DELETE %v; want it denied by the policy", c.kind, c.ns, c.name, err)
		case !c.kept && err != nil:
			t.Errorf("%s %s/%s: DELETE %v; want it allowed", c.kind, c.ns, c.name, err)
		}
	}

	// --merge adds a Namespace by name and keeps what the policy protected: the ConfigMap by name,
	// Secrets by label.
	r = unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "guard", "policy", "--merge", "--name=namespaces/anykind-b", "--apply", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("guard policy --merge --apply: exit %d", r.Code)
	}
	labtest.Eventually(t, 30*time.Second, "the merged policy to be enforced", func() (bool, string) {
		err := env.Kube.CoreV1().Namespaces().Delete(ctx, "anykind-b", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), fmt.Sprintf("dry-run DELETE of Namespace anykind-b: %v", err)
	})
	for _, c := range []struct{ ns, kind, name string }{{"anykind-a", "ConfigMap", "settings"}, {"anykind-a", "Secret", "labelled"}} {
		if err := dryRunDelete(c.ns, c.kind, c.name); !apierrors.IsForbidden(err) {
			t.Errorf("after --merge, %s %s/%s: DELETE %v; want it still denied", c.kind, c.ns, c.name, err)
		}
	}
}
