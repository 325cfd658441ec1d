package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// engineError maps an engine error to an exit: a request that cannot be carried out as asked is
// bad input, said with the flags that fix it; a request a safety rule refuses as a whole is exit 3;
// anything else a failure. Either way nothing was changed.
func engineError(err error) error {
	var refused *engine.RefusedError
	if errors.As(err, &refused) {
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("%w; nothing was changed", refused.Err)}
	}
	var r *engine.RequestError
	if !errors.As(err, &r) {
		return failure(err)
	}
	switch r.Kind {
	case engine.ResourcesForOneApp:
		return usageError("name resources for one app only; for several apps use --all")
	case engine.SameApp:
		return usageError("--to names the app the resources are in already: name another app")
	case engine.UnlistedResource:
		return usageError("%v (--force reads an unlisted object anyway)", r.Err)
	}
	return usageError("%v", r.Err)
}

// changeCommand is what a changing verb tells the one flow every changing command runs through
// (runChange): how to name and print its report, what to ask, and how long to wait for Argo CD.
type changeCommand struct {
	// kind is the report's kind (DetachReport, MoveReport, RenameReport, GuardReport, UndoReport).
	kind string
	// question is asked at a terminal before a preview's plan is applied.
	question string
	// wait asks Argo CD, once every step succeeded, to show the change done within timeout.
	wait    bool
	timeout time.Duration
	// waitLine is the stderr line while waiting.
	waitLine string
	// cluster names the report's cluster instead of Argo CD's (guard); argo is false for reports
	// that describe no Argo CD installation (guard, undo).
	cluster *cluster.Info
	argo    bool
	// journal is the journal an undo restores (the report names it instead of one of its own).
	journal string
	// waitAlso waits even though no object changed (objects released by an earlier run).
	waitAlso bool
	// after prints verb-specific lines once the run is reported (stderr), when not a document.
	after func(doc printer.ChangeReport)
	// previewLine replaces the line after a preview that says how to go on.
	previewLine string
	// refused words what a refusal left undone ("nothing was moved"), instead of "nothing was
	// changed".
	refused string
}

// runChange is the flow under every changing command: show the plan and, at a terminal, ask; run
// the change (engine.Execute: a preview, a server dry run, or the steps with their checks); wait
// for Argo CD to show it done; print the report; and decide the exit code (changeExit).
func (c *completed) runChange(ctx context.Context, streams genericiooptions.IOStreams, output outputFlags, mode engine.DryRun, e *engine.Engine, change *engine.Change, cc changeCommand) error {
	r := engine.ResultOf(change, nil, nil)
	if change.Counts()[engine.OutcomePlanned] > 0 && mode == engine.DryRunClient && interactive(streams) && !output.out.Document() && !change.Refused() {
		if err := c.printChange(streams, output, cc, r); err != nil {
			return err
		}
		ok, err := confirm(streams, cc.question)
		if err != nil || !ok {
			fmt.Fprintln(streams.ErrOut, "Nothing was changed.")
			return Silent(ExitFindings)
		}
		mode = engine.DryRunNone
	}
	x, err := e.Execute(ctx, change, mode)
	if err != nil {
		return failure(err)
	}
	defer x.WaitJournal()
	r = engine.ResultOf(change, x, nil)
	if x.Journal != "" {
		fmt.Fprintf(streams.ErrOut, "Journal: %s (undo with: %s undo %s)\n", x.Journal, c.program, x.Journal)
	}
	verified := cc.wait && mode == engine.DryRunNone && x.Stopped < 0 && !x.Interrupted && (x.Counts()[engine.OutcomeApplied] > 0 || cc.waitAlso || x.Wrote())
	if verified {
		fmt.Fprintln(streams.ErrOut, cc.waitLine)
		r.Verified = e.VerifyChange(ctx, change, x, cc.timeout)
	}
	rep := c.changeReport(cc, r)
	if err := c.printReport(streams, output, cc, r, rep); err != nil {
		return err
	}
	if !output.out.Document() {
		fmt.Fprint(streams.Out, printer.VerificationText(c.program, rep.ChangeReport))
		if cc.previewLine != "" && rep.Mode == string(engine.ModePreview) {
			if rep.Summary.Planned > 0 || len(rep.steps) > 0 {
				fmt.Fprintln(streams.ErrOut, cc.previewLine)
			}
		} else {
			sayMode(streams.ErrOut, rep.ChangeReport)
		}
		if cc.after != nil {
			cc.after(rep.ChangeReport)
		}
	}
	x.WaitJournal()
	if err := r.Done().JournalErr; err != nil {
		fmt.Fprintln(streams.ErrOut, "warning: the journal could not record everything:", err)
	}
	code, msg := changeExit(c.program, rep.ChangeReport, rep.steps, verified)
	if s := rep.Summary; code == ExitRefused && s.Refused > 0 && cc.refused != "" {
		msg = fmt.Sprintf("%d of %d resources refused (see above); %s", s.Refused, s.Total, cc.refused)
	}
	if msg != "" {
		return &ExitError{Code: code, Err: errors.New(msg)}
	}
	return Silent(code)
}

