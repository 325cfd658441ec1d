package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
)

// DetachOptions are `unprune detach`'s inputs.
type DetachOptions struct {
	completed
	genericiooptions.IOStreams

	Request  engine.DetachRequest
	All      bool
	Force    bool
	Strategy string
	Scrub    bool
	Wait     bool
	Timeout  time.Duration
	Workers  int
	// AllOrNothing changes nothing when any selected object is refused or cannot be read.
	AllOrNothing bool
	// KeepManagedFields leaves argocd-controller's managedFields entries on released objects.
	KeepManagedFields bool

	selection selectionFlags
	change    changeFlags
	output    outputFlags
}

// NewDetachCommand builds `unprune detach`.
func NewDetachCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DetachOptions{IOStreams: streams, Strategy: string(plan.StrategyUntrack), Wait: true, Timeout: 2 * time.Minute, Workers: 32}
	cmd := &cobra.Command{
		Use:   "detach APP [RESOURCE...] | APP... --all | --all (-A | -l SELECTOR | --project P)",
		Short: "Release resources that require pruning from Applications, deleting nothing",
		Long: `Release resources from Argo CD Applications without deleting or otherwise changing them.

With the default strategy "untrack", unprune removes exactly the tracking metadata Argo CD reads
for your installation's settings: the instance label (only when its value is this app's instance,
or the truncated form Argo CD writes for long instances), the tracking-id annotation (only when it
names this app and this very object) and the installation-id annotation that belongs with it.
When Argo CD applied the object server-side (ServerSideApply=true), untrack also removes the entries
of its field manager, argocd-controller, from metadata.managedFields, so that another server-side
applier can take the fields over without conflicts (--keep-managed-fields leaves them). Nothing else
on the object changes. Hooks are never detached: Argo CD never prunes them, and their delete policy
needs the tracking.

With --strategy keep, tracking stays and unprune merges IgnoreExtraneous into
argocd.argoproj.io/compare-options and Prune=false,Delete=false into argocd.argoproj.io/sync-options:
the resource stays visible in the app, no longer makes it OutOfSync, no sync prunes it, and deleting
the Application with cascade keeps it.

RESOURCE is KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME as "unprune scan" prints it;
--all selects every resource of each app that requires pruning. APP is NAME or NAMESPACE/NAME
(default namespace: -n, else Argo CD's namespace); with --all, -A, -l and --project select the apps.

Nothing changes without --yes (or a confirmation at a terminal): the default is a preview with a
diff of each object's metadata (KUBECTL_EXTERNAL_DIFF is honoured). --dry-run=server sends the
patches with dryRun=All so the API server and its admission checks judge them, persisting nothing.
Each patch carries the resourceVersion it was planned from and a field manager; on a conflict
unprune re-reads and re-plans. A journal records every change before it is made; "unprune undo"
reverses it exactly. Afterwards unprune asks Argo CD for a refresh and waits for a comparison that
shows the resources released. Ctrl-C stops sending patches at once; the journal says what was done.

` + exitCodesHelp,
		Example: `  # Preview what would change
  unprune detach my-app --all

  # Let the API server check the patches, changing nothing
  unprune detach my-app Namespace/kube-system --dry-run=server

  # Do it, and wait for Argo CD to show the resources released
  unprune detach my-app --all --yes

  # Every stuck app in every namespace, one journal
  unprune detach -A --all --yes

  # Keep the resource in the app, but never prune or cascade-delete it
  unprune detach my-app Namespace/team-a --strategy keep --yes`,
		ValidArgsFunction: completeDetachArgs(f),
		RunE:              runE(f, o),
	}
	flags := cmd.Flags()
	flags.BoolVar(&o.All, "all", false, "select every resource of the app(s) that requires pruning")
	flags.BoolVar(&o.Force, "force", false, "also detach resources the app does not mark as requiring pruning")
	flags.StringVar(&o.Strategy, "strategy", o.Strategy, "untrack (remove tracking metadata) or keep (stay in the app, never pruned)")
	flags.BoolVar(&o.Scrub, "scrub-last-applied", false, "also remove the same keys from kubectl.kubernetes.io/last-applied-configuration (Argo CD ignores that copy; off by default so nothing else changes)")
	flags.BoolVar(&o.KeepManagedFields, "keep-managed-fields", false, "leave argocd-controller's entries in managedFields of objects Argo CD applied server-side (default: untrack removes them, so that another server-side applier can take the fields over without conflicts)")
	flags.BoolVar(&o.Wait, "wait", o.Wait, "after applying, refresh the app and wait until Argo CD shows the resources released")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for Argo CD")
	flags.IntVar(&o.Workers, "workers", o.Workers, "objects patched concurrently (within --qps/--burst)")
	flags.BoolVar(&o.AllOrNothing, "all-or-nothing", false, "change nothing when any selected resource is refused or cannot be read (default: release the others, exit 4)")
	_ = cmd.RegisterFlagCompletionFunc("strategy", fixedCompletion("untrack", "keep"))
	o.selection.add(cmd)
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// Validate checks arguments and flag combinations; it needs no cluster.
func (o *DetachOptions) Validate(args []string) error {
	if err := firstError(o.output.validate, o.change.validate, func() error { return o.selection.validate(&o.completed) }); err != nil {
		return err
	}
	strategy, err := plan.ParseStrategy(o.Strategy)
	if err != nil {
		return usageError("--strategy: %v", err)
	}
	switch {
	case o.Timeout <= 0:
		return usageError("--timeout must be positive")
	case o.Workers <= 0:
		return usageError("--workers must be positive")
	}
	switch {
	case o.Scrub && !o.can.StoredObjects:
		return usageError("--scrub-last-applied needs the object as the cluster stores it; Argo CD's API masks Secrets' data: leave it out, or use your kubeconfig")
	case o.change.dryRun == engine.DryRunServer && !o.can.DryRun:
		return errNoServerDryRun()
	}
	r := engine.DetachRequest{All: o.All, Force: o.Force, Strategy: strategy, ScrubLastApplied: o.Scrub, KeepManagedFields: o.KeepManagedFields}
	if o.selection.any() {
		if !o.All {
			return usageError("selecting apps with -A, -l or --project needs --all")
		}
		if len(args) > 0 {
			return usageError("name APPs, or select them with -A, -l or --project, not both")
		}
		sel := o.selection.toSelector(&o.completed, "")
		r.Selector = &sel
	} else if len(args) == 0 {
		return usageError("name the APP (and its resources, or --all), or select apps with -A, -l or --project and --all")
	}
	if err := o.parseTargets(args, &r); err != nil {
		return err
	}
	o.Request = r
	return nil
}

