package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
)

// Change is what a changing command carries out: the objects it patches (Planned.Items, each in a
// phase) and the steps that carry them out, in order. Every changing command plans one — detach,
// move, rename, guard protect|confirm, undo — and Execute is the one place anything is changed.
//
// The rule that no step of unprune's lets Argo CD delete anything before Argo CD's own comparison
// shows that it deletes nothing lives here, once: a step that can (Step.Lets) must follow, with
// nothing but other checks between them, a passed Check of every app it lets delete. Execute
// refuses a change that breaks that, and runs such a step only when those checks were judged on
// comparisons Argo CD started after the step before them.
type Change struct {
	*Planned
	Steps []*Step
	// undoing is the journal an undo restores; nil for a change that writes a journal of its own.
	undoing *journal.Recorder
	// verify are the waits for Argo CD that show the change done, once every step succeeded.
	verify func(done *Applied) []appWait
	// rollback says that, when a check fails after a write, the undo of the run's journal puts back
	// what it did; rollbackFailedStep, that a step that fails after a write (an Application write,
	// a patch step, a wait) does too: for a change whose half-done state nothing else puts right.
	rollback, rollbackFailedStep bool
	// Renaming names the apps of a rename or of its undo; nil for other changes.
	Renaming *Renaming
	// info is what the run learns that later steps need (the journal's id).
	info *changeInfo
}

// changeInfo is what a run of a change learns as it goes.
type changeInfo struct {
	// journalID is the id of the journal the run writes, or undoes.
	journalID string
}

// StepKind is what a step does.
type StepKind string

const (
	// StepPatch patches the planned objects of one phase (Item.Phase).
	StepPatch StepKind = "patch-objects"
	// StepCreate, StepUpdate and StepDelete write an Application object.
	StepCreate StepKind = "create"
	StepUpdate StepKind = "patch"
	StepDelete StepKind = "delete"
	// StepSettle waits until no sync operation of an app is requested or running.
	StepSettle StepKind = "settle"
	// StepCheck asks Argo CD to compare an app, waits for a comparison that started after the step
	// before, and judges it.
	StepCheck StepKind = "check"
)

// Step is one step of a change.
type Step struct {
	Kind StepKind
	// App is the Application the step writes, waits for or checks.
	App AppName
	Why string
	// Phase is the phase of the objects a StepPatch patches.
	Phase int
	// Lets names the apps that can delete something once the step is done: automated sync or
	// finalizers given back, a mark that kept a prune away taken off, tracking handed to an app
	// that prunes on its own.
	Lets []AppName
	// Expect judges a StepCheck's comparison; Live, when set, then reads what the check must also
	// find on the live objects.
	Expect Expectation
	Live   func(ctx context.Context) *Mismatch `json:"-"`
	// Object is the Application a StepCreate creates, for the report.
	Object map[string]any `json:"-"`
	// write sends a StepCreate, StepUpdate or StepDelete, or waits for a StepSettle.
	write func(ctx context.Context, dryRun bool) error
}

// Writes reports whether the step changes something (a StepPatch, or an Application write).
func (s *Step) Writes() bool {
	switch s.Kind {
	case StepPatch, StepCreate, StepUpdate, StepDelete:
		return true
	}
	return false
}

// Expectation judges an app as Argo CD's comparison shows it: nil when it shows what the step
// after the check needs, else what it shows instead.
type Expectation func(app argocd.Application) *Mismatch

// Mismatch is what a check found instead of what it expected.
type Mismatch struct {
	// Summary says it in one line; Details per resource.
	Summary string
	Details []string
	// Fix says what the user can do about it.
	Fix string
	// Unseen, when set, are the keys of every row the mismatch is about, each differing only as
	// Argo CD shows an object whose last write its controller has not seen yet (its live-state
	// cache lags the API server by its watch). A check may wait for later comparisons of such a
	// mismatch when unprune wrote those objects (see runner.check).
	Unseen []string
}

func (m *Mismatch) String() string {
	s := m.Summary
	if len(m.Details) > 0 {
		s += ": " + strings.Join(m.Details, "; ")
	}
	if m.Fix != "" {
		s += ". " + m.Fix
	}
	return s
}

