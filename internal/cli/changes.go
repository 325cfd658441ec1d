package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/printer"
)

// namespacer is anything with a namespace.
type namespacer interface{ Namespace() string }

// engineError maps an engine error to an exit: a request that cannot be carried out as asked is
// bad input, said with the flags that fix it; anything else a failure. Either way nothing was
// changed.
func engineError(err error) error {
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

// changeReport is the document of kind (DetachReport, MoveReport) for a run of a changing command.
func (g *GlobalOptions) changeReport(kind string, r engine.Result) printer.ChangeReport {
	argo := g.installed.argo
	info := argo.Cluster()
	return printer.NewChangeReport(kind, g.metadata(&info), printer.NewArgoCD(argo.Namespace(), g.installed.settings.Settings), r)
}

// printChange writes a run's report: a document, or the table with each planned object's diff.
func (g *GlobalOptions) printChange(streams genericiooptions.IOStreams, output outputFlags, doc printer.ChangeReport, planned *engine.Planned) error {
	if output.out.Document() {
		return output.out.Print(streams.Out, doc, doc.Names)
	}
	if len(doc.Items) == 0 {
		// As kubectl: no rows, no header; stderr has said there is nothing to do.
		return nil
	}
	if err := printer.ChangeTable(streams.Out, output.out, doc); err != nil {
		return err
	}
	if doc.Mode == string(engine.ModePreview) {
		return printDiffs(streams.Out, streams.ErrOut, g.getenv("KUBECTL_EXTERNAL_DIFF"), planned)
	}
	return nil
}

// applyConfirmed carries a plan as far as mode says. A preview at a terminal (not a document)
// first prints the plan and asks question; a yes applies it. The journal, when one is written, is
// named with the way to undo it. It returns the mode the plan was carried out in and what was done,
// or an exit error when the user declined.
func (g *GlobalOptions) applyConfirmed(ctx context.Context, streams genericiooptions.IOStreams, output outputFlags, e *engine.Engine,
	planned *engine.Planned, mode engine.DryRun, question string, print func() error) (engine.DryRun, *engine.Applied, error) {
	if planned.Counts()[engine.OutcomePlanned] > 0 && mode == engine.DryRunClient && interactive(streams) && !output.out.Document() {
		if err := print(); err != nil {
			return mode, nil, err
		}
		ok, err := confirm(streams, question)
		if err != nil || !ok {
			fmt.Fprintln(streams.ErrOut, "Nothing was changed.")
			return mode, nil, Silent(ExitFindings)
		}
		mode = engine.DryRunNone
	}
	done, err := e.Apply(ctx, planned, mode)
	if err != nil {
		return mode, nil, failure(err)
	}
	if done.Journal != "" {
		fmt.Fprintf(streams.ErrOut, "Journal: %s (undo with: %s undo %s)\n", done.Journal, option.Program(ctx), done.Journal)
	}
	return mode, done, nil
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
