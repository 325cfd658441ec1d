package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// renameWorld is an app "guestbook", Synced, with automated prune and the resources finalizer,
// tracking two namespaces; the fake controller gives a new app the same rows (the same desired
// state), Synced where it tracks the objects.
func renameWorld(t *testing.T) *world {
	w := newWorld(t, "team-a", "team-b")
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	w.argo.Shared = map[string]bool{}
	for i := range app.Resources {
		app.Resources[i].RequiresPruning, app.Resources[i].Status = false, "Synced"
		w.argo.Shared[app.Resources[i].Key()] = true
	}
	app.SyncStatus, app.Automated, app.AutoPrune = "Synced", true, true
	w.argo.AddApp(app)
	obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	meta := obj["metadata"].(map[string]any)
	meta["finalizers"] = []any{"resources-finalizer.argocd.argoproj.io"}
	meta["annotations"] = map[string]any{argocd.AnnotationRefresh: "normal", "team": "storage"}
	obj["spec"].(map[string]any)["source"] = map[string]any{"repoURL": "https://git.example/apps", "path": "guestbook"}
	w.argo.SetApplicationObject(obj)
	w.argo.OnCreate = func(created *argocd.Application) {
		created.Resources = append([]argocd.Resource(nil), app.Resources...)
		created.SyncStatus = "OutOfSync"
	}
	w.shareClock()
	return w
}

// rename plans guestbook's rename to shop and runs it.
func rename(t *testing.T, e *Engine, mode DryRun) (*Change, *Executed) {
	t.Helper()
	c, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Namespace: "argocd", Name: "guestbook"}, NewName: "shop", KeepReleaseName: true})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Execute(context.Background(), c, mode)
	if err != nil {
		t.Fatal(err)
	}
	return c, x
}

// stepResult is the result of the i-th step of kind in the change.
func stepResult(c *Change, x *Executed, kind StepKind, i int) StepResult {
	for k, s := range c.Steps {
		if s.Kind == kind {
			if i == 0 {
				return x.Steps[k]
			}
			i--
		}
	}
	panic("no such step")
}

// appWriteVerbs are the Application writes served, as "verb namespace/name".
func appWriteVerbs(w *world) []string {
	var verbs []string
	for _, wr := range w.argo.AppWrites() {
		verbs = append(verbs, strings.Join(strings.Fields(wr)[:2], " "))
	}
	return verbs
}