// changeReport is a run's report: the document -o prints, the ChangeReport in it, and its
// Application writes.
type changeReport struct {
	printer.ChangeReport
	doc   any
	names func() []string
	steps []printer.RenameStep
}

func (c *completed) changeReport(cc changeCommand, r engine.Result) changeReport {
	info := cc.cluster
	var argo *printer.ArgoCD
	if cc.argo {
		in := c.installed.argo.Cluster()
		info = &in
		argo = printer.NewArgoCD(c.installed.argo.Namespace(), c.installed.settings.Settings)
	}
	if r.Change.Renaming != nil {
		doc := printer.NewRenameReport(cc.kind, c.metadata(info), argo, r)
		if cc.journal != "" {
			doc.Journal = cc.journal
		}
		return changeReport{ChangeReport: doc.ChangeReport, doc: doc, names: doc.Names, steps: doc.Steps}
	}
	doc := printer.NewChangeReport(cc.kind, c.metadata(info), argo, r)
	if cc.journal != "" {
		doc.Journal = cc.journal
	}
	return changeReport{ChangeReport: doc, doc: doc, names: doc.Names}
}

// printChange writes a run's report: a document, or the steps, the table and each planned object's
// diff.
func (c *completed) printChange(streams genericiooptions.IOStreams, output outputFlags, cc changeCommand, r engine.Result) error {
	return c.printReport(streams, output, cc, r, c.changeReport(cc, r))
}

// printReport is printChange with the run's report built already.
func (c *completed) printReport(streams genericiooptions.IOStreams, output outputFlags, cc changeCommand, r engine.Result, rep changeReport) error {
	if output.out.Document() {
		return output.out.Print(streams.Out, rep.doc, rep.names)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(streams.ErrOut, "warning:", printer.Line(w))
	}
	if len(r.Change.Steps) > 1 {
		printer.ChangeSteps(streams.Out, r.Change, r.Executed)
	}
	if len(rep.Items) > 0 {
		if err := printer.ChangeTable(streams.Out, output.out, rep.ChangeReport); err != nil {
			return err
		}
	}
	// As kubectl: no rows, no header; stderr has said there is nothing to do.
	if x := r.Executed; x != nil && x.RollbackChange != nil {
		fmt.Fprintf(streams.Out, "Putting back what this run changed, as its journal says:\n")
		printer.ChangeSteps(streams.Out, x.RollbackChange, x.Rollback)
		rb := printer.NewChangeReport(cc.kind, rep.Metadata, nil, engine.ResultOf(x.RollbackChange, x.Rollback, nil))
		for _, w := range rb.Warnings {
			fmt.Fprintln(streams.ErrOut, "warning:", printer.Line(w))
		}
		var put []printer.ChangeItem
		for _, it := range rb.Items {
			if it.Outcome != string(engine.OutcomeUnchanged) {
				put = append(put, it)
			}
		}
		if rb.Items = put; len(put) > 0 {
			if err := printer.ChangeTable(streams.Out, output.out, rb); err != nil {
				return err
			}
		}
	}
	if rep.Mode == string(engine.ModePreview) && len(rep.Items) > 0 {
		return printDiffs(streams.Out, streams.ErrOut, c.session.Getenv("KUBECTL_EXTERNAL_DIFF"), r.Planned)
	}
	return nil
}

