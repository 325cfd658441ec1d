package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
)

// namespacer is anything with a namespace.
type namespacer interface{ Namespace() string }

// engineError maps an engine error to an exit: a request that cannot be carried out as asked is
// bad input; anything else a failure. Either way nothing was changed.
func engineError(err error) error {
	var u *engine.UsageError
	if errors.As(err, &u) {
		return usageError("%v", u.Err)
	}
	return failure(err)
}

// changeReport is the document of kind (DetachReport, MoveReport) for a run of a changing command.
func (g *GlobalOptions) changeReport(kind string, run *engine.Run) printer.ChangeReport {
	argo := g.installed.argo
	info := argo.Cluster()
	return printer.NewChangeReport(kind, g.metadata(&info), printer.NewArgoCD(argo.Namespace(), g.installed.settings.Settings), run)
}

// printChange writes a run's report: a document, or the table with each planned object's diff.
func (g *GlobalOptions) printChange(streams genericiooptions.IOStreams, output outputFlags, doc printer.ChangeReport, run *engine.Run) error {
	if output.out.Document() {
		return output.out.Print(streams.Out, doc, doc.Names)
	}
	if err := printer.ChangeTable(streams.Out, output.out, doc); err != nil {
		return err
	}
	if run.Mode == engine.ModePreview {
		return printDiffs(streams.Out, streams.ErrOut, g.getenv("KUBECTL_EXTERNAL_DIFF"), run)
	}
	return nil
}

// applyConfirmed carries a planned run as far as mode says. A preview at a terminal (not a
// document) first prints the run and asks question; a yes applies it. The journal, when one is
// written, is named with the way to undo it. It returns the mode the run was carried out in, or an
// exit error when the user declined.
func (g *GlobalOptions) applyConfirmed(ctx context.Context, streams genericiooptions.IOStreams, output outputFlags, e *engine.Engine,
	run *engine.Run, mode engine.DryRun, question string, print func() error) (engine.DryRun, error) {
	if run.Counts()[engine.OutcomePlanned] > 0 && mode == engine.DryRunClient && interactive(streams) && !output.out.Document() {
		if err := print(); err != nil {
			return mode, err
		}
		ok, err := confirm(streams, question)
		if err != nil || !ok {
			fmt.Fprintln(streams.ErrOut, "Nothing was changed.")
			return mode, Silent(ExitFindings)
		}
		mode = engine.DryRunNone
	}
	if err := e.Apply(ctx, run, mode); err != nil {
		return mode, failure(err)
	}
	if run.Journal != "" {
		fmt.Fprintf(streams.ErrOut, "Journal: %s (undo with: unprune undo %s)\n", run.Journal, run.Journal)
	}
	return mode, nil
}

// printDiffs shows, for every planned object, a unified diff of its metadata before and after (or
// runs KUBECTL_EXTERNAL_DIFF over the two, as kubectl diff does).
func printDiffs(out, errOut io.Writer, external string, run *engine.Run) error {
	files := map[string][2][]string{}
	var order []string
	for _, it := range run.Items {
		if it.Outcome != engine.OutcomePlanned || it.Live == nil {
			continue
		}
		name := it.Ref.String()
		if it.App != nil {
			name = it.App.Ref() + " " + name
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