func TestRenameOrderAndOutcome(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	c, x := rename(t, e, DryRunNone)
	if x.Stopped >= 0 || !x.Complete() {
		t.Fatalf("stopped at %d: %+v", x.Stopped, x.Steps)
	}
	want := []string{"create argocd/shop", "patch argocd/guestbook", "delete argocd/guestbook", "patch argocd/shop"}
	if got := appWriteVerbs(w); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	// The old app's automation was off and its finalizer gone before any tracking moved.
	if off := w.argo.AppWrites()[1]; !strings.Contains(off, `"finalizers":null`) || !strings.Contains(off, `"syncPolicy":null`) {
		t.Fatalf("old app patch %s", off)
	}
	for i, s := range c.Steps {
		if s.Kind == StepCheck && x.Steps[i].Outcome != OutcomePassed {
			t.Fatalf("check %d: %+v", i, x.Steps[i])
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		o := w.cluster.Object(w.refs[ns])
		if o.Labels[argocd.DefaultInstanceLabelKey] != "shop" || o.Annotations[argocd.AnnotationTrackingID] != "shop:/Namespace:default/"+ns {
			t.Fatalf("%s: %v %v", ns, o.Labels, o.Annotations)
		}
	}
	shop, err := w.argo.ApplicationObject(context.Background(), "argocd", "shop")
	if err != nil {
		t.Fatal(err)
	}
	meta := shop["metadata"].(map[string]any)
	if f := finalizersOf(shop); !slices.Equal(f, []string{"resources-finalizer.argocd.argoproj.io"}) {
		t.Errorf("new app finalizers %v", f)
	}
	if a := meta["annotations"].(map[string]any); a["team"] != "storage" || a[argocd.AnnotationRefresh] != nil || a[AnnotationRenameJournal] != nil {
		t.Errorf("new app annotations %v", a)
	}
	if p := syncPolicyOf(shop).(map[string]any); p["automated"] == nil {
		t.Errorf("new app sync policy %v", p)
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "guestbook"); err == nil {
		t.Error("the old app still exists")
	}
	if v := e.VerifyChange(context.Background(), c, x, time.Second)[1]; v == nil || !v.Verified {
		t.Fatalf("verification %+v", v)
	}
	j, _, err := w.store.Load(x.Journal)
	if err != nil || j.Rename == nil || j.Command != journal.CommandRename || len(j.Entries) != 2 {
		t.Fatalf("journal %v %+v", err, j)
	}
}

// The new app is created marked with the journal, and only its last step takes the mark off.
func TestRenameMarksTheNewAppUntilDone(t *testing.T) {
	w := renameWorld(t)
	_, x := rename(t, w.engine(), DryRunNone)
	created := w.argo.AppWrites()
	if len(created) == 0 || !strings.HasPrefix(created[0], "create argocd/shop") {
		t.Fatalf("writes %q", created)
	}
	j, _, _ := w.store.Load(x.Journal)
	last := created[len(created)-1]
	if !strings.Contains(last, AnnotationRenameJournal) || !strings.Contains(last, `"`+AnnotationRenameJournal+`":null`) {
		t.Fatalf("the last step must take the mark off: %s", last)
	}
	if j.ID == "" {
		t.Fatal("journal without id")
	}
}

func TestRenameRefusals(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	req := RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"}
	obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	obj["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"kind": "ApplicationSet", "name": "teams"}}
	w.argo.SetApplicationObject(obj)
	var refused *RefusedError
	if _, err := e.PlanRename(context.Background(), req); !errors.As(err, &refused) || refused.Code != RefuseGenerated {
		t.Fatalf("ApplicationSet: %v", err)
	}
	w = renameWorld(t)
	e = w.engine()
	obj, _ = w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	obj["metadata"].(map[string]any)["labels"] = map[string]any{argocd.DefaultInstanceLabelKey: "apps"}
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{argocd.AnnotationTrackingID: "apps:argoproj.io/Application:argocd/guestbook"}
	w.argo.SetApplicationObject(obj)
	if _, err := e.PlanRename(context.Background(), req); !errors.As(err, &refused) || refused.Code != RefuseTrackedByParent {
		t.Fatalf("app of apps: %v", err)
	}
	w = renameWorld(t)
	e = w.engine()
	app, _ := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
	app.SyncStatus = "OutOfSync"
	w.argo.AddApp(app)
	if _, err := e.PlanRename(context.Background(), req); !errors.As(err, &refused) || refused.Code != RefuseNotSynced {
		t.Fatalf("OutOfSync: %v", err)
	}
	req.Force = true
	if _, err := e.PlanRename(context.Background(), req); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if len(w.argo.AppWrites()) != 0 {
		t.Fatalf("planning wrote %v", w.argo.AppWrites())
	}
}

// renameGuestbook renames guestbook to shop and returns its journal.
func renameGuestbook(t *testing.T, w *world) string {
	t.Helper()
	_, x := rename(t, w.engine(), DryRunNone)
	if !x.Complete() {
		t.Fatalf("rename: %+v", x.Steps)
	}
	return x.Journal
}

// undoJournal plans and runs the undo of the journal at path.
func undoOf(t *testing.T, w *world, path string) (*Change, *Executed) {
	t.Helper()
	rec, err := w.store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e := w.engine().withUndo(w, w.argoOf)
	c, err := e.PlanUndo(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	return c, w.execute(e, c, DryRunNone)
}

// setSyncing plays the controller: an operation of app starts running, or ends. It may run on
// another goroutine than the test's.
func setSyncing(t *testing.T, w *world, app string, on bool) {
	a, err := w.argo.GetApplication(context.Background(), "argocd", app)
	if err != nil {
		t.Error(err)
		return
	}
	a.Operation, a.OperationPhase = on, "Running"
	w.argo.AddApp(a)
}

// wantGuestbookAsBefore checks the old app came back with its finalizer and automation, the new one
// is gone, and every resource is tracked by the old app again.
func wantGuestbookAsBefore(t *testing.T, w *world) {
	t.Helper()
	for _, ns := range []string{"team-a", "team-b"} {
		if o := w.cluster.Object(w.refs[ns]); o.Labels[argocd.DefaultInstanceLabelKey] != "guestbook" || o.Annotations[argocd.AnnotationTrackingID] != "guestbook:/Namespace:default/"+ns {
			t.Fatalf("%s: %v %v", ns, o.Labels, o.Annotations)
		}
	}
	old, err := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	if err != nil {
		t.Fatal(err)
	}
	if f := finalizersOf(old); !slices.Equal(f, []string{"resources-finalizer.argocd.argoproj.io"}) || syncPolicyOf(old).(map[string]any)["automated"] == nil {
		t.Fatalf("old app back with finalizers %v policy %v", f, syncPolicyOf(old))
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil {
		t.Fatal("the new app is still there")
	}
}

// Undo of a rename: the old app comes back (automation and finalizers only after its comparison
// declares the resources again), the tracking moves back, the new app goes (finalizers off before
// the delete).
func TestRenameUndo(t *testing.T) {
	w := renameWorld(t)
	path := renameGuestbook(t, w)
	c, x := undoOf(t, w, path)
	if x.Stopped >= 0 || x.Counts()[OutcomeRestored] != 2 {
		t.Fatalf("undo stopped at %d: %+v, %v", x.Stopped, x.Steps, outcomes(c.Planned, x.Applied))
	}
	wantGuestbookAsBefore(t, w)
	// The old app is created without the refresh request its copy carried: a stale request on a new
	// object is one the check's own request cannot renew.
	for _, s := range c.Steps {
		if s.Kind == StepCreate {
			if a := stringMap(s.Object, "annotations"); a[argocd.AnnotationRefresh] != "" || a["team"] != "storage" {
				t.Fatalf("the old app created with annotations %v", a)
			}
		}
	}
	// The policy came back only after a check of the old app.
	for i, s := range c.Steps {
		if len(s.Lets) > 0 && (i == 0 || c.Steps[i-1].Kind != StepCheck || x.Steps[i-1].Outcome != OutcomePassed) {
			t.Fatalf("step %d lets %v delete without a passed check before it", i, s.Lets)
		}
	}
}

// A rename's rendering check: a new app whose manifests depend on the app's name lists other
// resources. The rename stops before anything else changes, puts back what it did (the new app is
// deleted, finalizers off) and leaves the old app, its automation and every tracking as they were.
func TestRenameStopsWhenTheNewAppRendersOtherObjects(t *testing.T) {
	w := renameWorld(t)
	w.argo.OnCreate = func(created *argocd.Application) {
		created.Resources = []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "team-a-shop", Status: "OutOfSync", Health: "Missing"},
			{Version: "v1", Kind: "Namespace", Name: "team-b-shop", Status: "OutOfSync", Health: "Missing"}}
	}
	c, x := rename(t, w.engine(), DryRunNone)
	check := stepResult(c, x, StepCheck, 0)
	if !x.CheckFailed() || check.Mismatch == nil || !strings.Contains(check.Mismatch.String(), "Namespace/team-a-shop") ||
		!strings.Contains(check.Mismatch.String(), "does not list Namespace/team-a") {
		t.Fatalf("check %+v", check)
	}
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
	if got, want := appWriteVerbs(w), []string{"create argocd/shop", "patch argocd/shop", "delete argocd/shop"}; !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if w.patches() != 0 {
		t.Fatalf("%d object patches", w.patches())
	}
	old, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	if f := finalizersOf(old); len(f) != 1 || !automated(old) {
		t.Fatalf("the old app changed: finalizers %v policy %v", f, syncPolicyOf(old))
	}
}

// After the tracking moved, the new app's comparison shows a resource otherwise than the old
// app's: nothing may let it prune; the journal is undone — tracking back, the new app deleted, the
// old one's automation and finalizers back after its own comparison.
func TestRenameRollsBackWhenTheComparisonDiffers(t *testing.T) {
	w := renameWorld(t)
	w.argo.Shared = nil
	w.cluster.BeforePatch = func(n int, ref cluster.Ref, _ *cluster.Object) (bool, error) {
		if shop, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil && shop.Resources[0].Status == "Synced" {
			shop.Resources[0].Status = "OutOfSync"
			w.argo.AddApp(shop)
		}
		return false, nil
	}
	c, x := rename(t, w.engine(), DryRunNone)
	// OutOfSync is what the new app shows until the controller has seen the rewrite: the check
	// waits for every comparison of its timeout before it fails.
	if check := stepResult(c, x, StepCheck, 1); check.Outcome != OutcomeFailed || !strings.Contains(check.Mismatch.String(), "is OutOfSync (it was Synced)") ||
		!strings.Contains(check.Message, "in every comparison for 2m0s") {
		t.Fatalf("second check %+v", check)
	}
	if stepResult(c, x, StepDelete, 0).Outcome != OutcomeNotAttempted {
		t.Fatal("the old app was deleted after a failed check")
	}
	w.cluster.BeforePatch = nil
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
	wantGuestbookAsBefore(t, w)
}

// A step that lets an app delete needs a check of that app right before it: a change without one
// is refused before anything is sent.
func TestExecuteRefusesADeletingStepWithoutACheck(t *testing.T) {
	w := newWorld(t)
	app := AppName{Namespace: "argocd", Name: "guestbook"}
	sent := false
	c := &Change{Planned: &Planned{}, Steps: []*Step{
		{Kind: StepCheck, App: AppName{Namespace: "argocd", Name: "other"}, Expect: func(argocd.Application) *Mismatch { return nil }},
		{Kind: StepUpdate, App: app, Lets: []AppName{app}, write: func(context.Context, bool) error { sent = true; return nil }},
	}}
	if _, err := w.engine().Execute(context.Background(), c, DryRunNone); err == nil || sent {
		t.Fatalf("executed: %v, sent %v", err, sent)
	}
}

// Helm's release name is the app's name unless set: the new app gets the old name pinned on every
// Helm source that has none (and says so), so that its chart renders the same objects.
func TestRenamePinsHelmReleaseName(t *testing.T) {
	for _, keep := range []bool{true, false} {
		w := renameWorld(t)
		obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
		obj["status"] = map[string]any{"sourceType": "Helm"}
		w.argo.SetApplicationObject(obj)
		c, err := w.engine().PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop", KeepReleaseName: keep})
		if err != nil {
			t.Fatal(err)
		}
		src := c.Steps[0].Object["spec"].(map[string]any)["source"].(map[string]any)
		helm, _ := src["helm"].(map[string]any)
		pinned := helm["releaseName"] == "guestbook" && strings.Contains(c.Steps[0].Why, `helm.releaseName "guestbook"`)
		if pinned != keep {
			t.Fatalf("keep %v: source %v, step %q", keep, src, c.Steps[0].Why)
		}
	}
}

// The undo of a rename never takes resources from a new app that the rename did not create: one
// without the journal's mark while the old app still exists.
func TestRenameUndoLeavesAnotherNewAppAlone(t *testing.T) {
	w := renameWorld(t)
	_, x := rename(t, w.engine(), DryRunClient)
	_ = x
	c, err := w.engine().PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	// The run stops after its journal is written and the new app is created: someone else's app
	// of that name is there (the create fails), and an undo of the journal must leave it.
	if _, err := w.argo.CreateApplication(context.Background(), map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": "shop"}, "spec": map[string]any{}}, false); err != nil {
		t.Fatal(err)
	}
	done := w.execute(w.engine(), c, DryRunNone)
	if stepResult(c, done, StepCreate, 0).Outcome != OutcomeFailed || done.Journal == "" {
		t.Fatalf("create %+v", done.Steps)
	}
	rec, err := w.store.Open(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	var refused *RefusedError
	if _, err := w.engine().withUndo(w, w.argoOf).PlanUndo(context.Background(), rec); !errors.As(err, &refused) || refused.Code != RefuseNotRenamed {
		t.Fatalf("undo: %v", err)
	}
}

// An interrupted rename (Ctrl-C while the tracking moves) deletes nothing and leaves a journal whose
// undo puts everything back: the old app, its automation and finalizers, every tracking.
func TestInterruptedRenameUndoes(t *testing.T) {
	w := renameWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	w.cluster.BeforePatch = func(n int, ref cluster.Ref, _ *cluster.Object) (bool, error) {
		cancel()
		return false, nil
	}
	e := w.engine()
	e.Workers = 1
	c, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.Execute(ctx, c, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if !x.Interrupted || stepResult(c, x, StepDelete, 0).Outcome == OutcomeApplied {
		t.Fatalf("interrupted %v, steps %+v", x.Interrupted, x.Steps)
	}
	w.cluster.BeforePatch = nil
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "guestbook"); err != nil {
		t.Fatalf("the old app was deleted while the rename lay half-done: %v", err)
	}
	_, u := undoOf(t, w, x.Journal)
	if u.Stopped >= 0 {
		t.Fatalf("undo stopped: %+v", u.Steps)
	}
	wantGuestbookAsBefore(t, w)
}

// The controller writes the old app's status while the tracking moves: the delete, conditional on
// the resourceVersion, is sent again after checking the fresh copy — and never when a finalizer or
// the automation came back meanwhile. The failed delete puts the rename back: with the finalizer
// back, all of it; with the automation back, the undo is refused (the rename's skip-reconcile mark
// keeps Argo CD from comparing the app, so nothing can check what handing it its resources back
// would do), and nothing is deleted.
func TestRenameDeleteRechecksTheOldApp(t *testing.T) {
	for name, write := range map[string]string{
		"a status write":       `{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`,
		"a finalizer again":    `{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}`,
		"automated sync again": `{"spec":{"syncPolicy":{"automated":{"prune":true}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := renameWorld(t)
			written := false
			w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
				if !written {
					written = true
					if _, err := w.argo.PatchApplication(context.Background(), "argocd", "guestbook", []byte(write), false); err != nil {
						t.Error(err)
					}
				}
				return false, nil
			}
			c, x := rename(t, w.engine(), DryRunNone)
			_, oldErr := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
			if name == "a status write" {
				if !x.Complete() || oldErr == nil {
					t.Fatalf("not renamed: %+v", x.Steps)
				}
				return
			}
			if stepResult(c, x, StepDelete, 0).Outcome != OutcomeFailed || oldErr != nil {
				t.Fatalf("deleted an app whose finalizer or automation came back: %+v", x.Steps)
			}
			w.cluster.BeforePatch = nil
			if name == "a finalizer again" {
				if !x.RolledBack() {
					t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
				}
				wantGuestbookAsBefore(t, w)
				return
			}
			var refused *RefusedError
			if !errors.As(x.RollbackErr, &refused) || refused.Code != RefuseUnchecked || !strings.Contains(refused.Error(), argocd.AnnotationSkipReconcile) {
				t.Fatalf("rollback: %v", x.RollbackErr)
			}
		})
	}
}

// An app created (or patched) without automation must not be left with an empty sync policy: the
// controller normalizes it away with a blind merge patch that can land after the policy is given back.
func TestWithoutAutomationLeavesNoEmptyPolicy(t *testing.T) {
	app := func(policy map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"finalizers": []any{"f"}}, "spec": map[string]any{"syncPolicy": policy}}
	}
	got := withoutAutomation(app(map[string]any{"automated": map[string]any{"prune": true}, "syncOptions": []any{}}))
	if _, has := got["spec"].(map[string]any)["syncPolicy"]; has || got["metadata"].(map[string]any)["finalizers"] != nil {
		t.Errorf("empty policy or finalizers left: %v", got)
	}
	got = withoutAutomation(app(map[string]any{"automated": map[string]any{}, "syncOptions": []any{"CreateNamespace=true"}}))
	if p := got["spec"].(map[string]any)["syncPolicy"].(map[string]any); p["automated"] != nil || len(p["syncOptions"].([]any)) != 1 {
		t.Errorf("policy %v", p)
	}
	if off := string(automationOff(app(map[string]any{"automated": map[string]any{}}), "7", nil)); !strings.Contains(off, `"syncPolicy":null`) {
		t.Errorf("patch %s", off)
	}
	if off := string(automationOff(app(map[string]any{"automated": map[string]any{}, "retry": map[string]any{"limit": 2}}), "7", nil)); !strings.Contains(off, `"automated":null`) {
		t.Errorf("patch %s", off)
	}
}

// Between the plan and the switch-off, the controller writes the old app's status: the switch-off is
// sent again at the fresh version. A change of its spec meanwhile stops the rename before any
// tracking moves, and the new app is taken away again.
func TestRenameSwitchOffRechecksTheOldApp(t *testing.T) {
	for name, write := range map[string]string{
		"a status write": `{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`,
		"a spec change":  `{"spec":{"project":"other"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := renameWorld(t)
			e := w.engine()
			c, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.argo.PatchApplication(context.Background(), "argocd", "guestbook", []byte(write), false); err != nil {
				t.Fatal(err)
			}
			x := w.execute(e, c, DryRunNone)
			if name == "a status write" {
				if !x.Complete() {
					t.Fatalf("not renamed: %+v", x.Steps)
				}
				return
			}
			if stepResult(c, x, StepUpdate, 0).Outcome != OutcomeFailed || stepResult(c, x, StepPatch, 0).Outcome != OutcomeNotAttempted || w.patches() != 0 {
				t.Fatalf("went on after the old app's spec changed: %+v, %d object patches", x.Steps, w.patches())
			}
		})
	}
}

// A server dry run of a rename returns each write's outcome and leaves the plan as it was: nothing
// persists, and the plan can still be applied.
func TestRenameServerDryRunReturnsStepOutcomes(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	c, dry := rename(t, e, DryRunServer)
	if stepResult(c, dry, StepCreate, 0).Outcome != OutcomeDryRunAccepted || stepResult(c, dry, StepUpdate, 0).Outcome != OutcomeDryRunAccepted ||
		stepResult(c, dry, StepUpdate, 1).Outcome != OutcomeUnchanged || stepResult(c, dry, StepCheck, 0).Outcome != OutcomeUnchanged ||
		dry.Mode != ModeServerDryRun || dry.Counts()[OutcomeDryRunAccepted] != 2 {
		t.Fatalf("dry run: mode %s, steps %+v, objects %v", dry.Mode, dry.Steps, dry.Counts())
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil {
		t.Fatal("a dry run created the new app")
	}
	if c.Counts()[OutcomePlanned] != 2 {
		t.Fatalf("the dry run changed the plan: %v", outcomes(c.Planned, nil))
	}
	if x := w.execute(e, c, DryRunNone); !x.Complete() {
		t.Fatalf("rename after the dry run: %+v", x.Steps)
	}
}

// TestRenameServerDryRunAfterAStatusWrite: the controller writes the old app's status during a
// server-side dry run, so the delete's precondition fails and the app is read again. That fresh read
// still has the finalizers and automation the dry-run patch only pretended to remove: the dry run
// must not read them as having come back (the lab's CI run of 2026-12-02 caught it).
func TestRenameServerDryRunAfterAStatusWrite(t *testing.T) {
	w := renameWorld(t)
	written := false
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		if !written {
			written = true
			if _, err := w.argo.PatchApplication(context.Background(), "argocd", "guestbook", []byte(`{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`), false); err != nil {
				t.Error(err)
			}
		}
		return false, nil
	}
	c, dry := rename(t, w.engine(), DryRunServer)
	if !written {
		t.Fatal("the status write never ran")
	}
	if r := stepResult(c, dry, StepDelete, 0); r.Outcome != OutcomeDryRunAccepted {
		t.Fatalf("dry-run delete after a status write: %+v", r)
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "guestbook"); err != nil {
		t.Fatalf("a dry run deleted the old app: %v", err)
	}
}

// TestSettleWaitsForASync: a sync an app began before its automation was switched off would write
// its tracking back over what the rename (or its undo) writes; settle waits for it, and gives up
// with a clear error when it does not end.
func TestSettleWaitsForASync(t *testing.T) {
	w := renameWorld(t)
	renameGuestbook(t, w)
	syncing := func(on bool) { setSyncing(t, w, "shop", on) }
	syncing(true)
	shop := AppName{Namespace: "argocd", Name: "shop"}
	if err := settle(context.Background(), w.argo, shop, 30*time.Millisecond, time.Millisecond); err == nil || !strings.Contains(err.Error(), "operation running (Running)") {
		t.Fatalf("a sync that does not end: %v", err)
	}
	// The controller's sync ends once the wait has been seen polling for it.
	polled := pollWatcher(w.argo, "shop")
	go func() {
		<-polled.waiting
		syncing(false)
	}()
	if err := settle(context.Background(), polled, shop, 10*time.Second, time.Millisecond); err != nil {
		t.Fatalf("a sync that ends: %v", err)
	}
}

// polledWhileSyncing is the installation, closing waiting once one app has been read with its
// operation running several times in a row: whoever reads it is polling, waiting for the sync.
type polledWhileSyncing struct {
	cluster.ArgoCD
	app     string
	reads   int
	once    sync.Once
	waiting chan struct{}
}

// pollsBeforeEnd is how many reads of a syncing app show a wait: more than any step reads an app
// once on its way.
const pollsBeforeEnd = 5

func pollWatcher(argo cluster.ArgoCD, app string) *polledWhileSyncing {
	return &polledWhileSyncing{ArgoCD: argo, app: app, waiting: make(chan struct{})}
}

func (p *polledWhileSyncing) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	app, err := p.ArgoCD.GetApplication(ctx, namespace, name)
	if err == nil && name == p.app {
		if p.reads++; !app.Operation {
			p.reads = 0
		}
		if p.reads >= pollsBeforeEnd {
			p.once.Do(func() { close(p.waiting) })
		}
	}
	return app, err
}

// TestRenameWaitsForASyncTheOldAppBegan: a sync the old app began after the plan would write its
// tracking back over the rewrites; the rename rewrites nothing until it has ended.
func TestRenameWaitsForASyncTheOldAppBegan(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	c, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	syncing := func(on bool) { setSyncing(t, w, "guestbook", on) }
	syncing(true)
	// The controller's sync ends once the rename has been seen waiting for it; what the tracking
	// says then is what the rename did while the sync ran.
	polled := pollWatcher(w.argo, "guestbook")
	e.ArgoCD = polled
	rewrittenEarly := make(chan bool, 1)
	go func() {
		<-polled.waiting
		rewrittenEarly <- w.cluster.Object(w.refs["team-a"]).Labels[argocd.DefaultInstanceLabelKey] != "guestbook"
		syncing(false)
	}()
	if x := w.execute(e, c, DryRunNone); !x.Complete() {
		t.Fatalf("rename: %+v", x.Steps)
	}
	select {
	case early := <-rewrittenEarly:
		if early {
			t.Error("tracking was rewritten while the old app's sync ran")
		}
	default:
		t.Fatal("the rename ended without waiting for the old app's sync")
	}
	if o := w.cluster.Object(w.refs["team-a"]); o.Labels[argocd.DefaultInstanceLabelKey] != "shop" {
		t.Errorf("after the sync ended: %v", o.Labels)
	}
}

// laggingController is Argo CD's controller whose live-state cache has not yet seen the tracking
// rewrites: the first lag comparisons of app started after the first object patch show every row
// OutOfSync (the old tracking diffed against the new), and extra, when set, lists as well.
type laggingController struct {
	cluster.ArgoCD
	w        *world
	app      string
	lag      int
	extra    *argocd.Resource
	compared map[time.Time]bool
	// since is when the lag was first asked about, after the patches: older comparisons are not
	// the lagging ones.
	since time.Time
}

func (l *laggingController) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	app, err := l.ArgoCD.GetApplication(ctx, namespace, name)
	if err != nil || name != l.app || l.w.patches() == 0 || app.Refresh != "" {
		return app, err
	}
	if l.since.IsZero() {
		l.since = l.w.clock.Now()
	}
	if !app.ReconciledAt.After(l.since) {
		return app, nil
	}
	l.compared[app.ReconciledAt] = true
	if len(l.compared) <= l.lag {
		for i := range app.Resources {
			app.Resources[i].Status = "OutOfSync"
		}
		if l.extra != nil {
			app.Resources = append(app.Resources, *l.extra)
		}
	}
	return app, nil
}

// A busy controller compares the new app several times before its cache has seen the tracking
// rewrites: the check waits for the comparison that has, and the rename ends as it would at once.
func TestRenameWaitsForTheControllerToSeeTheRewrites(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	lagging := &laggingController{ArgoCD: w.argo, w: w, app: "shop", lag: 6, compared: map[time.Time]bool{}}
	e.ArgoCD = lagging
	c, x := rename(t, e, DryRunNone)
	if !x.Complete() || x.RolledBack() {
		t.Fatalf("rename: %+v", x.Steps)
	}
	if n := len(lagging.compared); n <= lagging.lag {
		t.Fatalf("%d comparisons after the rewrite, want more than %d", n, lagging.lag)
	}
	if check := stepResult(c, x, StepCheck, 1); check.Outcome != OutcomePassed {
		t.Fatalf("check after the rewrite: %+v", check)
	}
	if o := w.cluster.Object(w.refs["team-a"]); o.Labels[argocd.DefaultInstanceLabelKey] != "shop" {
		t.Errorf("team-a after the rename: %v", o.Labels)
	}
}

// A mismatch that is not only what an unseen rewrite looks like — here the new app lists an object
// the rename did not touch — is not waited out: the second comparison decides, and the rename is
// put back.
func TestRenameDoesNotWaitOutAnotherMismatch(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	lagging := &laggingController{ArgoCD: w.argo, w: w, app: "shop", lag: 1000, compared: map[time.Time]bool{},
		extra: &argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "shop-config", Status: "Synced"}}
	e.ArgoCD = lagging
	c, x := rename(t, e, DryRunNone)
	check := stepResult(c, x, StepCheck, 1)
	if check.Outcome != OutcomeFailed || !strings.Contains(check.Message, "ConfigMap/default/shop-config") {
		t.Fatalf("check after the rewrite: %+v", check)
	}
	if n := len(lagging.compared); n != 2 {
		t.Fatalf("%d comparisons judged, want 2", n)
	}
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
}

// Only objects the last patch step wrote can be unseen by the controller: a check waits out a
// mismatch of that kind about them until its timeout, and judges one about any other object on
// its second comparison.
func TestCheckWaitsOutOnlyWhatItWrote(t *testing.T) {
	for _, tc := range []struct {
		about string
		want  int
	}{{"team-a", 120}, {"team-b", 2}} {
		t.Run(tc.about, func(t *testing.T) {
			w := newWorld(t, "team-a", "team-b")
			w.shareClock()
			c := w.detach(DetachRequest{Resources: []ResourceArg{{Kind: "Namespace", Name: "team-a"}}})
			row := argocd.Resource{Version: "v1", Kind: "Namespace", Name: tc.about}
			judged := map[time.Time]bool{}
			c.Steps = append(c.Steps, &Step{Kind: StepCheck, App: AppName{Namespace: "argocd", Name: "guestbook"}, Expect: func(app argocd.Application) *Mismatch {
				judged[app.ReconciledAt] = true
				return &Mismatch{Summary: "unseen", Details: []string{row.String() + " requires pruning"}, Unseen: []string{row.Key()}}
			}})
			x := w.execute(w.engine(), c, DryRunNone)
			if check := x.Steps[len(c.Steps)-1]; check.Outcome != OutcomeFailed || check.Reason != ReasonMismatch {
				t.Fatalf("check: %+v", check)
			}
			if len(judged) < tc.want-1 || len(judged) > tc.want+1 {
				t.Fatalf("%d comparisons judged, want %d", len(judged), tc.want)
			}
		})
	}
}

// A rename stopped by a failed write — here every tracking rewrite refused by an admission webhook —
// is rolled back as one stopped by a failed check: the new app taken away, the old one as it was.
func TestRenameRollsBackAFailedWrite(t *testing.T) {
	w := renameWorld(t)
	w.cluster.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		return false, errors.New(`admission webhook "deny.example.com" denied the request`)
	}
	c, x := rename(t, w.engine(), DryRunNone)
	if r := stepResult(c, x, StepPatch, 0); r.Outcome != OutcomeFailed || x.CheckFailed() {
		t.Fatalf("rewrite %+v", r)
	}
	w.cluster.BeforePatch = nil
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
	wantGuestbookAsBefore(t, w)
}

