package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/verify"
)

// ApplyRename carries a planned rename as far as mode says. A server dry run sends every write with
// dryRun=All (the new app as it ends up, since a dry-run create leaves nothing to patch later). For
// DryRunNone: the journal, with the old Application as it was, fsynced first; then the steps in
// order, stopping at the first failure — the old Application is deleted only when every tracking
// rewrite was applied and its finalizers are gone.
func (e *Engine) ApplyRename(ctx context.Context, rr *RenameRun, mode DryRun) (*Applied, error) {
	done := rr.Preview()
	done.Mode = mode.Mode()
	switch {
	case mode == DryRunClient || rr.Blocked():
		return done, nil
	case mode == DryRunServer:
		e.dryRunRename(ctx, rr, done)
		return done, nil
	}
	todo := rr.planned()
	rec, err := e.startJournal(rr.Planned, todo)
	if err != nil {
		return nil, err
	}
	done.Journal = rec.Path()
	defer func() {
		if err := rec.Close(); err != nil {
			done.JournalErr = err
		}
	}()
	if !e.appStep(ctx, rr, 0, false) || !e.appStep(ctx, rr, 1, false) {
		return done, nil
	}
	e.patchAll(ctx, rr.Planned, done, todo, false, applyMarks{rec}, OutcomeApplied)
	if n := done.Counts()[OutcomeApplied]; n != len(todo) {
		rr.Steps[2].Outcome, rr.Steps[2].Message = OutcomeNotAttempted, fmt.Sprintf("%d of %d tracking rewrites applied: the old Application is kept; undo the journal", n, len(todo))
		rr.Steps[3].Outcome = OutcomeNotAttempted
		return done, nil
	}
	if e.appStep(ctx, rr, 2, false) {
		e.appStep(ctx, rr, 3, false)
	}
	return done, nil
}

// Blocked reports a plan that must not be carried out: an object refused or unreadable.
func (rr *RenameRun) Blocked() bool {
	c := rr.Counts()
	return c[OutcomeRefused]+c[OutcomeFailed] > 0
}

// Done reports a rename carried out to its last step.
func (rr *RenameRun) Done() bool { return rr.Steps[len(rr.Steps)-1].Outcome == OutcomeApplied }

// FailedStep is the step that failed or, when the rename was applied (mode), was not attempted.
func (rr *RenameRun) FailedStep(mode Mode) *AppStep {
	if mode != ModeApply {
		for _, s := range rr.Steps {
			if s.Outcome == OutcomeFailed {
				return s
			}
		}
		return nil
	}
	for _, s := range rr.Steps {
		if s.Outcome == OutcomeFailed || s.Outcome == OutcomeNotAttempted {
			return s
		}
	}
	return nil
}

func (e *Engine) dryRunRename(ctx context.Context, rr *RenameRun, done *Applied) {
	create := *rr.Steps[0]
	create.Object = rr.final
	rr.Steps[0].Outcome, rr.Steps[0].Message = e.sendStep(ctx, rr, &create, true)
	e.appStep(ctx, rr, 1, true)
	e.patchAll(ctx, rr.Planned, done, rr.planned(), true, noMarks{}, OutcomeDryRunAccepted)
	e.appStep(ctx, rr, 2, true)
	rr.Steps[3].Outcome, rr.Steps[3].Message = OutcomeUnchanged, "judged with the create above: a dry-run create leaves no app to patch"
}

// appStep sends step i and records its outcome; the later steps are marked not attempted when it
// fails.
func (e *Engine) appStep(ctx context.Context, rr *RenameRun, i int, dryRun bool) bool {
	s := rr.Steps[i]
	s.Outcome, s.Message = e.sendStep(ctx, rr, s, dryRun)
	if s.Outcome == OutcomeFailed {
		for _, later := range rr.Steps[i+1:] {
			later.Outcome, later.Message = OutcomeNotAttempted, "an earlier step failed"
		}
		return false
	}
	return true
}

func (e *Engine) sendStep(ctx context.Context, rr *RenameRun, s *AppStep, dryRun bool) (Outcome, string) {
	ok := OutcomeApplied
	if dryRun {
		ok = OutcomeDryRunAccepted
	}
	var err error
	switch s.Verb {
	case "create":
		_, err = e.ArgoCD.CreateApplication(ctx, s.Object, dryRun)
	case "patch":
		if s.App == rr.Old {
			err = e.switchOff(ctx, rr, s, dryRun)
			break
		}
		_, err = e.ArgoCD.PatchApplication(ctx, s.App.Namespace, s.App.Name, s.Patch, dryRun)
	case "delete":
		err = deleteApplication(ctx, e.ArgoCD, s.App, rr.oldUID, rr.oldRV, dryRun)
	}
	if err != nil {
		return OutcomeFailed, err.Error()
	}
	return ok, ""
}

