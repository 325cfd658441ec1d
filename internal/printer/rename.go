package printer

import (
	"fmt"
	"io"

	"github.com/unprune/unprune/internal/engine"
)

// RenameReport is what `unprune rename` prints with -o json|yaml: a ChangeReport (kind
// RenameReport) of the tracking rewrites, and the Application writes around them, in order.
type RenameReport struct {
	ChangeReport
	From  AppRef       `json:"from"`
	To    AppRef       `json:"to"`
	Steps []RenameStep `json:"steps"`
}

// RenameStep is one write of an Application object.
type RenameStep struct {
	Verb        string `json:"verb"`
	Application AppRef `json:"application"`
	Why         string `json:"why"`
	Outcome     string `json:"outcome"`
	Message     string `json:"message,omitempty"`
}

// NewRenameReport builds a rename's document (or, kind UndoReport, the undo of one) from its change
// and the results of its run.
func NewRenameReport(kind string, meta Metadata, argo *ArgoCD, r engine.Result) RenameReport {
	c := r.Change
	doc := RenameReport{ChangeReport: NewChangeReport(kind, meta, argo, r),
		From: AppRef{c.Renaming.Old.Namespace, c.Renaming.Old.Name}, To: AppRef{c.Renaming.New.Namespace, c.Renaming.New.Name},
		Steps: stepsOf(c, r.Executed)}
	if doc.Steps == nil {
		doc.Steps = []RenameStep{}
	}
	return doc
}

// newRenameStep is one Application write and its outcome (Planned until it is sent).
func newRenameStep(s *engine.Step, d engine.Decision) RenameStep {
	outcome := string(d.Outcome)
	if outcome == "" {
		outcome = string(engine.OutcomePlanned)
	}
	return RenameStep{Verb: string(s.Kind), Application: AppRef{s.App.Namespace, s.App.Name}, Why: s.Why, Outcome: outcome, Message: d.Message}
}

// ChangeSteps prints a change's steps as they are carried out, numbered: Application writes, the
// checks of Argo CD's comparisons, the object patches (the table lists the objects) and the waits
// for a sync to end.
func ChangeSteps(w io.Writer, c *engine.Change, x *engine.Executed) {
	for i, s := range c.Steps {
		var res engine.StepResult
		if x != nil {
			res = x.Steps[i]
		}
		outcome := string(res.Outcome)
		if outcome == "" {
			outcome = string(engine.OutcomePlanned)
		}
		var line string
		switch s.Kind {
		case engine.StepPatch:
			line = fmt.Sprintf("%d. %s (%s)", i+1, s.Why, Count(phaseSize(c, s.Phase), "resource"))
		case engine.StepCheck:
			line = fmt.Sprintf("%d. check Application %s/%s: %s", i+1, Safe(s.App.Namespace), Safe(s.App.Name), s.Why)
		case engine.StepSettle:
			line = fmt.Sprintf("%d. %s (Application %s/%s)", i+1, s.Why, Safe(s.App.Namespace), Safe(s.App.Name))
		default:
			line = fmt.Sprintf("%d. %s Application %s/%s: %s", i+1, s.Kind, Safe(s.App.Namespace), Safe(s.App.Name), s.Why)
		}
		line += " [" + outcome + "]"
		if res.Mismatch != nil {
			line += " — " + Line(res.Mismatch.String())
		} else if res.Message != "" {
			line += " — " + Line(res.Message)
		}
		fmt.Fprintln(w, line)
	}
}

// phaseSize counts the objects of a change's phase.
func phaseSize(c *engine.Change, phase int) int {
	n := 0
	for _, it := range c.Items {
		if it.Phase == phase {
			n++
		}
	}
	return n
}
