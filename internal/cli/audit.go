package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/scan"
)

// AuditOptions are `unprune audit`'s inputs.
type AuditOptions struct {
	completed
	genericiooptions.IOStreams

	Apps         []engine.AppName
	Probe        bool
	ControllerAs string
	FailOn       string
	// Budget is the installation's deletion budget (the watch's), for apps and projects that set
	// none; -1: unknown, and only their own budgets are shown.
	Budget int

	selection selectionFlags
	output    outputFlags
}

// NewAuditCommand builds `unprune audit`.
func NewAuditCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &AuditOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "audit [APP...]",
		Short: "Show what a prune would delete right now, and which deletions nothing guards",
		Long: `Show every resource a prune would delete:

  now                    resources that require pruning: a sync with PRUNE ticked deletes them, even
                         when the app's automated policy says prune: false
  when removed from git  high-risk resources of apps with automated prune: the next revert deletes them

with what goes with each deletion (the objects in a Namespace, the custom resources of a CRD), and the
guard that would stop it: an immortal namespace, Prune=false or Prune=confirm on the object, the app's
own syncOptions (only from Argo CD v3.4, and soft: a sync request with its own options replaces them),
or the admission policy "unprune guard policy" installs. Hooks are never pruned and are left out.

Other admission policies and webhooks are only seen with --probe, which asks the API server with a
DELETE carrying dryRun=All: the API server authorizes it, runs admission and answers, deleting nothing.
unprune never deletes a resource: besides this dry run, its only DELETE is of an Application object
whose finalizers it removed first ("unprune rename" and its undo). Only a denial that
would also stop Argo CD's controller counts: unprune probes as the controller when it may impersonate
it (--controller-as, default its service account when it exists), else as you — and when RBAC refuses
you, the probe cannot judge and says so. With --as, unprune already acts as another user and cannot act
as the controller too (Kubernetes does not chain impersonation): it probes as that user.

Where the deletion budget runs (docs/budget.md), each app whose prunes it would hold back is named:
more deletions than the app's budget (its own or its project's annotation, else the installation's
default that --deletion-budget tells audit), or a high-risk one, wait for "unprune guard approve".

--fail-on high|any makes the exit code 1 when unguarded (or unjudged) deletions of that risk exist, for CI.

` + exitCodesHelp,
		Example: `  unprune audit -A
  unprune audit -A --probe -o wide
  unprune audit -A --fail-on high -o json`,
		ValidArgsFunction: completeApps(f),
		RunE:              runE(f, o),
	}
	o.selection.add(cmd)
	o.output.add(cmd, true)
	cmd.Flags().BoolVar(&o.Probe, "probe", false, "ask the API server with a dry-run DELETE (dryRun=All; nothing is deleted) whether each deletion would be denied")
	cmd.Flags().StringVar(&o.ControllerAs, "controller-as", "", "user Argo CD's application controller acts as, to probe as it (default: its service account, when it exists)")
	cmd.Flags().StringVar(&o.FailOn, "fail-on", "", "exit 1 when unguarded deletions exist: high (high-risk ones) or any")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", fixedCompletion("high", "any"))
	cmd.Flags().IntVar(&o.Budget, "deletion-budget", -1, "the installation's deletion budget (unprune watch --deletion-budget), for apps and projects that set none; unset: only their own budgets are shown")
	return cmd
}

// Validate checks flags; it needs no cluster.
func (o *AuditOptions) Validate(args []string) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	if o.Budget < -1 {
		return usageError("--deletion-budget=%d: give the watch's budget, 0 or more", o.Budget)
	}
	switch o.FailOn {
	case "", "high", "any":
	default:
		return usageError("--fail-on=%q: use high or any", o.FailOn)
	}
	apps, err := o.selection.apps(args, &o.completed)
	if err != nil {
		return err
	}
	o.Apps = apps
	return nil
}

