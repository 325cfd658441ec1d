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

// NewRenameReport builds a rename's document from its plan (with its Application writes) and the
// results of the later phases; steps are the outcomes of the writes (nil before they are sent).
func NewRenameReport(meta Metadata, argo *ArgoCD, rr *engine.RenameRun, r engine.Result, steps []engine.Decision) RenameReport {
	doc := RenameReport{ChangeReport: NewChangeReport("RenameReport", meta, argo, r),
		From: AppRef{rr.Old.Namespace, rr.Old.Name}, To: AppRef{rr.New.Namespace, rr.New.Name}}
	for i, s := range rr.Steps {
		var d engine.Decision
		if i < len(steps) {
			d = steps[i]
		}
		doc.Steps = append(doc.Steps, NewRenameStep(s, d))
	}
	return doc
}

// NewRenameStep is one Application write and its outcome (Planned until it is sent).
func NewRenameStep(s *engine.AppStep, d engine.Decision) RenameStep {
	outcome := string(d.Outcome)
	if outcome == "" {
		outcome = string(engine.OutcomePlanned)
	}
	return RenameStep{Verb: s.Verb, Application: AppRef{s.App.Namespace, s.App.Name}, Why: s.Why, Outcome: outcome, Message: d.Message}
}

// RenameSteps prints the Application writes, numbered in the order they are sent; the tracking
// rewrites (the table that follows) happen between steps 2 and 3.
func RenameSteps(w io.Writer, doc RenameReport) {
	n := 0
	for i, s := range doc.Steps {
		n++
		if i == 2 {
			fmt.Fprintf(w, "%d. rewrite the tracking of %s to %s (below)\n", n, Count(doc.Summary.Total, "resource"), Safe(doc.To.Name))
			n++
		}
		line := fmt.Sprintf("%d. %s Application %s/%s: %s [%s]", n, s.Verb, Safe(s.Application.Namespace), Safe(s.Application.Name), s.Why, s.Outcome)
		if s.Message != "" {
			line += " — " + Line(s.Message)
		}
		fmt.Fprintln(w, line)
	}
}
