package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

// addShop adds the app "shop", which declares the given namespaces (listed OutOfSync, shared with
// guestbook, until they are tracked by it).
func (w *world) addShop(declares ...string) {
	app := argocd.Application{Name: "shop", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "shop-ns"}, SyncStatus: "OutOfSync"}
	w.argo.Shared = map[string]bool{}
	for _, ns := range declares {
		r := argocd.Resource{Version: "v1", Kind: "Namespace", Name: ns, Status: "OutOfSync"}
		app.Resources = append(app.Resources, r)
		w.argo.Shared[r.Key()] = true
	}
	w.argo.AddApp(app)
}

func (w *world) move(req MoveRequest) *Change {
	w.t.Helper()
	req.From, req.To = AppName{Name: "guestbook"}, AppName{Name: "shop"}
	run, err := w.engine().PlanMove(context.Background(), req)
	if err != nil {
		w.t.Fatalf("plan: %v", err)
	}
	return run
}

func TestMoveRefusesWhatTheTargetDoesNotDeclare(t *testing.T) {
	w := newWorld(t, "team-a", "team-b")
	w.addShop("team-a")
	run := w.move(MoveRequest{Resources: []ResourceArg{{Kind: "Namespace", Name: "team-a"}, {Kind: "Namespace", Name: "team-b"}}})
	if got := outcomes(run.Planned, nil); got["team-a"] != OutcomePlanned || got["team-b"] != OutcomeRefused {
		t.Fatalf("outcomes %v", got)
	}
	if it := run.Items[1]; it.Reason != string(RefuseNotDeclared) {
		t.Fatalf("reason %s: %s", it.Reason, it.Message)
	}
	if w.patches() != 0 {
		t.Fatal("planning patched")
	}
}

// An object the source app still declares would be taken back at its next sync: refused.
func TestMoveRefusesWhatTheSourceStillDeclares(t *testing.T) {
	w := newWorld(t, "team-a")
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	app.Resources[0].RequiresPruning = false
	w.argo.AddApp(app)
	w.addShop("team-a")
	run := w.move(MoveRequest{All: true})
	if it := run.Items[0]; it.Outcome != OutcomeRefused || it.Reason != string(RefuseStillDeclared) {
		t.Fatalf("outcome %s %s: %s", it.Outcome, it.Reason, it.Message)
	}
}

func TestMoveRefusesAnotherDestination(t *testing.T) {
	w := newWorld(t, "team-a")
	w.addShop("team-a")
	w.argo.AddApp(argocd.Application{Name: "shop", Destination: argocd.Destination{Server: "https://remote.example", Namespace: "x"}})
	w.argo.Remote["https://remote.example"] = clustertest.NewCluster("remote", "https://remote.example")
	_, err := w.engine().PlanMove(context.Background(), MoveRequest{From: AppName{Name: "guestbook"}, To: AppName{Name: "shop"}, All: true})
	if err == nil {
		t.Fatal("a move to an app of another destination was planned")
	}
}