// Move keeps its behaviour: a failed tracking rewrite stops it with the journal left for undo (a
// half-moved set of objects is each tracked by one app that declares it); only a failed check puts
// a move back by itself.
func TestMoveDoesNotRollBackAFailedWrite(t *testing.T) {
	w := newWorld(t, "team-a", "team-b")
	w.shareClock()
	w.addShop()
	if x := w.execute(w.engine(), w.move(MoveRequest{All: true, Prepare: true}), DryRunNone); !x.Complete() {
		t.Fatalf("prepare: %+v", x.Steps)
	}
	w.addShop("team-a", "team-b")
	failed := false
	w.cluster.BeforePatch = func(_ int, ref cluster.Ref, _ *cluster.Object) (bool, error) {
		if ref.Name == "team-b" {
			failed = true
			return false, errors.New(`admission webhook "deny.example.com" denied the request`)
		}
		return false, nil
	}
	x := w.execute(w.engine(), w.move(MoveRequest{All: true}), DryRunNone)
	if !failed || !x.StepFailed() || x.CheckFailed() {
		t.Fatalf("move: %+v", x.Steps)
	}
	if x.Rollback != nil || x.RollbackErr != nil {
		t.Fatalf("a move was rolled back after a failed write: %+v %v", x.Rollback, x.RollbackErr)
	}
}