// parseTargets reads APP [RESOURCE...] or APP... --all.
func (o *DetachOptions) parseTargets(args []string, r *engine.DetachRequest) error {
	if r.Selector != nil {
		return nil
	}
	appArgs, resArgs := args[:1], args[1:]
	if o.All {
		appArgs, resArgs = args, nil
		for _, a := range args {
			if looksLikeResource(a) {
				return usageError("%s looks like a RESOURCE: name resources or use --all, not both", printer.Safe(a))
			}
		}
	}
	apps, err := parseApps(appArgs, &o.completed)
	if err != nil {
		return err
	}
	r.Apps = apps
	if !o.All && len(resArgs) == 0 {
		return usageError("name the resources to detach (as `unprune scan` prints them) or use --all")
	}
	for _, a := range resArgs {
		res, err := engine.ParseResourceArg(a)
		if err != nil {
			return usageError("%v", err)
		}
		r.Resources = append(r.Resources, res)
	}
	return nil
}

// Run plans, previews, and (when confirmed) applies and verifies.
func (o *DetachOptions) Run(ctx context.Context) error {
	// The apps are read while the settings are: planning needs both.
	read := &engine.AppsRead{}
	argo, s, err := o.connectReading(ctx, func(ctx context.Context, argo cluster.ArgoCD) {
		if o.Request.Selector != nil && o.Request.Selector.Namespace == "" && !o.selection.allNamespaces {
			o.Request.Selector.Namespace = argo.Namespace()
		}
		*read = engine.ReadApps(ctx, argo, o.Request.Apps, o.Request.Selector)
	})
	if err != nil {
		return err
	}
	o.Request.Read = read
	e, err := o.engine(argo, s, o.Workers)
	if err != nil {
		return err
	}
	o.Request.AllOrNothing = o.AllOrNothing
	c, err := e.PlanDetach(ctx, o.Request)
	if err != nil {
		return engineError(err)
	}
	if !o.output.out.Document() {
		fmt.Fprintf(o.ErrOut, "Argo CD in %s: %s; strategy %s\n", argo.Namespace(), printer.Line(s.String()), o.Request.Strategy)
	}
	noteNarrowed(o.ErrOut, argo, read.Narrowed)
	counts := c.Counts()
	mode := o.change.dryRun
	n, released := counts[engine.OutcomePlanned], alreadyReleased(c.Planned)
	blocked := counts[engine.OutcomeRefused]+counts[engine.OutcomeFailed] > 0
	switch {
	case len(c.Items) == 0:
		fmt.Fprintf(o.ErrOut, "Nothing to do: no resource of %s requires pruning.\n", appsText(c.Planned))
	case blocked && o.AllOrNothing:
		fmt.Fprintln(o.ErrOut, "--all-or-nothing: some resources are refused or failed, so nothing is changed.")
	case n == 0 && released > 0 && mode != engine.DryRunNone:
		fmt.Fprintf(o.ErrOut, "Nothing to change: %d resources are released already; Argo CD has not compared since. Add --yes to wait for it.\n", released)
	case n == 0 && released == 0 && !blocked:
		fmt.Fprintln(o.ErrOut, "Nothing to change: the selected resources carry no tracking metadata of their apps.")
	}
	return o.runChange(ctx, o.IOStreams, o.output, mode, e, c, changeCommand{kind: "DetachReport", argo: true,
		question: fmt.Sprintf("Detach %d resources from %s (strategy %s)? [y/N] ", n, appsText(c.Planned), c.Strategy),
		wait:     o.Wait && (n > 0 || released > 0), timeout: o.Timeout, waitAlso: released > 0,
		waitLine: fmt.Sprintf("Waiting up to %s for Argo CD to show the resources released...", o.Timeout)})
}

// looksLikeResource tells a RESOURCE argument from NAMESPACE/NAME: namespaces are DNS labels
// (lowercase letters, digits, '-'), while kinds are CamelCase and may carry a group (Deployment.apps).
func looksLikeResource(arg string) bool {
	first, _, found := strings.Cut(arg, "/")
	return found && (strings.ContainsAny(first, "ABCDEFGHIJKLMNOPQRSTUVWXYZ.") || strings.Count(arg, "/") > 1)
}

// alreadyReleased counts the objects an earlier run (or someone else) released before Argo CD
// compared the app again.
func alreadyReleased(planned *engine.Planned) int {
	n := 0
	for _, it := range planned.Items {
		if it.Outcome == engine.OutcomeUnchanged && it.Reason == engine.ReasonAlreadyReleased {
			n++
		}
	}
	return n
}

func appsText(planned *engine.Planned) string {
	switch len(planned.Apps) {
	case 0:
		return "the selected Applications"
	case 1:
		return "Application " + planned.Apps[0].Ref()
	}
	return fmt.Sprintf("%d Applications", len(planned.Apps))
}
