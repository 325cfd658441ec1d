package cli

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// undoRenameBefore starts the undo of a rename journal: the Application writes that must come before
// the tracking moves back (the old app created again, the new one's automation and finalizers off).
// done is true when there is nothing more to do: a preview, which sends nothing, or a failed step.
func (o *UndoOptions) undoRenameBefore(ctx context.Context, j *journal.Journal) (ru *engine.RenameUndo, done bool, err error) {
	if o.Via == ViaArgoCD {
		return nil, true, usageError("undo of a rename creates and deletes Application objects, which Argo CD's API cannot do with preconditions: use your kubeconfig")
	}
	argo, err := o.journalArgoCD(ctx, j)
	if err != nil {
		return nil, true, failure(err)
	}
	ru, err = engine.PlanRenameUndo(ctx, argo, j.Rename)
	if err != nil {
		return nil, true, failure(err)
	}
	if o.change.dryRun != engine.DryRunNone {
		o.printRenameSteps(ru.Before, j)
		o.printRenameSteps(ru.After, j)
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Undo the rename with --yes.")
		return ru, true, Silent(ExitFindings)
	}
	if !ru.Send(ctx, ru.Before, false) {
		o.printRenameSteps(ru.Before, j)
		return ru, true, &ExitError{Code: ExitFailure, Err: fmt.Errorf("undo of the rename stopped before any tracking moved back; run it again")}
	}
	return ru, false, nil
}

// undoRenameAfter finishes the undo of a rename once every tracking rewrite is back.
func (o *UndoOptions) undoRenameAfter(ctx context.Context, ru *engine.RenameUndo, u *engine.UndoPlan, done *engine.Applied) {
	c := done.Counts()
	if c[engine.OutcomeFailed]+c[engine.OutcomeRefused]+c[engine.OutcomeNotAttempted] > 0 {
		fmt.Fprintf(o.ErrOut, "The new Application %s is kept: not every resource's tracking moved back (see below); run the undo again.\n", u.Journal.Rename.To)
	} else {
		ru.Send(ctx, ru.After, false)
	}
	o.printRenameSteps(ru.Before, u.Journal)
	o.printRenameSteps(ru.After, u.Journal)
}

func (o *UndoOptions) printRenameSteps(steps []*engine.AppStep, j *journal.Journal) {
	for _, s := range steps {
		outcome := string(s.Outcome)
		if outcome == "" {
			outcome = string(engine.OutcomePlanned)
		}
		line := fmt.Sprintf("%s Application %s/%s: %s [%s]", s.Verb, printer.Safe(s.App.Namespace), printer.Safe(s.App.Name), s.Why, outcome)
		if s.Message != "" {
			line += " — " + printer.Line(s.Message)
		}
		fmt.Fprintln(o.ErrOut, line)
	}
}
