//go:build lab

package apiserver

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/lab/labtest"
)

// TestServerDryRunChangesNothing: --dry-run=server sends real patches with dryRun=All; the API server
// accepts them, and the object's resourceVersion proves nothing was persisted. No journal is written.
func TestServerDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "dryrun", "dryrun-a", "dryrun-b")
	before := map[string]string{}
	for _, ns := range s.Namespaces {
		before[ns] = namespace(t, env, ns).GetResourceVersion()
	}
	journals := labtest.TempDir(t)
	r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--dry-run=server")
	if r.Code != cli.ExitFindings {
		t.Fatalf("exit %d, want %d", r.Code, cli.ExitFindings)
	}
	if strings.Count(r.Stdout, "DryRunAccepted") != 2 {
		t.Errorf("want both patches accepted by the dry run:\n%s", r.Stdout)
	}
	for _, ns := range s.Namespaces {
		u := namespace(t, env, ns)
		if u.GetResourceVersion() != before[ns] {
			t.Errorf("%s: resourceVersion %s → %s: the dry run persisted a change", ns, before[ns], u.GetResourceVersion())
		}
		if u.GetLabels()["app.kubernetes.io/instance"] != s.App {
			t.Errorf("%s: tracking label gone after a dry run", ns)
		}
	}
	if entries, _ := os.ReadDir(journals); len(entries) != 0 {
		t.Errorf("a dry run wrote journals: %v", entries)
	}
}

// TestConcurrentWriteIsNotClobbered: a write between plan and patch makes the API server refuse the
// stale patch (409); unprune re-reads, re-plans and patches again, keeping the other writer's change.
// When the other writer hands the object to another app, the re-plan refuses and nothing of theirs
// is touched.
func TestConcurrentWriteIsNotClobbered(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "racer", "race-keep", "race-moved")
	e, store := labEngine(t, env)
	run, err := e.PlanDetach(labtest.Context(t), engine.DetachRequest{Apps: []engine.AppName{{Name: s.App}}, All: true, Strategy: plan.StrategyUntrack})
	if err != nil {
		t.Fatal(err)
	}
	// The other writer strikes after the plans were made.
	other := map[string]string{
		"race-keep":  `{"metadata":{"labels":{"someone":"else"}}}`,
		"race-moved": `{"metadata":{"labels":{"app.kubernetes.io/instance":"thief"},"annotations":{"argocd.argoproj.io/tracking-id":"thief:/Namespace:default/race-moved"}}}`,
	}
	for ns, p := range other {
		if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), ns, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := e.Execute(labtest.Context(t), run, engine.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]engine.ItemResult{}
	for i, it := range run.Items {
		items[it.Ref.Name] = done.Items[i]
	}
	if keep := items["race-keep"]; keep.Outcome != engine.OutcomeApplied || keep.Attempts != 2 {
		t.Errorf("race-keep: %s after %d attempts (%s); want applied after a conflict and a retry", keep.Outcome, keep.Attempts, keep.Message)
	}
	u := namespace(t, env, "race-keep")
	if u.GetLabels()["someone"] != "else" {
		t.Errorf("race-keep: the other writer's label was clobbered: %v", u.GetLabels())
	}
	if _, tracked := u.GetLabels()["app.kubernetes.io/instance"]; tracked {
		t.Errorf("race-keep: still tracked: %v", u.GetLabels())
	}
	if moved := items["race-moved"]; moved.Outcome != engine.OutcomeRefused || moved.Reason != string(plan.RefuseOtherOwner) {
		t.Errorf("race-moved: %s %s; want a refusal because another app owns it now", moved.Outcome, moved.Reason)
	}
	u = namespace(t, env, "race-moved")
	if u.GetLabels()["app.kubernetes.io/instance"] != "thief" || u.GetAnnotations()["argocd.argoproj.io/tracking-id"] != "thief:/Namespace:default/race-moved" {
		t.Errorf("race-moved: the other app's tracking was touched: %v %v", u.GetLabels(), u.GetAnnotations())
	}
	got, _, err := store.Load(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]journal.State{}
	for _, e := range got.Entries {
		states[e.Object.Name] = e.State
	}
	if states["race-keep"] != journal.StateApplied || states["race-moved"] != journal.StateSkipped {
		t.Errorf("journal: %v; want race-keep applied and race-moved skipped", states)
	}
}