// Outcomes of a check.
const (
	// OutcomePassed: a comparison after the step before showed what the next step needs.
	OutcomePassed Outcome = "Passed"
	// OutcomeFailed is used too: the comparison showed something else, or Argo CD did not compare
	// the app in time (Decision.Reason ReasonNotCompared).
)

// Reasons of a failed check.
const (
	ReasonMismatch    = "ComparisonMismatch"
	ReasonNotCompared = "NotCompared"
)

// StepResult is what became of one step.
type StepResult struct {
	Decision
	// At is when the step ended; for a check, when the comparison it judged started.
	At time.Time
	// Mismatch is what a failed check found.
	Mismatch *Mismatch
}

// Executed is what Execute did with a change: the objects' results (Applied), each step's, and —
// when a check (or, for a rename, any step) failed after something was changed — what putting it
// back did.
type Executed struct {
	*Applied
	Steps []StepResult
	// Stopped is the index of the step that stopped the run (failed, or interrupted before it);
	// -1 when every step ran.
	Stopped int
	// Rollback is the undo of what the run changed, run because a check (or a step) failed;
	// RollbackErr why it could not be planned.
	RollbackChange *Change
	Rollback       *Executed
	RollbackErr    error
	// kinds are the change's step kinds, in order.
	kinds []StepKind
	// closeJournal waits for the journal's compaction (WaitJournal).
	closeJournal func() error
}

// CheckFailed reports a run stopped by a check that did not pass.
func (x *Executed) CheckFailed() bool {
	return x.Stopped >= 0 && x.Stopped < len(x.Steps) && x.Steps[x.Stopped].Outcome == OutcomeFailed && x.isCheck(x.Stopped)
}

func (x *Executed) isCheck(i int) bool { return x.kinds != nil && x.kinds[i] == StepCheck }

// StepFailed reports a run stopped by a step that failed: a check, a write or a wait (not one
// interrupted).
func (x *Executed) StepFailed() bool {
	return x.Stopped >= 0 && x.Stopped < len(x.Steps) && x.Steps[x.Stopped].Outcome == OutcomeFailed && !x.Interrupted
}

// RolledBack reports a run whose failed check (or step) was followed by a complete undo of
// everything it changed: in sum, nothing was changed.
func (x *Executed) RolledBack() bool {
	return x.Rollback != nil && x.Rollback.Stopped < 0 && x.Rollback.Complete()
}

// Complete reports a run in which every step ran and every object planned was changed.
func (x *Executed) Complete() bool {
	if x.Stopped >= 0 || x.Interrupted {
		return false
	}
	for _, it := range x.Items {
		if it.Outcome == OutcomeFailed || it.Outcome == OutcomeNotAttempted || it.Outcome == OutcomeRefused {
			return false
		}
	}
	return true
}

// Wrote reports whether any write step was applied.
func (x *Executed) Wrote() bool {
	if x.Mode != ModeApply {
		return false
	}
	for i, s := range x.Steps {
		if x.kinds[i] != StepCheck && x.kinds[i] != StepSettle && s.Outcome == OutcomeApplied {
			return true
		}
	}
	for _, it := range x.Items {
		if it.Outcome.Changed() {
			return true
		}
	}
	return false
}

// validate checks the change's shape: every step that lets an app delete something directly
// follows passed checks of that app. It is the rule, held where every change passes.
func (c *Change) validate() error {
	for i, s := range c.Steps {
		for _, app := range s.Lets {
			if !checkedBefore(c.Steps, i, app) {
				return fmt.Errorf("internal error: step %d (%s %s) lets Application %s delete, but no check of that app comes right before it", i+1, s.Kind, s.App, app)
			}
		}
		if s.Kind == StepCheck && s.Expect == nil {
			return fmt.Errorf("internal error: check %d has no expectation", i+1)
		}
	}
	return nil
}

// checkedBefore reports whether a check of app is among the checks right before step i.
func checkedBefore(steps []*Step, i int, app AppName) bool {
	for k := i - 1; k >= 0 && steps[k].Kind == StepCheck; k-- {
		if steps[k].App == app {
			return true
		}
	}
	return false
}

// String is "create argocd/shop" and the like.
func (a AppName) String() string {
	if a.Namespace == "" {
		return a.Name
	}
	return a.Namespace + "/" + a.Name
}

// ErrNothingChanged wraps the failures of Execute that happen before anything was sent.
var ErrNothingChanged = errors.New("nothing was changed")
