package engine

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/plan"
)

// undone is an undo's plan and what Restore did with it.
type undone struct {
	*Executed
	plan *Change
}

// undo plans and applies the undo of the journal at path, reading Applications from argo (nil:
// undo must not ask Argo CD at all).
func (w *world) undo(path string, argo cluster.ArgoCD) undone {
	w.t.Helper()
	rec, err := w.store.Open(path)
	if err != nil {
		w.t.Fatal(err)
	}
	argoOf := func(context.Context, *journal.Journal) (cluster.ArgoCD, error) {
		if argo == nil {
			w.t.Errorf("undo of %s asked for Argo CD, which it does not need", path)
			return nil, os.ErrInvalid
		}
		return argo, nil
	}
	e := w.engine()
	u, err := e.withUndo(w, argoOf).PlanUndo(context.Background(), rec)
	if err != nil {
		w.t.Fatal(err)
	}
	x, err := e.Execute(context.Background(), u, DryRunNone)
	if err != nil {
		w.t.Fatal(err)
	}
	return undone{Executed: x, plan: u}
}

// detached detaches every namespace of the world and returns the journal's path.
func (w *world) detached(strategy plan.Strategy) string {
	w.t.Helper()
	run := w.detach(DetachRequest{All: true, Strategy: strategy})
	runDone, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil {
		w.t.Fatal(err)
	}
	return runDone.Journal
}

func (w *world) editJournal(path string, pairs ...string) {
	w.t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatal(err)
	}
	edited := strings.NewReplacer(pairs...).Replace(string(raw))
	if edited == string(raw) {
		w.t.Fatalf("the edit changed nothing in:\n%s", raw)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) patches() int {
	n := 0
	for _, c := range w.cluster.Calls() {
		if c.Verb == "patch" {
			n++
		}
	}
	return n
}

// emptyArgoCD is the world's installation with no Application in it.
func (w *world) emptyArgoCD() *clustertest.ArgoCD {
	return clustertest.NewArgoCD("argocd", w.cluster, w.settings)
}

// TestUndoRestoresTrackingOfAnExistingApp: the app is in the journal's installation, as recorded:
// its tracking comes back.
func TestUndoRestoresTrackingOfAnExistingApp(t *testing.T) {
	w := newWorld(t, "team-a")
	path := w.detached(plan.StrategyUntrack)
	u := w.undo(path, w.argo)
	if it := u.Items[0]; it.Outcome != OutcomeRestored || !w.tracked("team-a") {
		t.Fatalf("%s %s: %s; tracked %v", it.Outcome, it.Reason, it.Message, w.tracked("team-a"))
	}
}

// TestUndoRefusesTrackingForAMissingApp: the app was deleted since the detach; undo refuses the
// entry and sends no patch.
func TestUndoRefusesTrackingForAMissingApp(t *testing.T) {
	w := newWorld(t, "team-a")
	path := w.detached(plan.StrategyUntrack)
	before := w.patches()
	u := w.undo(path, w.emptyArgoCD())
	it := u.Items[0]
	if it.Outcome != OutcomeRefused || it.Reason != string(RefuseAppNotFound) || !strings.Contains(it.Message, "Application argocd/guestbook does not exist") ||
		!strings.Contains(it.Message, "recreate the app first") {
		t.Fatalf("%s %s: %s", it.Outcome, it.Reason, it.Message)
	}
	if w.patches() != before || w.tracked("team-a") {
		t.Fatalf("undo patched the object (%d patches before, %d after)", before, w.patches())
	}
	j, _, _ := w.store.Load(path)
	if j.Entries[0].State == journal.StateUndone {
		t.Fatal("the refused entry is marked undone")
	}
}

// TestUndoRefusesAConsistentlyEditedJournal: a journal whose app name is replaced everywhere (the
// tracking values too) passes every check of the entry against itself; the app it names does not
// exist, so nothing is restored.
func TestUndoRefusesAConsistentlyEditedJournal(t *testing.T) {
	w := newWorld(t, "team-a")
	path := w.detached(plan.StrategyUntrack)
	w.editJournal(path, "guestbook", "ghost")
	before := w.patches()
	u := w.undo(path, w.argo)
	if it := u.Items[0]; it.Outcome != OutcomeRefused || it.Reason != string(RefuseAppNotFound) {
		t.Fatalf("%s %s: %s", it.Outcome, it.Reason, it.Message)
	}
	if w.patches() != before || w.tracked("team-a") {
		t.Fatal("undo wrote tracking naming an app that does not exist")
	}
}