// TestUserWithoutPatchRights: a user who may read but not patch gets a clear error, nothing changes,
// and the journal shows nothing was applied.
func TestUserWithoutPatchRights(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "readonly", "readonly-a")
	ctx := labtest.Context(t)
	for _, obj := range []map[string]any{
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "unprune-test-reader"},
			"rules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"get", "list", "watch"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "unprune-test-reader"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "unprune-test-reader"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}}},
	} {
		if err := env.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	before := namespace(t, env, "readonly-a").GetResourceVersion()
	journals := labtest.TempDir(t)
	// The RBAC binding takes effect through the authorizer's cache: poll until reads work.
	labtest.Eventually(t, 30*time.Second, "the reader binding to take effect", func() (bool, string) {
		r := unprune(t, env.State.Kubeconfig, journals, "--as=reader", "scan")
		return r.Code == cli.ExitFindings, r.Stderr
	})
	r := unprune(t, env.State.Kubeconfig, journals, "--as=reader", "detach", s.App, "--all", "--yes", "--wait=false")
	if r.Code != cli.ExitFailure {
		t.Fatalf("exit %d, want %d", r.Code, cli.ExitFailure)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "forbidden: your user may not patch") {
		t.Errorf("the error does not say the user may not patch:\n%s%s", r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout+r.Stderr, "admission") {
		t.Errorf("an RBAC refusal is called an admission denial:\n%s%s", r.Stdout, r.Stderr)
	}
	if after := namespace(t, env, "readonly-a").GetResourceVersion(); after != before {
		t.Errorf("the namespace changed: resourceVersion %s → %s", before, after)
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 {
		t.Fatalf("want one journal, got %v", paths)
	}
	j, _, err := journal.NewStore(journals, nil).Load(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range j.Entries {
		if e.State != journal.StateFailed || len(e.Changes) != 0 || !strings.Contains(e.Error, "forbidden") {
			t.Errorf("journal entry %s: state %s, changes %v, error %q; want failed, nothing changed, forbidden", e.Object, e.State, e.Changes, e.Error)
		}
	}
}

// TestUndoRestoresByteForByte: detach (with --scrub-last-applied, the most invasive option) and undo
// leave every label and annotation exactly as it was.
func TestUndoRestoresByteForByte(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "roundtrip", "roundtrip-a", "roundtrip-b")
	type meta struct{ labels, annotations map[string]string }
	before := map[string]meta{}
	for _, ns := range s.Namespaces {
		u := namespace(t, env, ns)
		before[ns] = meta{u.GetLabels(), u.GetAnnotations()}
	}
	journals := labtest.TempDir(t)
	r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes", "--wait=false", "--scrub-last-applied")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	for _, ns := range s.Namespaces {
		u := namespace(t, env, ns)
		if _, ok := u.GetAnnotations()["argocd.argoproj.io/tracking-id"]; ok {
			t.Fatalf("%s still tracked after detach", ns)
		}
		if strings.Contains(u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"], "tracking-id") {
			t.Fatalf("%s: last-applied-configuration not scrubbed", ns)
		}
	}
	// Preview first: nothing changes.
	if r = unprune(t, env.State.Kubeconfig, journals, "undo", "--latest"); r.Code != cli.ExitFindings {
		t.Fatalf("undo preview exit %d", r.Code)
	}
	if r = unprune(t, env.State.Kubeconfig, journals, "undo", "--latest", "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d", r.Code)
	}
	for _, ns := range s.Namespaces {
		u := namespace(t, env, ns)
		if !reflect.DeepEqual(u.GetLabels(), before[ns].labels) {
			t.Errorf("%s labels: %s, want %s", ns, mustJSON(t, u.GetLabels()), mustJSON(t, before[ns].labels))
		}
		if !reflect.DeepEqual(u.GetAnnotations(), before[ns].annotations) {
			t.Errorf("%s annotations: %s, want %s", ns, mustJSON(t, u.GetAnnotations()), mustJSON(t, before[ns].annotations))
		}
	}
	// A second undo has nothing left to do.
	if r = unprune(t, env.State.Kubeconfig, journals, "undo", "--latest", "--yes"); r.Code != cli.ExitOK || !strings.Contains(r.Stdout, "undone already") {
		t.Errorf("second undo: exit %d\n%s", r.Code, r.Stdout)
	}
}

// TestUndoGuards: undo refuses a key someone changed since, and an object recreated under the same name.
func TestUndoGuards(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "guarded", "guarded-changed", "guarded-recreated")
	journals := labtest.TempDir(t)
	if r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes", "--wait=false"); r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	// Someone re-labels one namespace for another app; the other is deleted and recreated.
	if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), "guarded-changed", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app.kubernetes.io/instance":"newowner"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	recreate(t, env, "guarded-recreated")

	// One entry is partly restored (its unchanged key), the other refused: a partial undo is exit 4.
	r := unprune(t, env.State.Kubeconfig, journals, "undo", "--latest", "--yes")
	if r.Code != cli.ExitPartial {
		t.Fatalf("undo exit %d, want %d (partial)", r.Code, cli.ExitPartial)
	}
	if !strings.Contains(r.Stdout, "was recreated") || !strings.Contains(r.Stdout, `is now "newowner"`) {
		t.Errorf("undo does not explain both refusals:\n%s", r.Stdout)
	}
	if got := namespace(t, env, "guarded-changed").GetLabels()["app.kubernetes.io/instance"]; got != "newowner" {
		t.Errorf("undo overwrote a label set since: %q", got)
	}
	// The annotation of guarded-changed still held what unprune wrote (absent): it was restored.
	if got := namespace(t, env, "guarded-changed").GetAnnotations()["argocd.argoproj.io/tracking-id"]; got != "guarded:/Namespace:default/guarded-changed" {
		t.Errorf("the unchanged key was not restored: tracking-id %q", got)
	}
	if _, ok := namespace(t, env, "guarded-recreated").GetAnnotations()["argocd.argoproj.io/tracking-id"]; ok {
		t.Errorf("undo wrote tracking onto a recreated object")
	}
}