// Run audits and prints.
func (o *AuditOptions) Run(ctx context.Context) error {
	argo, s, apps, scope, err := o.connectApps(ctx, o.ErrOut, o.Apps, o.selection)
	if err != nil {
		return err
	}
	controllerAs := o.ControllerAs
	if o.Probe && controllerAs == "" {
		controllerAs = argo.ControllerIdentity(ctx)
	}
	if o.Probe && !o.can.DryRun {
		fmt.Fprintln(o.ErrOut, "warning: --probe needs the clusters' own API (a dry-run DELETE), which Argo CD's API does not offer: no probes with --via argocd")
	}
	rep, err := audit.Run(ctx, argo, s, apps, audit.Options{Probe: o.Probe, ControllerAs: controllerAs, Upgrade: true,
		Filter: o.installed.settings.KnownFilter()})
	if err != nil {
		return failure(fmt.Errorf("audit interrupted; nothing was changed: %w", err))
	}
	info := argo.Cluster()
	doc := printer.NewAuditReport(o.metadata(&info), printer.NewArgoCD(argo.Namespace(), s), rep)
	doc.Budgets = o.budgets(ctx, argo, rep, apps)
	// Moves prepared on this machine and not finished: guards nobody would otherwise remember.
	if store, err := o.journals(); err == nil {
		prepared, warnings := scan.FindPrepared(ctx, argo, s, apps, store.AllPreparations())
		doc.Prepared, rep.Warnings = printer.NewPrepared(prepared), append(rep.Warnings, warnings...)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", printer.Line(w))
	}
	if o.output.out.Document() {
		if err := o.output.out.Print(o.Out, doc, doc.Names); err != nil {
			return err
		}
	} else {
		if line := s.RulesLine(); line != "" {
			fmt.Fprintln(o.ErrOut, printer.Line(line))
		}
		if err := o.table(doc, rep, len(apps), scope); err != nil {
			return err
		}
		for _, line := range printer.PreparedLines(o.program, doc.Prepared) {
			fmt.Fprintln(o.ErrOut, "note:", line)
		}
	}
	if (o.FailOn == "high" && doc.Summary.UnguardedHigh > 0) || (o.FailOn == "any" && doc.Summary.Unguarded > 0) {
		return Silent(ExitFindings)
	}
	return nil
}

func (o *AuditOptions) table(doc printer.AuditReport, rep audit.Report, apps int, scope string) error {
	for _, s := range rep.Softened {
		fmt.Fprintln(o.ErrOut, "app-level sync options:", printer.Line(s))
	}
	if len(doc.Items) == 0 {
		fmt.Fprintf(o.ErrOut, "No prune would delete anything (%s audited in %s).\n", printer.Count(apps, "Application"), scope)
		return nil
	}
	if err := printer.AuditTable(o.Out, o.output.out, doc); err != nil {
		return err
	}
	guardThem := ""
	if doc.Summary.Unguarded > 0 {
		guardThem = fmt.Sprintf(" Guard them: %[1]s guard policy --apply; %[1]s guard protect|confirm RESOURCE...", o.program)
	}
	fmt.Fprintf(o.ErrOut, "%s a prune could make, %d unguarded (%d high-risk).%s\n",
		printer.Count(len(doc.Items), "deletion"), doc.Summary.Unguarded, doc.Summary.UnguardedHigh, guardThem)
	if doc.Summary.Inconclusive > 0 {
		fmt.Fprintf(o.ErrOut, "%d probes could not judge (see PROBE with -o wide): they count as unguarded.\n", doc.Summary.Inconclusive)
	}
	for _, b := range doc.Budgets {
		fmt.Fprintln(o.ErrOut, "deletion budget:", printer.Line(b.Line()))
	}
	return nil
}

// budgets are the deletion budget's view of each audited app whose next sync with prune deletes
// something and whose budget is known: the app's or its project's annotation, else --deletion-budget.
// The count is budget.Decide's: the rows a prune deletes or Argo CD's approval lets it delete. Each
// project is read once.
func (o *AuditOptions) budgets(ctx context.Context, argo cluster.ArgoCD, rep audit.Report, apps []argocd.Application) []printer.AuditBudget {
	type count struct{ deletes, high int }
	counts := map[string]*count{}
	for _, r := range rep.Rows {
		if r.When != audit.Now || r.Resource.Hook || !r.Deletes() {
			continue
		}
		c := counts[r.App.Ref()]
		if c == nil {
			c = &count{}
			counts[r.App.Ref()] = c
		}
		c.deletes++
		if r.Risk == risk.High {
			c.high++
		}
	}
	projects := map[string]map[string]string{}
	var out []printer.AuditBudget
	for _, app := range apps {
		c := counts[app.Ref()]
		if c == nil {
			continue
		}
		project, read := projects[app.Project]
		if !read {
			if p, err := argo.Project(ctx, app.Project); err == nil {
				project = p.Annotations
			}
			projects[app.Project] = project
		}
		limit, err := budget.LimitOf(app.Annotations, project, app.Project, o.Budget)
		if limit.Max < 0 {
			continue
		}
		b := printer.AuditBudget{Application: printer.AppRef{Namespace: app.Namespace, Name: app.Name}, Limit: limit.Max, Source: limit.Source,
			Deletes: c.deletes, HighRisk: c.high, Held: c.deletes > limit.Max || c.high > 0,
			Approvals: len(budget.Approved(app.Annotations)), Approve: budget.ApproveCommand(app)}
		if err != nil {
			b.Source += " (" + err.Error() + ")"
		}
		out = append(out, b)
	}
	return out
}
