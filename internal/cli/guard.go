package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/guard"
)

// NewGuardCommand builds `unprune guard` and its subcommands.
func NewGuardCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "guard",
		Short: "Put guards in place so that no prune can delete what must stay",
		Long: `Guards stop a prune from deleting an object even when someone syncs with PRUNE ticked:

  guard policy    a ValidatingAdmissionPolicy denying DELETE of protected Namespaces (and optionally
                  CRDs, PersistentVolumes or any other kind), for every user, Argo CD included, but a
                  break-glass group
  guard protect   label objects unprune.dev/protected=true, which that policy protects
  guard confirm   merge Prune=confirm into the objects' argocd.argoproj.io/sync-options, so Argo CD
                  prunes them only after the deletion is approved on the Application (Argo CD v2.14+)
  guard budget    set an app's (or a project's) deletion budget: the most objects one sync or
                  cascade may delete before the budget's webhook holds them all back
  guard approve   approve exactly the deletions Argo CD's comparison shows now for an app

protect, confirm, budget and approve are journaled and undone with "unprune undo", like detach.

` + exitCodesHelp,
	}
	cmd.AddCommand(newGuardPolicyCommand(f, streams), newGuardChangeCommand(f, streams, "protect"), newGuardChangeCommand(f, streams, "confirm"),
		newGuardBudgetCommand(f, streams), newGuardApproveCommand(f, streams))
	return cmd
}

// GuardPolicyOptions are `unprune guard policy`'s inputs.
type GuardPolicyOptions struct {
	completed
	genericiooptions.IOStreams
	Policy  guard.PolicyOptions
	Apply   bool
	Merge   bool
	Cluster string
	change  changeFlags
	// keepGroup: --merge keeps the installed policy's break-glass group unless the flag names one.
	keepGroup bool
	flags     *pflag.FlagSet
}

func newGuardPolicyCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GuardPolicyOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print (or apply) an admission policy that denies deleting protected objects",
		Long: `Print a ValidatingAdmissionPolicy and its binding that deny DELETE of objects labelled
unprune.dev/protected=true (or named with --name), with reason Forbidden and a message telling the
operator what to do. Members of --break-glass-group are exempt. Admission policies apply to every user,
system:masters and Argo CD's controller included. A new policy takes about a second to be enforced:
check with "unprune audit --probe".

--kinds knows namespaces, crds and pvs by itself; any other kind is named as kubectl names it (pvc,
configmaps, statefulsets.apps) and looked up in the cluster: an object two apps declare, which a forced
sync with Replace=true deletes and creates anew whatever its sync options say, is kept only by such a
policy (see "unprune audit"). Name a namespaced object RESOURCE/NAMESPACE/NAME.

By default the YAML is printed for review or GitOps; --apply creates or updates it (server-side
apply) in the current context's cluster, after a preview, with --yes.

` + exitCodesHelp,
		Example: `  unprune guard policy --kinds namespaces,crds --break-glass-group platform-admins > guard.yaml
  unprune guard policy --apply --yes
  unprune guard policy --merge --kinds namespaces,configmaps --name configmaps/shop/settings --apply --yes`,
		Args: cobra.NoArgs,
		RunE: runE(f, o),
	}
	o.flags = cmd.Flags()
	cmd.Flags().StringSliceVar(&o.Policy.Kinds, "kinds", []string{"namespaces"}, "kinds to protect: namespaces, crds, pvs, or any other as kubectl names it (pvc, statefulsets.apps), looked up in the cluster")
	cmd.Flags().StringArrayVar(&o.Policy.Names, "name", nil, "also protect this object by name, as RESOURCE/NAME or RESOURCE/NAMESPACE/NAME (e.g. namespaces/team-a, configmaps/shop/settings); repeatable")
	cmd.Flags().StringVar(&o.Policy.BreakGlassGroup, "break-glass-group", "", "group whose members may still delete protected objects")
	cmd.Flags().BoolVar(&o.Apply, "apply", false, "create or update the policy in the cluster (with --yes)")
	cmd.Flags().BoolVar(&o.Merge, "merge", false, "keep what the installed policy protects (its kinds, names and break-glass group) and add what these flags name")
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "apply it in this destination cluster of Argo CD (its name or server URL) instead of the current context's")
	_ = cmd.RegisterFlagCompletionFunc("kinds", fixedCompletion("namespaces", "crds", "pvs"))
	o.change.add(cmd)
	return cmd
}

// errGuardViaAPI explains why guard needs the clusters' own API.
func errGuardViaAPI(what string) error {
	return usageError("%s works on the cluster itself, which Argo CD's API does not reach beyond an app's resources: run it with your kubeconfig (without --via argocd)", what)
}

