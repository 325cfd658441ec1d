package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/scan"
)

// ScanOptions are `unprune scan`'s inputs.
type ScanOptions struct {
	completed
	genericiooptions.IOStreams

	Apps      []engine.AppName
	selection selectionFlags
	output    outputFlags
}

// NewScanCommand builds `unprune scan`.
func NewScanCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ScanOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "scan [APP...]",
		Short: "List Applications stuck on resources that require pruning",
		Long: `List every Argo CD Application with resources that "require pruning" (gone from git, still
live), and for each resource: the cluster it lives in, the tracking metadata on the live object,
whether the app prunes automatically, how dangerous a prune would be, and what already guards it.
Hooks are left out: Argo CD lists every live hook as requiring pruning, but never prunes them.

Applications are the APPs named (NAME or NAMESPACE/NAME), else those of Argo CD's namespace, of
-n NAMESPACE, or of all namespaces with -A, narrowed by -l SELECTOR and --project.

` + exitCodesHelp,
		Example: `  # Stuck apps in Argo CD's namespace
  unprune scan

  # Across all namespaces, as JSON for a script
  unprune scan -A -o json

  # Only the names of the resources
  unprune scan -A -o jsonpath='{.items[*].resource.name}'`,
		ValidArgsFunction: completeApps(f),
		RunE:              runE(f, o),
	}
	o.selection.add(cmd)
	o.output.add(cmd, true)
	return cmd
}

// Validate checks flags; it needs no cluster.
func (o *ScanOptions) Validate(args []string) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	apps, err := o.selection.apps(args, &o.completed)
	if err != nil {
		return err
	}
	o.Apps = apps
	return nil
}

// Run scans and prints. The exit code is 1 when stuck apps were found.
func (o *ScanOptions) Run(ctx context.Context) error {
	argo, s, apps, scope, err := o.connectApps(ctx, o.ErrOut, o.Apps, o.selection)
	if err != nil {
		return err
	}
	rep, err := scan.Run(ctx, argo, s, apps)
	if err != nil {
		return failure(fmt.Errorf("scan interrupted after reading %d Applications; nothing was changed: %w", len(apps), err))
	}
	// Moves prepared on this machine and not finished: nothing else would say so.
	if store, err := o.journals(); err == nil {
		var warnings []string
		rep.Prepared, warnings = scan.FindPrepared(ctx, argo, s, apps, store.AllPreparations())
		rep.Warnings = append(rep.Warnings, warnings...)
	}
	info := argo.Cluster()
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", printer.Line(w))
	}
	switch {
	case o.output.out.Format == printer.JSON:
		// Item by item: a scan of thousands of apps never holds its whole document in memory.
		if err := printer.ScanJSON(o.Out, o.metadata(&info), rep); err != nil {
			return err
		}
	case o.output.out.Document():
		doc := printer.NewScanReport(o.metadata(&info), rep)
		if err := o.output.out.Print(o.Out, doc, doc.Names); err != nil {
			return err
		}
	default:
		fmt.Fprintf(o.ErrOut, "Argo CD in namespace %s: %s\n", argo.Namespace(), printer.Line(s.String()))
		if line := s.RulesLine(); line != "" {
			fmt.Fprintln(o.ErrOut, printer.Line(line))
		}
		doc := printer.NewScanReport(o.metadata(&info), rep)
		if len(rep.Findings) == 0 {
			fmt.Fprintf(o.ErrOut, "No Application requires pruning (%d scanned in %s).\n", len(apps), scope)
		} else {
			if err := printer.ScanTable(o.Out, o.output.out, doc); err != nil {
				return err
			}
			fmt.Fprintf(o.ErrOut, "%d of %d Applications have resources that require pruning. Release them with: %s detach APP --all\n",
				doc.Summary.StuckApplications, len(apps), o.program)
		}
		for _, line := range printer.PreparedLines(o.program, doc.Prepared) {
			fmt.Fprintln(o.ErrOut, "note:", line)
		}
	}
	if len(rep.Findings)+len(rep.Prepared) > 0 {
		return Silent(ExitFindings)
	}
	return nil
}
