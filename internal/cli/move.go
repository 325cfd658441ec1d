package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
)

// MoveOptions are `unprune move`'s inputs.
type MoveOptions struct {
	completed
	genericiooptions.IOStreams

	Request engine.MoveRequest
	To      string
	All     bool
	Prepare bool
	Wait    bool
	Timeout time.Duration

	change changeFlags
	output outputFlags
}

// NewMoveCommand builds `unprune move`.
func NewMoveCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MoveOptions{IOStreams: streams, Wait: true, Timeout: 2 * time.Minute}
	cmd := &cobra.Command{
		Use:   "move APP (RESOURCE... | --all) --to APP2 [--prepare]",
		Short: "Hand live resources from one Application to another, deleting nothing",
		Long: `Hand live resources from one Argo CD Application to another without deleting or recreating them.

Moving manifests from APP's source to APP2's in git is not enough: if APP syncs with prune before
APP2 takes the resources over, APP deletes them. Do it in two steps:

  1. unprune move APP RESOURCE... --to APP2 --prepare
     merges Prune=false,Delete=false into each resource's argocd.argoproj.io/sync-options (what
     "detach --strategy keep" merges), so that APP can neither prune it nor cascade-delete it, and
     shows that Argo CD's comparison of APP does not see the marks (a mark Argo CD sees it writes
     back over). Refused when the resource's manifest sets that annotation, or Argo CD applies it
     server-side, or APP syncs with Replace=true: the refusal says what holds instead.
  2. Commit: remove the manifests from APP's source, add them to APP2's. Wait until APP2 lists the
     resources (OutOfSync, with a shared-resource warning: APP still tracks them).
  3. unprune move APP RESOURCE... --to APP2
     once APP2's comparison shows it declares them, rewrites each resource's tracking (instance
     label and/or tracking-id annotation, as Argo CD writes them for APP2); once APP2's comparison
     shows it still declares them and APP's no longer lists them to prune, takes off exactly the
     sync options step 1 added (found through its journal; without one the options are left
     alone, and the report says so). When APP2's automated sync took a resource over already, only
     the marks are taken off (with --all: every resource a prepare of APP marked).

The move is refused (exit 3, nothing changed) unless APP2 declares every resource (its status lists
it, not as requiring pruning: otherwise APP2 would prune it) and APP no longer does (it lists it as
requiring pruning: otherwise APP's next sync takes it back). Both apps must deploy to the same
cluster. Hooks, objects with owners, objects being deleted, objects of another installation and
copies whose tracking names another object are refused as by detach. A check that fails after a
change puts it back as the journal says. Afterwards unprune waits until APP no longer lists the
resources and APP2 shows them Synced. "unprune undo" moves the resources back.

` + exitCodesHelp,
		Example: `  # Before the commit: keep APP from pruning what will move
  unprune move shop-old ConfigMap/shop/settings Deployment.apps/shop/api --to shop --prepare --yes

  # After the commit: hand them over
  unprune move shop-old ConfigMap/shop/settings Deployment.apps/shop/api --to shop --yes

  # Every resource of shop-old that shop declares
  unprune move shop-old --all --to shop --yes`,
		RunE: runE(f, o),
	}
	flags := cmd.Flags()
	flags.StringVar(&o.To, "to", "", "the Application (NAME or NAMESPACE/NAME) that takes the resources over")
	flags.BoolVar(&o.All, "all", false, "every resource of APP that APP2 declares (with --prepare: every resource of APP)")
	flags.BoolVar(&o.Prepare, "prepare", false, "before the commit: mark the resources Prune=false,Delete=false so that APP cannot delete them meanwhile")
	flags.BoolVar(&o.Wait, "wait", o.Wait, "after moving, refresh both apps and wait until Argo CD shows the move")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for Argo CD")
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// Validate checks arguments and flags; it needs no cluster.
func (o *MoveOptions) Validate(args []string) error {
	if err := firstError(o.output.validate, o.change.validate); err != nil {
		return err
	}
	switch {
	case o.To == "":
		return usageError("--to: name the Application that takes the resources over")
	case len(args) == 0:
		return usageError("name the APP the resources are in, and the resources (or --all)")
	case o.All && len(args) > 1:
		return usageError("name resources or use --all, not both")
	case !o.All && len(args) == 1:
		return usageError("name the resources to move (as `unprune scan` prints them) or use --all")
	case o.Timeout <= 0:
		return usageError("--timeout must be positive")
	case o.change.dryRun == engine.DryRunServer && !o.can.DryRun:
		return errNoServerDryRun()
	}
	apps, err := parseApps([]string{args[0], o.To}, &o.completed)
	if err != nil {
		return err
	}
	r := engine.MoveRequest{From: apps[0], To: apps[1], All: o.All, Prepare: o.Prepare}
	for _, a := range args[1:] {
		res, err := engine.ParseResourceArg(a)
		if err != nil {
			return usageError("%v", err)
		}
		r.Resources = append(r.Resources, res)
	}
	o.Request = r
	return nil
}

// Run plans, previews, and (when confirmed) applies and verifies. Any refusal stops the whole move:
// a half-moved set of resources is worse than none.
func (o *MoveOptions) Run(ctx context.Context) error {
	argo, s, err := o.connect(ctx)
	if err != nil {
		return err
	}
	e, err := o.engine(argo, s, 8)
	if err != nil {
		return err
	}
	e.CheckTimeout = o.Timeout
	c, err := e.PlanMove(ctx, o.Request)
	if err != nil {
		return engineError(err)
	}
	from, to := c.Apps[0].Ref(), c.Apps[1].Ref()
	counts := c.Counts()
	switch {
	case len(c.Items) == 0:
		fmt.Fprintf(o.ErrOut, "Nothing to move: %s lists no resource that %s declares, and no resource a prepare of it marked has %s taken over.\n", from, to, to)
	case counts[engine.OutcomeRefused]+counts[engine.OutcomeFailed] > 0:
		fmt.Fprintln(o.ErrOut, "Some resources are refused or could not be read, so nothing is moved.")
	}
	verb := "Move"
	if o.Prepare {
		verb = "Prepare the move of"
	}
	return o.runChange(ctx, o.IOStreams, o.output, o.change.dryRun, e, c, changeCommand{kind: "MoveReport", argo: true, refused: "nothing was moved",
		question: fmt.Sprintf("%s %d resources of %s (to %s)? [y/N] ", verb, counts[engine.OutcomePlanned], from, to),
		wait:     o.Wait && !o.Prepare, timeout: o.Timeout, waitLine: fmt.Sprintf("Waiting up to %s for Argo CD to show the move...", o.Timeout),
		after: func(doc printer.ChangeReport) {
			if o.Prepare && doc.Mode == string(engine.ModeApply) && doc.Summary.Applied > 0 && doc.Rollback == nil && checksPassed(doc) {
				fmt.Fprintf(o.ErrOut, "Prepared: %s can no longer prune or cascade-delete these resources, and Argo CD does not see the marks. Now commit the move of their manifests, "+
					"wait until %s lists them, then run the same command without --prepare.\n", from, to)
			}
		}})
}

// checksPassed reports a run all of whose checks passed.
func checksPassed(doc printer.ChangeReport) bool {
	_, failed := failedCheck(doc.Checks)
	return !failed
}
