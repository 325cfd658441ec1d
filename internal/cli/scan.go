package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/scan"
)

// ScanOptions are `unprune scan`'s inputs.
type ScanOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams

	AllNamespaces bool
	Output        string

	format  printer.Format
	session *session
	appNS   string
}

// NewScanCommand builds `unprune scan`.
func NewScanCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ScanOptions{GlobalOptions: g, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "List Applications stuck on resources that require pruning",
		Long: `List every Argo CD Application with resources that "require pruning" (gone from git, still
on the cluster), and for each resource: the tracking metadata on the live object, whether the app
prunes automatically, how dangerous a prune would be, and what already guards it.

Applications are read from Argo CD's namespace, or from -n NAMESPACE, or from all namespaces with -A
(apps in any namespace).

` + exitCodesHelp,
		Example: `  # Stuck apps in Argo CD's namespace
  unprune scan

  # Across all namespaces, as JSON for a script
  unprune scan -A -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(cmd.Context()); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "scan Applications in all namespaces")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, wide, json or yaml")
	return cmd
}

// Complete parses the output format and connects to the cluster.
func (o *ScanOptions) Complete(ctx context.Context) error {
	f, err := printer.ParseFormat(o.Output, printer.Table, printer.Wide, printer.JSON, printer.YAML)
	if err != nil {
		return usageError("%v", err)
	}
	o.format = f
	if o.session, err = o.connect(ctx, o.IOStreams); err != nil {
		return err
	}
	o.appNS = o.applicationScope(o.session, o.AllNamespaces)
	return nil
}

// Validate checks flag combinations.
func (o *ScanOptions) Validate() error {
	if err := o.validateScope(o.AllNamespaces); err != nil {
		return err
	}
	return nil
}

// Run scans and prints. The exit code is 1 when stuck apps were found.
func (o *ScanOptions) Run(ctx context.Context) error {
	apps, err := o.session.Client.ListApplications(ctx, o.appNS)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	rep := scan.Run(ctx, o.session.Client, o.session.Settings, o.session.ArgoCDNamespace, apps, 8)
	doc := printer.NewScanReport(rep)
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", w)
	}
	if o.format.Machine() {
		if err := printer.Document(o.Out, o.format, doc); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.ErrOut, "Argo CD in namespace %s: %s\n", o.session.ArgoCDNamespace, o.session.Settings)
		if len(doc.Findings) == 0 {
			fmt.Fprintf(o.ErrOut, "No Application requires pruning (%d scanned in %s).\n", len(apps), scope(o.appNS))
			return nil
		}
		if err := printer.ScanTable(o.Out, doc, o.format == printer.Wide); err != nil {
			return err
		}
		fmt.Fprintf(o.ErrOut, "%d of %d Applications have resources that require pruning. Release them with: unprune detach APP --all\n",
			doc.StuckApplications, len(apps))
	}
	if len(doc.Findings) > 0 {
		return Silent(ExitFindings)
	}
	return nil
}

func scope(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