// recreate deletes a namespace, waits until it is gone (kube-controller-manager finalizes it) and
// creates it again: same name, new UID.
func recreate(t *testing.T, env *labtest.Env, name string) {
	t.Helper()
	ctx := labtest.Context(t)
	if err := env.Dynamic.Resource(labtest.GVRNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	labtest.Eventually(t, 60*time.Second, name+" to be deleted", func() (bool, string) {
		_, err := env.Dynamic.Resource(labtest.GVRNamespace).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still there"
	})
	if err := env.Create(context.Background(), map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}); err != nil {
		t.Fatal(err)
	}
}

// TestMixedReleasedAndTracked: one namespace of the app was released by hand, the other not, but the
// app's status (no controller refreshes it here) still lists both as requiring pruning. The released
// one carries no tracking naming the app under any method, so there is nothing left to remove: it is
// reported released already and never written to, while the other is released — a rerun after an
// interruption meets exactly this while Argo CD has not compared the app.
func TestMixedReleasedAndTracked(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "mixed", "mixed-a-released", "mixed-b-tracked")
	if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), "mixed-a-released", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app.kubernetes.io/instance":null},"annotations":{"argocd.argoproj.io/tracking-id":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	released := namespace(t, env, "mixed-a-released").GetResourceVersion()
	journals := labtest.TempDir(t)
	for _, c := range []struct {
		args        []string
		wantCode    int
		wantTracked string
	}{
		{[]string{"--dry-run=server"}, cli.ExitFindings, "DryRunAccepted"},
		{[]string{"--yes", "--wait=false"}, cli.ExitOK, "Applied"},
	} {
		r := unprune(t, env.State.Kubeconfig, journals, append([]string{"detach", s.App, "--all"}, c.args...)...)
		if r.Code != c.wantCode {
			t.Fatalf("%v: exit %d, want %d", c.args, r.Code, c.wantCode)
		}
		lines := map[string]string{}
		for _, l := range strings.Split(r.Stdout, "\n") {
			if f := strings.Fields(l); len(f) >= 2 {
				lines[f[0]] = f[1]
			}
		}
		if lines["Namespace/mixed-a-released"] != "Unchanged" || lines["Namespace/mixed-b-tracked"] != c.wantTracked {
			t.Errorf("%v: outcomes %v; want the released one Unchanged, the tracked one %s", c.args, lines, c.wantTracked)
		}
		if !strings.Contains(r.Stdout, "already released") || !strings.Contains(r.Stdout, "by hand") {
			t.Errorf("%v: the report does not say the first was released already, by hand:\n%s", c.args, r.Stdout)
		}
	}
	if got := namespace(t, env, "mixed-a-released").GetResourceVersion(); got != released {
		t.Errorf("the released namespace was written to: resourceVersion %s → %s", released, got)
	}
	if _, tracked := namespace(t, env, "mixed-b-tracked").GetLabels()["app.kubernetes.io/instance"]; tracked {
		t.Errorf("the tracked namespace was not released")
	}
}

// TestOtherClusterIsRefused: an app deploying to another cluster keeps its objects there; without a
// way to reach that cluster, detach fails saying how to reach it instead of touching same-named
// objects here, and scan warns.
func TestOtherClusterIsRefused(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "remote", "remote-a")
	ri := env.Dynamic.Resource(labtest.GVRApplication).Namespace(argocdNamespace)
	if _, err := ri.Patch(labtest.Context(t), s.App, types.MergePatchType,
		[]byte(`{"spec":{"destination":{"server":"https://127.0.0.2:6443"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := namespace(t, env, "remote-a").GetResourceVersion()
	journals := labtest.TempDir(t)
	r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes")
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "deploys to cluster https://127.0.0.2:6443") || !strings.Contains(r.Stderr, "--cluster-context") {
		t.Errorf("detach: exit %d, want %d with an explanation", r.Code, cli.ExitFailure)
	}
	if after := namespace(t, env, "remote-a").GetResourceVersion(); after != before {
		t.Errorf("the local namespace of the same name was changed")
	}
	r = unprune(t, env.State.Kubeconfig, journals, "scan")
	if !strings.Contains(r.Stderr, "Application argocd/remote deploys to cluster https://127.0.0.2:6443") {
		t.Errorf("scan does not warn about the remote app")
	}
}