// The whole two-step move: prepare marks the objects, the move rewrites the tracking and takes off
// exactly the marks prepare added, both apps verify, and undo puts everything back.
func TestMovePrepareThenMoveThenUndo(t *testing.T) {
	w := newWorld(t, "team-a", "team-b")
	w.shareClock()
	w.cluster.Update(w.refs["team-b"], func(o *cluster.Object) { o.Annotations[argocd.AnnotationSyncOptions] = "Validate=false" })
	w.addShop() // before the commit: shop declares nothing yet
	e := w.engine()
	prep := w.move(MoveRequest{All: true, Prepare: true})
	prepDone, err := e.Execute(context.Background(), prep, DryRunNone)
	if err != nil || prepDone.Counts()[OutcomeApplied] != 2 {
		t.Fatalf("prepare: %v %v", err, outcomes(prep.Planned, prepDone.Applied))
	}
	if a, b := w.syncOptions("team-a"), w.syncOptions("team-b"); a != "Prune=false,Delete=false" || b != "Validate=false,Prune=false,Delete=false" {
		t.Fatalf("after prepare: %q %q", a, b)
	}
	w.addShop("team-a", "team-b") // the commit landed: shop declares them
	run := w.move(MoveRequest{All: true})
	runDone, err := e.Execute(context.Background(), run, DryRunNone)
	// Each object twice: its tracking, then (after shop's comparison) its marks.
	if err != nil || runDone.Counts()[OutcomeApplied] != 4 {
		t.Fatalf("move: %v %v", err, outcomes(run.Planned, runDone.Applied))
	}
	a := w.cluster.Object(w.refs["team-a"])
	if a.Labels[argocd.DefaultInstanceLabelKey] != "shop" || a.Annotations[argocd.AnnotationTrackingID] != "shop:/Namespace:shop-ns/team-a" {
		t.Fatalf("team-a after the move: %v %v", a.Labels, a.Annotations)
	}
	if _, has := a.Annotations[argocd.AnnotationSyncOptions]; has || w.syncOptions("team-b") != "Validate=false" {
		t.Fatalf("sync options after the move: %q %q", a.Annotations[argocd.AnnotationSyncOptions], w.syncOptions("team-b"))
	}
	verified := e.VerifyChange(context.Background(), run, runDone, time.Second)
	for i, app := range run.Apps {
		if v := verified[i]; v == nil || !v.Verified {
			t.Fatalf("%s: verification %+v", app.Ref(), v)
		}
	}
	u := w.undo(runDone.Journal, w.argo)
	if got := u.Counts()[OutcomeRestored]; got != 4 {
		t.Fatalf("undo restored %d: %v", got, outcomes(u.plan.Planned, u.Applied))
	}
	a = w.cluster.Object(w.refs["team-a"])
	if a.Labels[argocd.DefaultInstanceLabelKey] != "guestbook" || a.Annotations[argocd.AnnotationTrackingID] != "guestbook:/Namespace:default/team-a" ||
		w.syncOptions("team-a") != "Prune=false,Delete=false" {
		t.Fatalf("team-a after undo: %v %v", a.Labels, a.Annotations)
	}
}

func (w *world) syncOptions(ns string) string {
	return w.cluster.Object(w.refs[ns]).Annotations[argocd.AnnotationSyncOptions]
}

// Without a prepare journal the move leaves sync options alone, whoever set them, and says so.
func TestMoveWithoutPrepareLeavesSyncOptions(t *testing.T) {
	w := newWorld(t, "team-a")
	w.cluster.Update(w.refs["team-a"], func(o *cluster.Object) { o.Annotations[argocd.AnnotationSyncOptions] = "Prune=false" })
	w.addShop("team-a")
	run := w.move(MoveRequest{All: true})
	runDone, err := w.engine().Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if w.syncOptions("team-a") != "Prune=false" || len(runDone.Items[0].Plan.Notes) == 0 {
		t.Fatalf("sync options %q, notes %v", w.syncOptions("team-a"), runDone.Items[0].Plan.Notes)
	}
	j, _, err := w.store.Load(runDone.Journal)
	if err != nil || j.Command != journal.CommandMove || j.Strategy != journal.StrategyMove {
		t.Fatalf("journal %v %+v", err, j)
	}
}

