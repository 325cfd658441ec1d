package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/apply"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
)

// NewGuardCommand builds `unprune guard` and its subcommands.
func NewGuardCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "guard",
		Short: "Put guards in place so that no prune can delete what must stay",
		Long: `Guards stop a prune from deleting an object even when someone syncs with PRUNE ticked:

  guard policy    a ValidatingAdmissionPolicy denying DELETE of protected Namespaces (and optionally
                  CRDs and PersistentVolumes), for every user, Argo CD included, but a break-glass group
  guard protect   label objects unprune.dev/protected=true, which that policy protects
  guard confirm   merge Prune=confirm into the objects' argocd.argoproj.io/sync-options, so Argo CD
                  prunes them only after the deletion is approved on the Application (Argo CD v2.14+)

protect and confirm are journaled and undone with "unprune undo", like detach.

` + exitCodesHelp,
	}
	cmd.AddCommand(newGuardPolicyCommand(g, streams), newGuardChangeCommand(g, streams, "protect"), newGuardChangeCommand(g, streams, "confirm"))
	return cmd
}

// GuardPolicyOptions are `unprune guard policy`'s inputs.
type GuardPolicyOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams
	Policy guard.PolicyOptions
	Apply  bool
	Yes    bool
	DryRun string
}

func newGuardPolicyCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GuardPolicyOptions{GlobalOptions: g, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Print (or apply) an admission policy that denies deleting protected objects",
		Long: `Print a ValidatingAdmissionPolicy and its binding that deny DELETE of objects labelled
unprune.dev/protected=true (or named with --name), with reason Forbidden and a message telling the
operator what to do. Members of --break-glass-group are exempt. Admission policies apply to every user,
system:masters and Argo CD's controller included. A new policy takes about a second to be enforced:
check with "unprune audit --probe".

By default the YAML is printed for review or GitOps; --apply creates or updates it (server-side
apply, field manager unprune), after a preview, with --yes.

` + exitCodesHelp,
		Example: `  unprune guard policy --kinds namespaces,crds --break-glass-group platform-admins > guard.yaml
  unprune guard policy --apply --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringSliceVar(&o.Policy.Kinds, "kinds", []string{"namespaces"}, "kinds to protect: namespaces, crds, pvs")
	cmd.Flags().StringArrayVar(&o.Policy.Names, "name", nil, "also protect this object by name, as KIND/NAME (e.g. namespaces/team-a); repeatable")
	cmd.Flags().StringVar(&o.Policy.BreakGlassGroup, "break-glass-group", "", "group whose members may still delete protected objects")
	cmd.Flags().BoolVar(&o.Apply, "apply", false, "create or update the policy in the cluster (with --yes)")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "apply without asking")
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "", `with --apply: "server" asks the API server with dryRun=All`)
	return cmd
}

// Validate checks the policy can be built and the flags fit together.
func (o *GuardPolicyOptions) Validate() error {
	if _, err := guard.Policy(o.Policy); err != nil {
		return usageError("%v", err)
	}
	if o.DryRun != "" && o.DryRun != "server" && o.DryRun != "client" {
		return usageError(`--dry-run=%q: use "client" or "server"`, o.DryRun)
	}
	if !o.Apply && (o.Yes || o.DryRun != "") {
		return usageError("--yes and --dry-run go with --apply")
	}
	return nil
}

// Run prints or applies the policy.
func (o *GuardPolicyOptions) Run(ctx context.Context) error {
	objs, _ := guard.Policy(o.Policy)
	var docs []string
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	text := strings.Join(docs, "---\n")
	if !o.Apply {
		fmt.Fprint(o.Out, text)
		return nil
	}
	restCfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return usageError("cannot build a client from your kubeconfig: %v", err)
	}
	dyn, err := dynamicFor(restCfg)
	if err != nil {
		return err
	}
	if o.DryRun == "client" || (!o.Yes && o.DryRun == "") {
		fmt.Fprint(o.Out, text)
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Check with the API server: --dry-run=server. Apply: --yes.")
		return Silent(ExitFindings)
	}
	po := metav1.PatchOptions{FieldManager: apply.FieldManager, Force: ptr(true)}
	if o.DryRun == "server" {
		po.DryRun = []string{metav1.DryRunAll}
	}
	gvrs := []schema.GroupVersionResource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	}
	for i, obj := range objs {
		body, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := dyn.Resource(gvrs[i]).Patch(ctx, u.GetName(), types.ApplyPatchType, body, po); err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)}
		}
		verb := "applied"
		if o.DryRun == "server" {
			verb = "accepted by a server-side dry run"
		}
		fmt.Fprintf(o.Out, "%s/%s %s\n", strings.ToLower(u.GetKind()), u.GetName(), verb)
	}
	if o.DryRun == "server" {
		return Silent(ExitFindings)
	}
	fmt.Fprintln(o.ErrOut, "The policy is enforced within seconds; `unprune audit --probe` shows when it is.")
	return nil
}

func ptr[T any](v T) *T { return &v }

// GuardChangeOptions are `unprune guard protect|confirm`'s inputs: metadata changes with the same
// preview, dry-run, journal and undo as detach.
type GuardChangeOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams
	Verb      string // protect or confirm
	Resources []string
	DryRun    string
	Yes       bool
	Output    string
	format    printer.Format
}

func newGuardChangeCommand(g *GlobalOptions, streams genericiooptions.IOStreams, verb string) *cobra.Command {
	o := &GuardChangeOptions{GlobalOptions: g, IOStreams: streams, Verb: verb}
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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Resources = args
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "", `"client" previews (the default without --yes); "server" asks the API server with dryRun=All`)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "apply without asking")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// Validate checks arguments.
func (o *GuardChangeOptions) Validate() error {
	f, err := printer.ParseFormat(o.Output, printer.Table, printer.JSON, printer.YAML)
	if err != nil {
		return usageError("%v", err)
	}
	o.format = f
	switch o.DryRun {
	case "", "client", "server":
	case "none":
		if !o.Yes {
			return usageError("--dry-run=none applies changes: add --yes to confirm")
		}
	default:
		return usageError(`--dry-run=%q: use "client", "server" or "none"`, o.DryRun)
	}
	for _, r := range o.Resources {
		if _, err := parseResourceArg(r); err != nil {
			return usageError("%v", err)
		}
	}
	return nil
}

// Run previews, dry-runs or applies the change.
func (o *GuardChangeOptions) Run(ctx context.Context) error {
	s, err := o.connect(ctx, o.IOStreams)
	if err != nil {
		return err
	}
	build := guard.ProtectPlan
	strategy := "protect"
	if o.Verb == "confirm" {
		build, strategy = guard.ConfirmPlan, "confirm"
	}
	var targets []target
	for _, raw := range o.Resources {
		arg, _ := parseResourceArg(raw)
		r, err := resolveResource(s.Client.Mapper, arg)
		if err != nil {
			return usageError("%s: %v", raw, err)
		}
		live, m, err := s.Client.Live(ctx, r)
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w; nothing was changed", err)}
		}
		t := guardTarget(r, m, live)
		targets = append(targets, target{res: r, mapping: m, live: live, plan: build(t)})
	}
	doc := printer.DetachReport{APIVersion: printer.APIVersion, Kind: "GuardReport", ArgoCD: printer.NewArgoCDInfo(s.ArgoCDNamespace, s.Settings),
		Strategy: strategy, Mode: printer.ModePreview, Items: []printer.DetachItem{}}
	items, toApply, refusals := previewItems(targets)
	doc.Items = items
	replan := func(t target, fresh *unstructured.Unstructured) plan.Plan {
		return build(guardTarget(t.res, t.mapping, fresh))
	}
	printDoc := func() error {
		if o.format.Machine() {
			return printer.Document(o.Out, o.format, doc)
		}
		return printer.DetachPlanTable(o.Out, doc)
	}
	if refusals > 0 {
		if err := printDoc(); err != nil {
			return err
		}
		return refused("%d of %d resources refused (see above); nothing was changed", refusals, len(targets))
	}
	if len(toApply) == 0 {
		fmt.Fprintln(o.ErrOut, "Nothing to change: every resource is guarded already.")
		return printDoc()
	}
	switch changeMode(o.DryRun, o.Yes) {
	case "client":
		if err := printDoc(); err != nil {
			return err
		}
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Check with the API server: --dry-run=server. Apply: --yes.")
		return Silent(ExitFindings)
	case "server":
		failed := serverDryRun(ctx, s, &doc, toApply, replan, apply.Options{Progress: o.ErrOut})
		if err := printDoc(); err != nil {
			return err
		}
		if failed > 0 {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("the API server rejected %d patches in a dry run; nothing was changed", failed)}
		}
		return Silent(ExitFindings)
	}
	results, failed, err := o.applyJournaled(ctx, s, &doc, journal.New("guard", strategy), toApply, replan, apply.Options{Progress: o.ErrOut})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "Journal: %s (undo with: unprune undo %s)\n", doc.Journal, doc.Journal)
	if err := printDoc(); err != nil {
		return err
	}
	switch {
	case failed > 0 && failed < len(results):
		return &ExitError{Code: ExitPartial, Err: fmt.Errorf("%d of %d resources changed; the journal says which", len(results)-failed, len(results))}
	case failed > 0:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("no resource was changed")}
	}
	return nil
}

func guardTarget(r cluster.Resource, m *meta.RESTMapping, live *unstructured.Unstructured) plan.Target {
	return plan.Target{
		Ref: argocd.ObjectRef{Group: r.Group, Kind: r.Kind, Namespace: live.GetNamespace(), Name: live.GetName(),
			ClusterScoped: m.Scope.Name() == meta.RESTScopeNameRoot},
		Labels: live.GetLabels(), Annotations: live.GetAnnotations(), Deleting: live.GetDeletionTimestamp() != nil,
	}
}