// changeExit decides a changing command's exit code from what its run did, and the line that says
// it. It is pure: the table of outcomes is the product's contract.
//
// A check of Argo CD's comparison that did not pass stops the run before the step it guards: when
// the run had changed something, its journal was undone (the rollback) — exit 3 when all was put
// back, 4 when not; when it had changed nothing, exit 3. An Application write that failed is 4
// after other changes, else 2; a rename's failed step is rolled back as a failed check is, with
// the same codes. The objects' outcomes decide the rest (runExit).
func changeExit(program string, doc printer.ChangeReport, steps []printer.RenameStep, verify bool) (int, string) {
	failed, ok := failedCheck(doc.Checks)
	changed := doc.Summary.Applied+doc.Summary.Restored > 0 || stepsApplied(steps)
	switch {
	case ok && doc.Rollback != nil && doc.Rollback.Complete:
		return ExitRefused, fmt.Sprintf("%s; so everything this run changed was put back as its journal %s says, and nothing was deleted", checkLine(failed), doc.Journal)
	case ok && doc.Rollback != nil:
		return ExitPartial, fmt.Sprintf("%s; putting back what this run changed stopped (%s): nothing was deleted; undo with: %s undo %s", checkLine(failed), rollbackWhy(doc.Rollback), program, doc.Journal)
	case ok && changed:
		return ExitPartial, fmt.Sprintf("%s; the steps after it were not run (see above): the journal %s says what was changed", checkLine(failed), doc.Journal)
	case ok:
		return ExitRefused, checkLine(failed) + "; nothing was changed"
	}
	switch {
	case doc.Rollback != nil && doc.Rollback.Complete:
		return ExitRefused, fmt.Sprintf("%s; so everything this run changed was put back as its journal %s says, and nothing was deleted", failedLine(doc, steps), doc.Journal)
	case doc.Rollback != nil:
		return ExitPartial, fmt.Sprintf("%s; putting back what this run changed stopped (%s): nothing was deleted; undo with: %s undo %s",
			failedLine(doc, steps), rollbackWhy(doc.Rollback), program, doc.Journal)
	}
	if i := failedStep(steps); i >= 0 {
		s := steps[i]
		if changed {
			return ExitPartial, fmt.Sprintf("%s Application %s/%s failed: %s; undo with: %s undo %s", s.Verb, s.Application.Namespace, s.Application.Name, s.Message, program, doc.Journal)
		}
		return ExitFailure, fmt.Sprintf("%s Application %s/%s failed: %s; nothing was changed", s.Verb, s.Application.Namespace, s.Application.Name, s.Message)
	}
	if stepsApplied(steps) && doc.Summary.Failed+doc.Summary.NotAttempted > 0 {
		// runExit counts only the objects: the Application writes before them were made.
		s := doc.Summary
		return ExitPartial, fmt.Sprintf("%d of %d tracking rewrites failed (see above) after the Application writes above were made; undo with: %s undo %s",
			s.Failed+s.NotAttempted, s.Total, program, doc.Journal)
	}
	code, msg := runExit(doc, verify)
	if len(steps) > 0 && (code == ExitOK || code == ExitFindings) && doc.Mode != string(engine.ModeApply) && doc.Summary.Refused+doc.Summary.Failed == 0 {
		// A preview or dry run of Application writes has changes to make even with no object.
		code = ExitFindings
	}
	return code, msg
}

// failedLine says which step of a rename failed, when no check did: an Application write, the
// tracking rewrites, or a wait.
func failedLine(doc printer.ChangeReport, steps []printer.RenameStep) string {
	if i := failedStep(steps); i >= 0 {
		s := steps[i]
		return fmt.Sprintf("%s Application %s/%s failed: %s", s.Verb, s.Application.Namespace, s.Application.Name, s.Message)
	}
	if n := doc.Summary.Failed + doc.Summary.NotAttempted; n > 0 {
		return fmt.Sprintf("%d of %d tracking rewrites failed (see above)", n, doc.Summary.Total)
	}
	return "a step failed (see above)"
}