// The engine names no flag of its own: requests it cannot carry out are typed for the command line
// to word, and a refusal's hint uses the command line's words.
func TestMoveRequestErrorsAndHintsAreTyped(t *testing.T) {
	w := newWorld(t, "team-a")
	w.addShop("team-a")
	_, err := w.engine().PlanMove(context.Background(), MoveRequest{From: AppName{Name: "guestbook"}, To: AppName{Name: "guestbook"}, All: true})
	var r *RequestError
	if !errors.As(err, &r) || r.Kind != SameApp || strings.Contains(err.Error(), "--") {
		t.Fatalf("move to the same app: %v", err)
	}
	arg, _ := ParseResourceArg("Namespace/team-a")
	_, err = w.engine().PlanDetach(context.Background(), DetachRequest{Apps: []AppName{{Name: "guestbook"}, {Name: "shop"}}, Resources: []ResourceArg{arg}, Strategy: plan.StrategyUntrack})
	if !errors.As(err, &r) || r.Kind != ResourcesForOneApp || strings.Contains(err.Error(), "--") {
		t.Fatalf("resources for two apps: %v", err)
	}
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	app.Resources[0].RequiresPruning = false
	w.argo.AddApp(app)
	run := w.move(MoveRequest{All: true})
	if it := run.Items[0]; it.Reason != string(RefuseStillDeclared) || !strings.HasSuffix(it.Message, "(with "+prepareOption()+" before, so that it cannot prune it meanwhile)") {
		t.Fatalf("still declared: %s %q", it.Reason, it.Message)
	}
}

// prepareWorld is guestbook before the move's commit: it still declares team-a (Synced), and shop
// declares nothing yet.
func prepareWorld(t *testing.T) *world {
	w := newWorld(t, "team-a")
	w.shareClock()
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	app.Resources[0].Status, app.Resources[0].RequiresPruning = "Synced", false
	app.SyncStatus = "Synced"
	w.argo.AddApp(app)
	w.addShop()
	return w
}

// executePrepare plans and runs `move --prepare --all` from guestbook to shop.
func (w *world) executePrepare() (*Change, *Executed) {
	w.t.Helper()
	c := w.move(MoveRequest{All: true, Prepare: true})
	x, err := w.engine().Execute(context.Background(), c, DryRunNone)
	if err != nil {
		w.t.Fatal(err)
	}
	return c, x
}

// A mark that Argo CD's comparison sees — its manifest writes the annotation in a way the plan
// could not tell, say through a generator — fails the check after the marks: the marks are taken
// off again, so no guard is claimed that self-heal would revert.
func TestMovePrepareRollsBackAMarkArgoCDSees(t *testing.T) {
	w := prepareWorld(t)
	patches := 0
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		if patches++; patches == 1 { // the mark, not the rollback
			app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
			app.Resources[0].Status, app.SyncStatus = "OutOfSync", "OutOfSync"
			w.argo.AddApp(app)
		}
		return false, nil
	}
	c, x := w.executePrepare()
	check := stepResult(c, x, StepCheck, 0)
	if check.Outcome != OutcomeFailed || !strings.Contains(check.Mismatch.String(), "is OutOfSync (it was Synced)") {
		t.Fatalf("check %+v", check)
	}
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
	if got := w.syncOptions("team-a"); got != "" {
		t.Fatalf("sync-options after the rollback: %q", got)
	}
}

// A mark self-heal wrote over before the comparison the check judged: the comparison shows no
// difference any more, yet the mark is gone. The check reads the objects again and fails.
func TestMovePrepareFailsWhenTheMarkIsGone(t *testing.T) {
	w := prepareWorld(t)
	patches := 0
	w.cluster.AfterPatch = func(_ int, _ cluster.Ref, stored *cluster.Object) bool {
		if patches++; patches != 1 { // Argo CD's apply of the manifest, right after the mark
			return false
		}
		delete(stored.Annotations, argocd.AnnotationSyncOptions)
		return true
	}
	c, x := w.executePrepare()
	check := stepResult(c, x, StepCheck, 0)
	if check.Outcome != OutcomeFailed || !strings.Contains(check.Mismatch.String(), "the marks did not hold") ||
		!strings.Contains(check.Mismatch.String(), "no longer has Prune=false") {
		t.Fatalf("check %+v", check)
	}
	// Nothing is left to take off: the rollback sends nothing over what Argo CD wrote.
	if !x.RolledBack() || w.patches() != 1 {
		t.Fatalf("rollback %+v (%v), %d patches", x.Rollback, x.RollbackErr, w.patches())
	}
	if got := w.syncOptions("team-a"); got != "" {
		t.Fatalf("sync-options: %q", got)
	}
}