// VerifyRename waits until Argo CD shows the new app tracking every renamed resource, Synced on
// each, in a comparison that started after the last write. It returns what it showed of the new app
// (the second of the plan's apps).
func (e *Engine) VerifyRename(ctx context.Context, rr *RenameRun, done *Applied, timeout time.Duration) Verified {
	if rr.Steps[3].Outcome != OutcomeApplied {
		return nil
	}
	rows := movedRows(rr.Planned, done)
	app := rr.Apps[1].App
	if fresh, err := e.ArgoCD.GetApplication(ctx, app.Namespace, app.Name); err == nil {
		app = fresh
	}
	v := verify.Apps(ctx, e.ArgoCD, []verify.Request{{App: app, Rows: rows, Want: verify.Adopted}}, e.now(), e.verifyOptions(timeout), "")[0]
	return Verified{nil, &v}
}

// deleteApplication deletes an Application object only while it has no finalizer and no automated
// sync, and is the object unprune read (its uid). The controller writes the app's status all the
// time, so a resourceVersion precondition alone fails: on a conflict the app is read again, the
// conditions are checked on that fresh copy, and the delete is sent again conditional on it.
func deleteApplication(ctx context.Context, argo cluster.ArgoCD, app AppName, uid, resourceVersion string, dryRun bool) error {
	const attempts = 5
	for i := 1; ; i++ {
		err := argo.DeleteApplication(ctx, app.Namespace, app.Name, uid, resourceVersion, dryRun)
		if err == nil || !cluster.IsConflict(err) || i == attempts {
			return err
		}
		fresh, gerr := argo.ApplicationObject(ctx, app.Namespace, app.Name)
		switch {
		case gerr != nil:
			return gerr
		case metaString(fresh, "uid") != uid:
			return fmt.Errorf("Application %s/%s was deleted and created again meanwhile: not deleting the new one", app.Namespace, app.Name)
		case len(finalizersOf(fresh)) > 0:
			return fmt.Errorf("Application %s/%s has finalizers again (%v): not deleting it, which would delete its resources", app.Namespace, app.Name, finalizersOf(fresh))
		case automated(fresh):
			return fmt.Errorf("Application %s/%s has automated sync again: not deleting it", app.Namespace, app.Name)
		}
		resourceVersion = metaString(fresh, "resourceVersion")
	}
}

func automated(obj map[string]any) bool {
	policy, _ := syncPolicyOf(obj).(map[string]any)
	a, ok := policy["automated"].(map[string]any)
	if !ok {
		return false
	}
	enabled, set := a["enabled"].(bool)
	return !set || enabled
}

// switchOff sends the patch that switches the old app's automated sync off and removes its
// finalizers, conditional on the resourceVersion it was planned from. The controller writes the
// app's status all the time, so on a conflict the app is read again and, while its spec, finalizers
// and operation are as planned (only status moved), the patch is sent again at the fresh version.
func (e *Engine) switchOff(ctx context.Context, rr *RenameRun, s *AppStep, dryRun bool) error {
	patch := s.Patch
	for i := 1; ; i++ {
		out, err := e.ArgoCD.PatchApplication(ctx, s.App.Namespace, s.App.Name, patch, dryRun)
		if err == nil {
			if !dryRun {
				// The delete is conditional on this very version: no finalizer added back since.
				rr.oldRV = metaString(out, "resourceVersion")
			}
			return nil
		}
		if !cluster.IsConflict(err) || i == 5 {
			return err
		}
		fresh, gerr := e.ArgoCD.ApplicationObject(ctx, s.App.Namespace, s.App.Name)
		if gerr != nil {
			return gerr
		}
		if why := changedSince(rr.read, fresh); why != "" {
			return fmt.Errorf("Application %s/%s changed since unprune read it (%s): nothing of it was changed; undo the journal and run again", s.App.Namespace, s.App.Name, why)
		}
		patch = automationOff(fresh, metaString(fresh, "resourceVersion"))
	}
}

// changedSince says what of an Application that matters to a rename differs between two reads:
// its identity, spec, finalizers, or a sync operation requested.
func changedSince(before, after map[string]any) string {
	same := func(key string, a, b any) string {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if string(x) != string(y) {
			return key
		}
		return ""
	}
	switch {
	case metaString(before, "uid") != metaString(after, "uid"):
		return "it was deleted and created again"
	case after["operation"] != nil:
		return "a sync operation was requested"
	}
	for _, why := range []string{same("spec", before["spec"], after["spec"]), same("finalizers", finalizersOf(before), finalizersOf(after))} {
		if why != "" {
			return "its " + why + " changed"
		}
	}
	return ""
}