// rollbackWhy says why putting a run back stopped.
func rollbackWhy(rb *printer.Rollback) string {
	if rb.Message != "" {
		return rb.Message
	}
	return fmt.Sprintf("%d objects could not be put back", rb.Failed+rb.NotAttempted)
}

// failedCheck is the first check that did not pass.
func failedCheck(checks []printer.Check) (printer.Check, bool) {
	for _, c := range checks {
		if c.Outcome == string(engine.OutcomeFailed) {
			return c, true
		}
	}
	return printer.Check{}, false
}

// checkLine says what a failed check found.
func checkLine(c printer.Check) string {
	if c.Reason == engine.ReasonNotCompared {
		return c.Message + ", so it did not show that the next step deletes nothing"
	}
	return fmt.Sprintf("Argo CD's comparison of Application %s/%s did not show what the next step needs (see above)", c.Application.Namespace, c.Application.Name)
}

func stepsApplied(steps []printer.RenameStep) bool {
	for _, s := range steps {
		if s.Outcome == string(engine.OutcomeApplied) {
			return true
		}
	}
	return false
}

func failedStep(steps []printer.RenameStep) int {
	for i, s := range steps {
		if s.Outcome == string(engine.OutcomeFailed) {
			return i
		}
	}
	return -1
}

// printDiffs shows, for every planned object, a unified diff of its metadata before and after (or
// runs KUBECTL_EXTERNAL_DIFF over the two, as kubectl diff does).
func printDiffs(out, errOut io.Writer, external string, planned *engine.Planned) error {
	files := map[string][2][]string{}
	var order []string
	for _, it := range planned.Items {
		if it.Outcome != engine.OutcomePlanned || it.Live == nil {
			continue
		}
		name := it.Ref.String()
		if it.App != nil {
			name = it.App.Ref() + " " + name
		}
		if _, seen := files[name]; seen {
			// A move's second phase on the same object: its changes join the first's.
			f := files[name]
			f[1] = printer.MetadataLines(it.Live.Labels, it.Live.Annotations, append(changesOf(planned, name), it.Plan.Changes...))
			files[name] = f
			continue
		}
		before := printer.MetadataLines(it.Live.Labels, it.Live.Annotations, nil)
		after := printer.MetadataLines(it.Live.Labels, it.Live.Annotations, it.Plan.Changes)
		files[name] = [2][]string{before, after}
		order = append(order, name)
	}
	if len(order) == 0 {
		return nil
	}
	if external != "" {
		return printer.ExternalDiff(out, errOut, external, files)
	}
	for _, name := range order {
		fmt.Fprintln(out)
		fmt.Fprint(out, printer.UnifiedDiff(printer.Safe(name), files[name][0], files[name][1]))
	}
	return nil
}

// changesOf are the planned changes of the first item named name.
func changesOf(planned *engine.Planned, name string) []journal.Change {
	for _, it := range planned.Items {
		n := it.Ref.String()
		if it.App != nil {
			n = it.App.Ref() + " " + n
		}
		if n == name && it.Outcome == engine.OutcomePlanned {
			return it.Plan.Changes
		}
	}
	return nil
}

// The lines after a run that changed nothing on purpose, saying what to run next.
const (
	previewOnly  = "Preview only: nothing was changed. Check with the API server: --dry-run=server. Apply: --yes."
	serverDryRun = "Server-side dry run: the API server accepted every patch; nothing was changed. Apply: --yes."
)

// sayMode writes, after a preview with changes to make and nothing refused, or a server-side dry
// run the API server accepted whole, that nothing was changed and how to go on.
func sayMode(w io.Writer, doc printer.ChangeReport) {
	s := doc.Summary
	switch doc.Mode {
	case string(engine.ModePreview):
		if s.Planned > 0 && s.Refused+s.Failed == 0 {
			fmt.Fprintln(w, previewOnly)
		}
	case string(engine.ModeServerDryRun):
		if s.Failed == 0 && s.Refused == 0 {
			fmt.Fprintln(w, serverDryRun)
		}
	}
}