// Validate checks the policy can be built and the flags fit together.
func (o *GuardPolicyOptions) Validate([]string) error {
	if !o.can.KubernetesAPI {
		return errGuardViaAPI("guard policy")
	}
	// Kinds beyond the built-in ones are looked up in the cluster when the command runs, and so is
	// what --merge adds.
	o.keepGroup = !flagChanged(o.flags, "break-glass-group")
	if o.Policy.Builtin() && !o.Merge {
		if _, err := guard.Policy(o.Policy); err != nil {
			return usageError("%v", err)
		}
	}
	if !o.Apply && (flagChanged(o.flags, "yes") || flagChanged(o.flags, "dry-run")) {
		return usageError("--yes and --dry-run go with --apply")
	}
	return o.change.validate()
}

// Run prints or applies the policy.
func (o *GuardPolicyOptions) Run(ctx context.Context) error {
	var objects cluster.Objects
	if o.Merge {
		var err error
		if objects, err = o.target(ctx, o.Cluster); err != nil {
			return err
		}
		if err := o.merge(ctx, objects); err != nil {
			return err
		}
	}
	if !o.Policy.Builtin() {
		var err error
		if objects == nil {
			if objects, err = o.target(ctx, o.Cluster); err != nil {
				return err
			}
		}
		o.Policy.Resolve = func(name string) (guard.Kind, error) {
			kind, group, _ := strings.Cut(name, ".")
			ref, err := objects.Resolve(ctx, group, kind, "", "", "")
			if err != nil {
				return guard.Kind{}, err
			}
			return guard.Kind{Group: ref.Group, Resource: ref.Resource, Kind: ref.Kind, Namespaced: ref.Namespaced}, nil
		}
	}
	objs, err := guard.Policy(o.Policy)
	if err != nil {
		return usageError("%v", err)
	}
	var docs []string
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	if !o.Apply || o.change.dryRun == engine.DryRunClient {
		fmt.Fprint(o.Out, strings.Join(docs, "---\n"))
		if o.Apply {
			fmt.Fprintln(o.ErrOut, previewOnly)
			return Silent(ExitFindings)
		}
		return nil
	}
	if objects == nil {
		if objects, err = o.target(ctx, o.Cluster); err != nil {
			return err
		}
	}
	applier, ok := objects.(cluster.Applier)
	if !ok {
		return usageError("cluster %s is reached through Argo CD's API, which can only change an app's resources: apply the policy with a kubeconfig for that cluster (--cluster-context)", objects.Info().Name)
	}
	dryRun := o.change.dryRun == engine.DryRunServer
	for i, obj := range objs {
		resource := []string{guard.PolicyResource, guard.BindingResource}[i]
		name := resource + "/" + guard.PolicyName
		if err := applier.Apply(ctx, guard.PolicyGroup, guard.PolicyVersion, resource, obj, dryRun); err != nil {
			return failure(cluster.Explain(err, "apply "+name, objects.Info()))
		}
		verb := "applied"
		if dryRun {
			verb = "accepted by a server-side dry run"
		}
		fmt.Fprintf(o.Out, "%s %s\n", name, verb)
	}
	if dryRun {
		return Silent(ExitFindings)
	}
	fmt.Fprintf(o.ErrOut, "The policy is enforced within seconds; `%s audit --probe` shows when it is.\n", o.program)
	return nil
}

// merge adds what the installed policy protects to the options (--merge); none installed adds none.
func (o *GuardPolicyOptions) merge(ctx context.Context, objects cluster.Objects) error {
	reader, ok := objects.(cluster.PolicyReader)
	if !ok {
		return usageError("cluster %s is reached through Argo CD's API, which cannot read admission policies: run --merge with a kubeconfig for that cluster", objects.Info().Name)
	}
	pol, err := reader.GetClusterObject(ctx, guard.PolicyGroup, guard.PolicyVersion, guard.PolicyResource, guard.PolicyName)
	if cluster.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return failure(cluster.Explain(err, "read "+guard.PolicyResource+"/"+guard.PolicyName, objects.Info()))
	}
	installed := guard.ProtectedBy(pol)
	if !o.keepGroup {
		installed.BreakGlassGroup = ""
	}
	o.Policy = o.Policy.Merge(installed)
	return nil
}

// GuardChangeOptions are `unprune guard protect|confirm`'s inputs: metadata changes with the same
// preview, dry run, journal and undo as detach.
type GuardChangeOptions struct {
	completed
	genericiooptions.IOStreams
	Verb      string // protect or confirm
	Resources []engine.ResourceArg
	Cluster   string
	change    changeFlags
	output    outputFlags
}