// TestUndoRefusesAnInstanceTheAppIsNotTrackedBy: the app exists in Argo CD's namespace, so Argo CD
// tracks it as its bare name; a journal edited to restore it as <namespace>_<name> is refused.
func TestUndoRefusesAnInstanceTheAppIsNotTrackedBy(t *testing.T) {
	w := newWorld(t, "team-a")
	path := w.detached(plan.StrategyUntrack)
	w.editJournal(path, `"instance":"guestbook"`, `"instance":"team_guestbook"`,
		`"before":"guestbook"`, `"before":"team_guestbook"`, `"guestbook:/Namespace`, `"team_guestbook:/Namespace`)
	u := w.undo(path, w.argo)
	if it := u.Items[0]; it.Outcome != OutcomeRefused || it.Reason != string(RefuseInstanceMismatch) || !strings.Contains(it.Message, `"team_guestbook"`) {
		t.Fatalf("%s %s: %s", it.Outcome, it.Reason, it.Message)
	}
	if w.tracked("team-a") {
		t.Fatal("undo wrote tracking for an instance the app is not tracked by")
	}
}

// TestUndoRestoresAnAppOutsideArgoCDsNamespace: an app in another namespace is tracked as
// <namespace>_<name>, and its tracking comes back.
func TestUndoRestoresAnAppOutsideArgoCDsNamespace(t *testing.T) {
	w := newWorld(t)
	ref := w.cluster.Add("", "Namespace", "", "team-b", map[string]string{argocd.DefaultInstanceLabelKey: "team_guestbook"},
		map[string]string{argocd.AnnotationTrackingID: "team_guestbook:/Namespace:default/team-b"})
	w.argo.AddApp(argocd.Application{Namespace: "team", Name: "guestbook", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "default"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "team-b", RequiresPruning: true}}})
	run := w.detach(DetachRequest{Apps: []AppName{{Namespace: "team", Name: "guestbook"}}, All: true})
	runDone, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil || runDone.Counts()[OutcomeApplied] != 1 {
		t.Fatalf("detach: %v %v", err, outcomes(run.Planned, runDone.Applied))
	}
	u := w.undo(runDone.Journal, w.argo)
	if it := u.Items[0]; it.Outcome != OutcomeRestored || w.cluster.Object(ref).Labels[argocd.DefaultInstanceLabelKey] != "team_guestbook" {
		t.Fatalf("%s %s: %s", it.Outcome, it.Reason, it.Message)
	}
}

// TestUndoRefusesWhenTheAppCannotBeRead: a failure to read the app is no licence to restore its
// tracking blindly.
func TestUndoRefusesWhenTheAppCannotBeRead(t *testing.T) {
	w := newWorld(t, "team-a")
	path := w.detached(plan.StrategyUntrack)
	rec, err := w.store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e := w.engine()
	forbidden := func(context.Context, *journal.Journal) (cluster.ArgoCD, error) {
		return nil, &cluster.ArgoCDDeniedError{Msg: "permission denied"}
	}
	u, err := e.withUndo(w, forbidden).PlanUndo(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	restored := w.execute(e, u, DryRunNone)
	if it := restored.Items[0]; it.Outcome != OutcomeRefused || it.Reason != string(RefuseAppUnverified) || !strings.Contains(it.Message, "permission denied") || !strings.Contains(it.Message, "does not exist, too") ||
		!strings.Contains(it.Message, option.ArgoCDContext.String()) {
		t.Fatalf("%s %s: %s", it.Outcome, it.Reason, it.Message)
	}
	if w.tracked("team-a") {
		t.Fatal("undo restored tracking it could not check")
	}
}

// TestUndoOfKeepAndGuardNeedsNoArgoCD: keep adds sync options and guard a protection label; their
// undo writes no tracking and never asks Argo CD (w.undo fails the test if it does).
func TestUndoOfKeepAndGuardNeedsNoArgoCD(t *testing.T) {
	w := newWorld(t, "kept", "guarded")
	arg, _ := ParseResourceArg("Namespace/kept")
	run := w.detach(DetachRequest{Resources: []ResourceArg{arg}, Strategy: plan.StrategyKeep})
	runDone, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if u := w.undo(runDone.Journal, nil); u.Items[0].Outcome != OutcomeRestored || w.cluster.Object(w.refs["kept"]).Annotations[argocd.AnnotationSyncOptions] != "" {
		t.Fatalf("keep undo: %s %s", u.Items[0].Outcome, u.Items[0].Message)
	}

	e := &Engine{Journals: w.store, ToolVersion: "test"}
	garg, _ := ParseResourceArg("Namespace/guarded")
	grun, err := e.PlanObjects(context.Background(), w.cluster, ObjectsRequest{Command: guard.Command, Strategy: "protect", Resources: []ResourceArg{garg}, Build: guard.ProtectPlan})
	if err != nil {
		t.Fatal(err)
	}
	grunDone, err := e.Execute(context.Background(), grun, DryRunNone)
	if err != nil || grunDone.Counts()[OutcomeApplied] != 1 {
		t.Fatalf("guard: %v %v", err, outcomes(grun.Planned, grunDone.Applied))
	}
	if u := w.undo(grunDone.Journal, nil); u.Items[0].Outcome != OutcomeRestored {
		t.Fatalf("guard undo: %s %s", u.Items[0].Outcome, u.Items[0].Message)
	}
}

// argoOf reaches the world's Argo CD, for undo.
func (w *world) argoOf(context.Context, *journal.Journal) (cluster.ArgoCD, error) { return w.argo, nil }
