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
	w.argo.Now = func() time.Time { return time.Now().Add(2 * time.Second) }
	return w
}

func TestRenameOrderAndOutcome(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, wr := range w.argo.AppWrites() {
		verbs = append(verbs, strings.Join(strings.Fields(wr)[:2], " "))
	}
	want := []string{"create argocd/shop", "patch argocd/guestbook", "delete argocd/guestbook", "patch argocd/shop"}
	if !slices.Equal(verbs, want) {
		t.Fatalf("writes %q, want %q", verbs, want)
	}
	// The old app's automation was off and its finalizer gone before any tracking moved.
	if off := w.argo.AppWrites()[1]; !strings.Contains(off, `"finalizers":null`) || !strings.Contains(off, `"syncPolicy":null`) {
		t.Fatalf("old app patch %s", off)
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
	if a := meta["annotations"].(map[string]any); a["team"] != "storage" || a[argocd.AnnotationRefresh] != nil {
		t.Errorf("new app annotations %v", a)
	}
	if p := syncPolicyOf(shop).(map[string]any); p["automated"] == nil {
		t.Errorf("new app sync policy %v", p)
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "guestbook"); err == nil {
		t.Error("the old app still exists")
	}
	if v := e.VerifyRename(context.Background(), rr, done, time.Second)[1]; v == nil || !v.Verified {
		t.Fatalf("verification %+v", v)
	}
	j, _, err := w.store.Load(done.Journal)
	if err != nil || j.Rename == nil || j.Command != journal.CommandRename || len(j.Entries) != 2 {
		t.Fatalf("journal %v %+v", err, j)
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

// renameGuestbook renames guestbook to shop and returns its journal and what it keeps for the undo.
func renameGuestbook(t *testing.T, w *world) (string, *journal.Renamed) {
	t.Helper()
	e := w.engine()
	rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
	if err != nil || !done.Done() {
		t.Fatalf("rename: %v %+v", err, done.Steps)
	}
	j, _, err := w.store.Load(done.Journal)
	if err != nil {
		t.Fatal(err)
	}
	return done.Journal, j.Rename
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

// Undo of a rename: the old app comes back (automation and finalizers only after it tracks the
// resources again), the tracking moves back, the new app goes (finalizers off before the delete).
func TestRenameUndo(t *testing.T) {
	w := renameWorld(t)
	journalPath, renamed := renameGuestbook(t, w)
	ru, err := PlanRenameUndo(context.Background(), w.argo, renamed)
	if err != nil {
		t.Fatal(err)
	}
	// The controller writes the new app's status after the undo was planned.
	if _, err := w.argo.PatchApplication(context.Background(), "argocd", "shop", []byte(`{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`), false); err != nil {
		t.Fatal(err)
	}
	if before, ok := ru.Send(context.Background(), ru.Before, false); !ok {
		t.Fatalf("before: %+v", before)
	}
	u := w.undo(journalPath, w.argo)
	if got := u.Counts()[OutcomeRestored]; got != 2 {
		t.Fatalf("restored %d: %v", got, outcomes(u.plan.Planned, u.Applied))
	}
	if after, ok := ru.Send(context.Background(), ru.After, false); !ok {
		t.Fatalf("after: %+v", after)
	}
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

// The controller writes the old app's status while the tracking moves: the delete, conditional on
// the resourceVersion, is sent again after checking the fresh copy — and never when a finalizer came
// back meanwhile.
func TestRenameDeleteRechecksTheOldApp(t *testing.T) {
	for name, write := range map[string]string{
		"a status write":       `{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`,
		"a finalizer again":    `{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}`,
		"automated sync again": `{"spec":{"syncPolicy":{"automated":{"prune":true}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := renameWorld(t)
			e := w.engine()
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
			rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
			if err != nil {
				t.Fatal(err)
			}
			_, oldErr := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
			if name == "a status write" {
				if !done.Done() || oldErr == nil {
					t.Fatalf("not renamed: %+v", done.Steps)
				}
				return
			}
			if done.Steps[2].Outcome != OutcomeFailed || done.FailedStep() != 2 || oldErr != nil {
				t.Fatalf("deleted an app whose finalizer or automation came back: %+v", done.Steps[2])
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
	if off := string(automationOff(app(map[string]any{"automated": map[string]any{}}), "7")); !strings.Contains(off, `"syncPolicy":null`) {
		t.Errorf("patch %s", off)
	}
	if off := string(automationOff(app(map[string]any{"automated": map[string]any{}, "retry": map[string]any{"limit": 2}}), "7")); !strings.Contains(off, `"automated":null`) {
		t.Errorf("patch %s", off)
	}
}

// Between the plan and the switch-off, the controller writes the old app's status: the switch-off is
// sent again at the fresh version. A change of its spec meanwhile stops the rename before any
// tracking moves.
func TestRenameSwitchOffRechecksTheOldApp(t *testing.T) {
	for name, write := range map[string]string{
		"a status write": `{"status":{"reconciledAt":"2026-12-01T00:00:00Z"}}`,
		"a spec change":  `{"spec":{"project":"other"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := renameWorld(t)
			e := w.engine()
			rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.argo.PatchApplication(context.Background(), "argocd", "guestbook", []byte(write), false); err != nil {
				t.Fatal(err)
			}
			done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
			if err != nil {
				t.Fatal(err)
			}
			if name == "a status write" {
				if !done.Done() {
					t.Fatalf("not renamed: %+v", done.Steps)
				}
				return
			}
			if done.Steps[1].Outcome != OutcomeFailed || done.Steps[3].Outcome != OutcomeNotAttempted || w.patches() != 0 {
				t.Fatalf("went on after the old app's spec changed: %+v, %d object patches", done.Steps, w.patches())
			}
		})
	}
}

// A server dry run of a rename returns each write's outcome and leaves the plan as it was: nothing
// persists, and the plan can still be applied.
func TestRenameServerDryRunReturnsStepOutcomes(t *testing.T) {
	w := renameWorld(t)
	e := w.engine()
	rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := e.ApplyRename(context.Background(), rr, DryRunServer)
	if err != nil {
		t.Fatal(err)
	}
	// The fake judges the dry-run delete against the old app as stored, finalizers and all (the
	// dry-run switch-off persisted nothing), so step 2 is not asserted here.
	s := dry.Steps
	if s[0].Outcome != OutcomeDryRunAccepted || s[1].Outcome != OutcomeDryRunAccepted || s[2].Outcome == OutcomeApplied ||
		s[3].Outcome != OutcomeUnchanged || dry.Mode != ModeServerDryRun || dry.Done() || dry.Counts()[OutcomeDryRunAccepted] != 2 {
		t.Fatalf("dry run: mode %s, steps %+v, objects %v", dry.Mode, s, dry.Counts())
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil {
		t.Fatal("a dry run created the new app")
	}
	if rr.Counts()[OutcomePlanned] != 2 {
		t.Fatalf("the dry run changed the plan: %v", outcomes(rr.Planned, nil))
	}
	done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
	if err != nil || !done.Done() {
		t.Fatalf("rename after the dry run: %v %+v", err, done.Steps)
	}
}

// TestRenameUndoSettlesTheNewAppsSync: a sync the new app began before the undo switched its
// automation off would write the new app's tracking back over the restored one; the undo waits for
// it, and gives up with a clear error when it does not end.
func TestRenameUndoSettlesTheNewAppsSync(t *testing.T) {
	w := renameWorld(t)
	_, renamed := renameGuestbook(t, w)
	ru, err := PlanRenameUndo(context.Background(), w.argo, renamed)
	if err != nil {
		t.Fatal(err)
	}
	syncing := func(on bool) { setSyncing(t, w, "shop", on) }
	syncing(true)
	if err := ru.Settle(context.Background(), 30*time.Millisecond, time.Millisecond); err == nil || !strings.Contains(err.Error(), "operation running (Running)") {
		t.Fatalf("a sync that does not end: %v", err)
	}
	// The controller's sync ends once the undo has been seen waiting for it.
	polled := pollWatcher(w.argo, "shop")
	ru, err = PlanRenameUndo(context.Background(), polled, renamed)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-polled.waiting
		syncing(false)
	}()
	if err := ru.Settle(context.Background(), 10*time.Second, time.Millisecond); err != nil {
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
	rr, err := e.PlanRename(context.Background(), RenameRequest{App: AppName{Name: "guestbook"}, NewName: "shop"})
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
	done, err := e.ApplyRename(context.Background(), rr, DryRunNone)
	if err != nil || !done.Done() {
		t.Fatalf("rename: %v %+v", err, done.Steps)
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