func newGuardChangeCommand(f Factory, streams genericiooptions.IOStreams, verb string) *cobra.Command {
	o := &GuardChangeOptions{IOStreams: streams, Verb: verb}
	short := map[string]string{
		"protect": "Label objects unprune.dev/protected=true, for the admission policy",
		"confirm": "Merge Prune=confirm into objects' sync-options: a prune waits for approval",
	}[verb]
	cmd := &cobra.Command{
		Use:   verb + " RESOURCE...",
		Short: short,
		Long: short + `.

RESOURCE is KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME (kubectl's short names work: ns/team-a).
Without --yes this is a preview; --dry-run=server asks the API server. Every change is journaled;
"unprune undo" reverses it.

` + exitCodesHelp,
		Example: fmt.Sprintf("  unprune guard %s ns/team-a crd/widgets.example.com\n  unprune guard %s ns/team-a --yes", verb, verb),
		Args:    cobra.MinimumNArgs(1),
		RunE:    runE(f, o),
	}
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "the objects live in this destination cluster of Argo CD (its name or server URL), not the current context's")
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// validateGuardChange checks what every journaled guard change takes: the Kubernetes API, and its
// output and change flags.
func (c *completed) validateGuardChange(verb string, output *outputFlags, change *changeFlags) error {
	if !c.can.KubernetesAPI {
		return errGuardViaAPI("guard " + verb)
	}
	if err := output.validate(); err != nil {
		return err
	}
	return change.validate()
}

// Validate checks arguments.
func (o *GuardChangeOptions) Validate(args []string) error {
	if err := o.validateGuardChange(o.Verb, &o.output, &o.change); err != nil {
		return err
	}
	o.Resources = nil
	for _, a := range args {
		r, err := engine.ParseResourceArg(a)
		if err != nil {
			return usageError("%v", err)
		}
		o.Resources = append(o.Resources, r)
	}
	return nil
}

// Run previews, dry-runs or applies the change.
func (o *GuardChangeOptions) Run(ctx context.Context) error {
	objects, err := o.target(ctx, o.Cluster)
	if err != nil {
		return err
	}
	build, err := guard.PlanFor(o.Verb)
	if err != nil {
		return err
	}
	// Where Argo CD can be read, the app that declares an object says whether a mark holds: one that
	// syncs with Replace=true writes its manifest over label and annotation alike, and a confirm is
	// a mark Argo CD reads, so that app is asked, after the change, whether it sees it.
	argo, settings, _ := o.connect(ctx)
	e, err := o.engine(argo, settings, 32)
	if err != nil {
		return err
	}
	c, err := e.PlanObjects(ctx, objects, engine.ObjectsRequest{Command: guard.Command, Strategy: o.Verb, Resources: o.Resources, Build: build, Mark: o.Verb == "confirm"})
	if err != nil {
		return engineError(err)
	}
	c.AllOrNothing = true
	counts := c.Counts()
	if counts[engine.OutcomePlanned] == 0 && counts[engine.OutcomeRefused]+counts[engine.OutcomeFailed] == 0 {
		// A resource that does not exist is not guarded: say so rather than that all are.
		if gone := counts[engine.OutcomeGone]; gone > 0 {
			fmt.Fprintf(o.ErrOut, "Nothing to change: %d of the resources named do not exist (see above).\n", gone)
		} else {
			fmt.Fprintln(o.ErrOut, "Nothing to change: every resource is guarded already.")
		}
	}
	info := objects.Info()
	return o.runChange(ctx, o.IOStreams, o.output, o.change.dryRun, e, c, changeCommand{kind: "GuardReport", cluster: &info,
		question: fmt.Sprintf("Guard %d resources (%s)? [y/N] ", counts[engine.OutcomePlanned], o.Verb)})
}

// target is the cluster a guard command changes: the current context's, or a destination cluster
// of Argo CD (by name or server URL) resolved as for its apps.
func (c *completed) target(ctx context.Context, nameOrServer string) (cluster.Objects, error) {
	var (
		objects cluster.Objects
		err     error
	)
	switch {
	case nameOrServer == "":
		objects, err = c.session.Home(ctx)
	case strings.Contains(nameOrServer, "://"):
		objects, err = c.session.Destination(ctx, cluster.Info{Server: nameOrServer})
	default:
		objects, err = c.session.Destination(ctx, cluster.Info{Name: nameOrServer})
	}
	if err != nil {
		return nil, failure(err)
	}
	return objects, nil
}
