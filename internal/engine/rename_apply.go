package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/verify"
)

// RenameApplied is what ApplyRename did: the tracking rewrites, and the outcome of each of the
// plan's Steps (in its order; zero for a step not sent, as in a preview).
type RenameApplied struct {
	*Applied
	Steps []Decision
}

// Done reports a rename carried out to its last step.
func (ra *RenameApplied) Done() bool { return ra.Steps[len(ra.Steps)-1].Outcome == OutcomeApplied }

// FailedStep is the index of the step that failed or, when the rename was applied, was not
// attempted; -1 when there is none.
func (ra *RenameApplied) FailedStep() int {
	for i, d := range ra.Steps {
		if d.Outcome == OutcomeFailed || d.Outcome == OutcomeNotAttempted && ra.Mode == ModeApply {
			return i
		}
	}
	return -1
}

// ApplyRename carries a planned rename as far as mode says. A server dry run sends every write with
// dryRun=All (the new app as it ends up, since a dry-run create leaves nothing to patch later). For
// DryRunNone: the journal, with the old Application as it was, fsynced first; then the steps in
// order, stopping at the first failure — the old Application is deleted only when every tracking
// rewrite was applied and its finalizers are gone.
func (e *Engine) ApplyRename(ctx context.Context, rr *RenameRun, mode DryRun) (*RenameApplied, error) {
	done := rr.Preview()
	done.Mode = mode.Mode()
	s := &renameSender{e: e, rr: rr, ra: &RenameApplied{Applied: done, Steps: make([]Decision, len(rr.Steps))}, oldRV: rr.oldRV}
	switch {
	case mode == DryRunClient || rr.Blocked():
		return s.ra, nil
	case mode == DryRunServer:
		s.dryRun(ctx)
		return s.ra, nil
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
	if !s.step(ctx, 0, false) || !s.step(ctx, 1, false) {
		return s.ra, nil
	}
	// A sync the old app began between the plan and the switch-off would write its tracking back
	// over the rewrites: wait for it to end first.
	if err := settle(ctx, e.ArgoCD, rr.Steps[1].App, SettleTimeout, e.poll()); err != nil {
		s.ra.Steps[2] = Decision{Outcome: OutcomeNotAttempted, Message: err.Error() + "; no tracking was rewritten: undo the journal, or run the rename again"}
		s.ra.Steps[3] = Decision{Outcome: OutcomeNotAttempted}
		return s.ra, nil
	}
	e.patchAll(ctx, rr.Planned, done, todo, false, applyMarks{rec}, OutcomeApplied)
	if n := done.Counts()[OutcomeApplied]; n != len(todo) {
		s.ra.Steps[2] = Decision{Outcome: OutcomeNotAttempted, Message: fmt.Sprintf("%d of %d tracking rewrites applied: the old Application is kept; undo the journal", n, len(todo))}
		s.ra.Steps[3] = Decision{Outcome: OutcomeNotAttempted}
		return s.ra, nil
	}
	if s.step(ctx, 2, false) {
		s.step(ctx, 3, false)
	}
	return s.ra, nil
}

// SettleTimeout bounds how long a rename (or its undo) waits for a sync an app began before its
// automation was switched off.
const SettleTimeout = 2 * time.Minute

// Blocked reports a plan that must not be carried out: an object refused or unreadable.
func (rr *RenameRun) Blocked() bool {
	c := rr.Counts()
	return c[OutcomeRefused]+c[OutcomeFailed] > 0
}

// renameSender sends a rename's Application writes and records their outcomes.
type renameSender struct {
	e  *Engine
	rr *RenameRun
	ra *RenameApplied
	// oldRV is the old Application's resourceVersion the delete is conditional on: as read, then as
	// the switch-off left it.
	oldRV string
}

func (s *renameSender) dryRun(ctx context.Context) {
	create := *s.rr.Steps[0]
	create.Object = s.rr.final
	s.ra.Steps[0] = s.send(ctx, &create, true)
	s.step(ctx, 1, true)
	s.e.patchAll(ctx, s.rr.Planned, s.ra.Applied, s.rr.planned(), true, noMarks{}, OutcomeDryRunAccepted)
	s.step(ctx, 2, true)
	s.ra.Steps[3] = Decision{Outcome: OutcomeUnchanged, Message: "judged with the create above: a dry-run create leaves no app to patch"}
}

// step sends step i and records its outcome; the later steps are marked not attempted when it
// fails.
func (s *renameSender) step(ctx context.Context, i int, dryRun bool) bool {
	s.ra.Steps[i] = s.send(ctx, s.rr.Steps[i], dryRun)
	if s.ra.Steps[i].Outcome == OutcomeFailed {
		for k := i + 1; k < len(s.ra.Steps); k++ {
			s.ra.Steps[k] = Decision{Outcome: OutcomeNotAttempted, Message: "an earlier step failed"}
		}
		return false
	}
	return true
}

func (s *renameSender) send(ctx context.Context, step *AppStep, dryRun bool) Decision {
	ok := OutcomeApplied
	if dryRun {
		ok = OutcomeDryRunAccepted
	}
	argo := s.e.ArgoCD
	var err error
	switch step.Verb {
	case "create":
		_, err = argo.CreateApplication(ctx, step.Object, dryRun)
	case "patch":
		if step.App == s.rr.Old {
			err = s.switchOff(ctx, step, dryRun)
			break
		}
		_, err = argo.PatchApplication(ctx, step.App.Namespace, step.App.Name, step.Patch, dryRun)
	case "delete":
		err = deleteApplication(ctx, argo, step.App, s.rr.oldUID, s.oldRV, dryRun)
	}
	if err != nil {
		return Decision{Outcome: OutcomeFailed, Message: err.Error()}
	}
	return Decision{Outcome: ok}
}

// VerifyRename waits until Argo CD shows the new app tracking every renamed resource, Synced on
// each, in a comparison that started after the last write. It returns what it showed of the new app
// (the second of the plan's apps).
func (e *Engine) VerifyRename(ctx context.Context, rr *RenameRun, done *RenameApplied, timeout time.Duration) Verified {
	if done.Steps[3].Outcome != OutcomeApplied {
		return nil
	}
	rows := movedRows(rr.Planned, done.Applied)
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
func (s *renameSender) switchOff(ctx context.Context, step *AppStep, dryRun bool) error {
	patch := step.Patch
	for i := 1; ; i++ {
		out, err := s.e.ArgoCD.PatchApplication(ctx, step.App.Namespace, step.App.Name, patch, dryRun)
		if err == nil {
			if !dryRun {
				// The delete is conditional on this very version: no finalizer added back since.
				s.oldRV = metaString(out, "resourceVersion")
			}
			return nil
		}
		if !cluster.IsConflict(err) || i == 5 {
			return err
		}
		fresh, gerr := s.e.ArgoCD.ApplicationObject(ctx, step.App.Namespace, step.App.Name)
		if gerr != nil {
			return gerr
		}
		if why := changedSince(s.rr.read, fresh); why != "" {
			return fmt.Errorf("Application %s/%s changed since unprune read it (%s): nothing of it was changed; undo the journal and run again", step.App.Namespace, step.App.Name, why)
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
