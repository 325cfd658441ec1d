package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// renameSettlePoll is how often the undo of a rename looks whether a sync of the new app that began
// before its automation was switched off has ended (for up to engine.SettleTimeout).
const renameSettlePoll = 200 * time.Millisecond

// renameUndo is the undo of a rename under way: its plan, and what the writes sent before the
// tracking moves back did.
type renameUndo struct {
	*engine.RenameUndo
	before []engine.Decision
}

// undoRenameBefore starts the undo of a rename journal: the Application writes that must come before
// the tracking moves back (the old app created again, the new one's automation and finalizers off).
// done is true when there is nothing more to do: a preview, which sends nothing, or a failed step.
func (o *UndoOptions) undoRenameBefore(ctx context.Context, j *journal.Journal) (ru *renameUndo, done bool, err error) {
	if o.Via == ViaArgoCD {
		return nil, true, usageError("undo of a rename creates and deletes Application objects, which Argo CD's API cannot do with preconditions: use your kubeconfig")
	}
	argo, err := o.session.JournalArgoCD(ctx, j)
	if err != nil {
		return nil, true, failure(err)
	}
	planned, err := engine.PlanRenameUndo(ctx, argo, j.Rename)
	if err != nil {
		return nil, true, failure(err)
	}
	ru = &renameUndo{RenameUndo: planned}
	if o.change.dryRun != engine.DryRunNone {
		o.printRenameSteps(ru.Before, nil)
		o.printRenameSteps(ru.After, nil)
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Undo the rename with --yes.")
		return ru, true, Silent(ExitFindings)
	}
	var ok bool
	if ru.before, ok = ru.Send(ctx, ru.Before, false); !ok {
		o.printRenameSteps(ru.Before, ru.before)
		return ru, true, &ExitError{Code: ExitFailure, Err: fmt.Errorf("undo of the rename stopped before any tracking moved back; run it again")}
	}
	if err := ru.Settle(ctx, engine.SettleTimeout, renameSettlePoll); err != nil {
		o.printRenameSteps(ru.Before, ru.before)
		return ru, true, &ExitError{Code: ExitFailure, Err: fmt.Errorf("undo of the rename stopped before any tracking moved back: %w", err)}
	}
	return ru, false, nil
}

// undoRenameAfter finishes the undo of a rename once every tracking rewrite is back.
func (o *UndoOptions) undoRenameAfter(ctx context.Context, ru *renameUndo, u *engine.UndoPlan, done *engine.Applied) {
	var after []engine.Decision
	c := done.Counts()
	if c[engine.OutcomeFailed]+c[engine.OutcomeRefused]+c[engine.OutcomeNotAttempted] > 0 {
		fmt.Fprintf(o.ErrOut, "The new Application %s is kept: not every resource's tracking moved back (see below); run the undo again.\n", u.Journal.Rename.To)
	} else {
		after, _ = ru.Send(ctx, ru.After, false)
	}
	o.printRenameSteps(ru.Before, ru.before)
	o.printRenameSteps(ru.After, after)
}

// printRenameSteps prints Application writes with their outcomes (nil: not sent).
func (o *UndoOptions) printRenameSteps(steps []*engine.AppStep, outcomes []engine.Decision) {
	for i, s := range steps {
		var d engine.Decision
		if i < len(outcomes) {
			d = outcomes[i]
		}
		step := printer.NewRenameStep(s, d)
		line := fmt.Sprintf("%s Application %s/%s: %s [%s]", step.Verb, printer.Safe(step.Application.Namespace), printer.Safe(step.Application.Name), step.Why, step.Outcome)
		if step.Message != "" {
			line += " — " + printer.Line(step.Message)
		}
		fmt.Fprintln(o.ErrOut, line)
	}
}
