package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/printer"
)

// AuditOptions are `unprune audit`'s inputs.
type AuditOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams

	AllNamespaces bool
	Output        string
	Probe         bool
	FailOn        string

	format  printer.Format
	session *session
	appNS   string
}

// NewAuditCommand builds `unprune audit`.
func NewAuditCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AuditOptions{GlobalOptions: g, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show what a prune would delete right now, and which deletions nothing guards",
		Long: `Show every resource a prune would delete:

  now                    resources that require pruning: a sync with PRUNE ticked deletes them, even
                         when the app's automated policy says prune: false
  when removed from git  high-risk resources of apps with automated prune: the next revert deletes them

with what goes with each deletion (the objects in a Namespace, the custom resources of a CRD), and the
guard that would stop it: an immortal namespace, Prune=false or Prune=confirm on the object, or the
admission policy "unprune guard policy" installs. Other admission policies and webhooks are only seen
with --probe, which asks the API server with a DELETE carrying dryRun=All: the API server runs
admission and answers, and deletes nothing. That dry-run DELETE is the only DELETE unprune ever sends,
and only with --probe.

--fail-on high|any makes the exit code 1 when unguarded deletions of that risk exist, for CI.

` + exitCodesHelp,
		Example: `  unprune audit -A
  unprune audit -A --probe -o wide
  unprune audit -A --fail-on high -o json`,
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
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "audit Applications in all namespaces")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, wide, json or yaml")
	cmd.Flags().BoolVar(&o.Probe, "probe", false, "ask the API server with a dry-run DELETE (dryRun=All; nothing is deleted) whether each deletion would be denied")
	cmd.Flags().StringVar(&o.FailOn, "fail-on", "", "exit 1 when unguarded deletions exist: high (high-risk ones) or any")
	return cmd
}

// Validate checks flags; it needs no cluster.
func (o *AuditOptions) Validate() error {
	f, err := printer.ParseFormat(o.Output, printer.Table, printer.Wide, printer.JSON, printer.YAML)
	if err != nil {
		return usageError("%v", err)
	}
	o.format = f
	switch o.FailOn {
	case "", "high", "any":
	default:
		return usageError("--fail-on=%q: use high or any", o.FailOn)
	}
	if err := o.validateScope(o.AllNamespaces); err != nil {
		return err
	}
	return nil
}

// Complete connects.
func (o *AuditOptions) Complete(ctx context.Context) error {
	var err error
	if o.session, err = o.connect(ctx, o.IOStreams); err != nil {
		return err
	}
	o.appNS = o.applicationScope(o.session, o.AllNamespaces)
	return nil
}

// Run audits and prints.
func (o *AuditOptions) Run(ctx context.Context) error {
	apps, err := o.session.Client.ListApplications(ctx, o.appNS)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	disc, err := o.ConfigFlags.ToDiscoveryClient()
	if err != nil {
		return err
	}
	a := &audit.Auditor{Client: o.session.Client, Discovery: disc}
	rep := a.Run(ctx, o.session.ArgoCDNamespace, apps, audit.Options{Probe: o.Probe})
	doc := printer.NewAuditReport(rep)
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", w)
	}
	if o.format.Machine() {
		if err := printer.Document(o.Out, o.format, doc); err != nil {
			return err
		}
	} else {
		for _, s := range rep.Softened {
			fmt.Fprintln(o.ErrOut, "softened by app-level sync options (a sync request with its own options replaces them):", s)
		}
		if len(doc.Rows) == 0 {
			fmt.Fprintf(o.ErrOut, "No prune would delete anything (%d Applications audited in %s).\n", len(apps), scope(o.appNS))
		} else {
			if err := printer.AuditTable(o.Out, doc, o.format == printer.Wide); err != nil {
				return err
			}
			fmt.Fprintf(o.ErrOut, "%d deletions a prune could make, %d unguarded (%d high-risk). Guard them: unprune guard policy --apply; unprune guard protect|confirm RESOURCE...\n",
				len(doc.Rows), doc.Unguarded, doc.UnguardedHigh)
		}
	}
	if (o.FailOn == "high" && doc.UnguardedHigh > 0) || (o.FailOn == "any" && doc.Unguarded > 0) {
		return Silent(ExitFindings)
	}
	return nil
}
