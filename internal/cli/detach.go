package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/apply"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/verify"
)

// DetachOptions are `unprune detach`'s inputs.
type DetachOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams

	App              string
	Resources        []string
	All              bool
	Force            bool
	Strategy         string
	ScrubLastApplied bool
	DryRun           string
	Yes              bool
	Wait             bool
	Timeout          time.Duration
	Output           string
	Workers          int

	format   printer.Format
	strategy plan.Strategy
	session  *session
	appNS    string
	appName  string
	// interactive is true when stdin and stderr are terminals, so a confirmation can be asked.
	interactive bool
}

// NewDetachCommand builds `unprune detach`.
func NewDetachCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DetachOptions{GlobalOptions: g, IOStreams: streams, Strategy: string(plan.StrategyUntrack), Wait: true, Timeout: 2 * time.Minute, Workers: 8}
	cmd := &cobra.Command{
		Use:   "detach APP [RESOURCE...] | APP --all",
		Short: "Release resources that require pruning from an Application, deleting nothing",
		Long: `Release resources from an Argo CD Application without deleting or otherwise changing them.

With the default strategy "untrack", unprune removes exactly the tracking metadata Argo CD reads
for your installation's settings: the instance label (only when its value is this app's instance),
the tracking-id annotation (only when it names this app and this very object) and the
installation-id annotation that belongs with it. Nothing else on the object changes.

With --strategy keep, tracking stays and unprune merges IgnoreExtraneous into
argocd.argoproj.io/compare-options and Prune=false into argocd.argoproj.io/sync-options: the
resource stays visible in the app, no longer makes it OutOfSync, and no sync can prune it.

RESOURCE is KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME as "unprune scan" prints it;
--all selects every resource of the app that requires pruning. APP is NAME or NAMESPACE/NAME
(default namespace: -n, else Argo CD's namespace).

Nothing changes without --yes (or a confirmation at a terminal): the default is a preview.
--dry-run=server sends the patches with dryRun=All so the API server and its admission checks
judge them, persisting nothing. Each patch carries the resourceVersion it was planned from and a
field manager "unprune"; on a conflict unprune re-reads and re-plans (up to 3 times). A journal
records every change before it is made; "unprune undo" reverses it exactly. Afterwards unprune
asks Argo CD for a refresh and waits until the app shows Synced.

` + exitCodesHelp,
		Example: `  # Preview what would change
  unprune detach my-app --all

  # Let the API server check the patches, changing nothing
  unprune detach my-app Namespace/kube-system --dry-run=server

  # Do it, and wait for Argo CD to show the app Synced
  unprune detach my-app --all --yes

  # Keep the resource in the app, but never prune it
  unprune detach my-app Namespace/team-a --strategy keep --yes`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.App, o.Resources = args[0], args[1:]
			// Validate needs no cluster: bad flags fail before any connection.
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(cmd.Context()); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.All, "all", false, "select every resource of the app that requires pruning")
	f.BoolVar(&o.Force, "force", false, "also detach resources the app does not mark as requiring pruning")
	f.StringVar(&o.Strategy, "strategy", o.Strategy, "untrack (remove tracking metadata) or keep (stay in the app, never pruned)")
	f.BoolVar(&o.ScrubLastApplied, "scrub-last-applied", false, "also remove the same keys from kubectl.kubernetes.io/last-applied-configuration (Argo CD ignores that copy; off by default so nothing else changes)")
	f.StringVar(&o.DryRun, "dry-run", "", `"client" previews (the default without --yes); "server" asks the API server with dryRun=All; "none" applies (with --yes)`)
	f.BoolVarP(&o.Yes, "yes", "y", false, "apply without asking")
	f.BoolVar(&o.Wait, "wait", o.Wait, "after applying, refresh the app and wait until Argo CD shows it Synced")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the app to show Synced")
	f.IntVar(&o.Workers, "workers", o.Workers, "objects patched concurrently (within --qps/--burst)")
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// Complete resolves the app reference and connects.
func (o *DetachOptions) Complete(ctx context.Context) error {
	f, err := printer.ParseFormat(o.Output, printer.Table, printer.JSON, printer.YAML)
	if err != nil {
		return usageError("%v", err)
	}
	o.format = f
	if o.strategy, err = plan.ParseStrategy(o.Strategy); err != nil {
		return usageError("--strategy: %v", err)
	}
	o.interactive = isTerminal(o.In) && isTerminal(o.ErrOut)
	if o.session, err = o.connect(ctx, o.IOStreams); err != nil {
		return err
	}
	o.appNS, o.appName = splitAppRef(o.App)
	if o.appNS == "" {
		o.appNS = o.session.ArgoCDNamespace
		if ns, set := o.namespaceFlag(); set {
			o.appNS = ns
		}
	}
	return nil
}

// Validate checks flag combinations; it needs no cluster.
func (o *DetachOptions) Validate() error {
	switch {
	case o.All && len(o.Resources) > 0:
		return usageError("name resources or use --all, not both")
	case !o.All && len(o.Resources) == 0:
		return usageError("name the resources to detach (as `unprune scan` prints them) or use --all")
	case o.DryRun != "" && o.DryRun != "none" && o.DryRun != "client" && o.DryRun != "server":
		return usageError(`--dry-run=%q: use "client", "server" or "none"`, o.DryRun)
	case o.DryRun == "none" && !o.Yes:
		return usageError("--dry-run=none applies changes: add --yes to confirm")
	case o.Timeout <= 0:
		return usageError("--timeout must be positive")
	case o.Workers <= 0:
		return usageError("--workers must be positive")
	case strings.HasPrefix(o.App, "/") || strings.HasSuffix(o.App, "/") || strings.Count(o.App, "/") > 1:
		return usageError("APP %q: use NAME or NAMESPACE/NAME", o.App)
	}
	for _, r := range o.Resources {
		if _, err := parseResourceArg(r); err != nil {
			return usageError("%v", err)
		}
	}
	return nil
}

// resourceArg is a parsed RESOURCE argument.
type resourceArg struct {
	Kind, Group, Namespace, Name string
	raw                          string
}

func parseResourceArg(s string) (resourceArg, error) {
	parts := strings.Split(s, "/")
	r := resourceArg{raw: s}
	switch len(parts) {
	case 2:
		r.Name = parts[1]
	case 3:
		r.Namespace, r.Name = parts[1], parts[2]
	default:
		return r, fmt.Errorf("resource %q: use KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME, e.g. Namespace/kube-system", s)
	}
	r.Kind, r.Group, _ = strings.Cut(parts[0], ".")
	if r.Kind == "" || r.Name == "" {
		return r, fmt.Errorf("resource %q: kind and name must not be empty", s)
	}
	return r, nil
}

func (r resourceArg) matches(res cluster.Resource) bool {
	return strings.EqualFold(r.Kind, res.Kind) && r.Group == res.Group && r.Name == res.Name &&
		(r.Namespace == res.Namespace)
}

// Run plans, previews, and (when confirmed) applies and verifies.
func (o *DetachOptions) Run(ctx context.Context) error {
	s := o.session
	app, err := s.Client.GetApplication(ctx, o.appNS, o.appName)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w (is the app in another namespace? use NAMESPACE/NAME or -n)", err)}
	}
	instance := argocd.InstanceName(app.Namespace, app.Name, s.ArgoCDNamespace)
	doc := printer.DetachReport{
		APIVersion: printer.APIVersion, Kind: "DetachReport", ArgoCD: printer.NewArgoCDInfo(s.ArgoCDNamespace, s.Settings),
		Application: printer.AppRef{Namespace: app.Namespace, Name: app.Name}, Instance: instance,
		Strategy: string(o.strategy), Mode: printer.ModePreview, Items: []printer.DetachItem{},
	}
	if !o.format.Machine() {
		fmt.Fprintf(o.ErrOut, "Application %s (instance %q), strategy %s; Argo CD in %s: %s\n",
			app.Ref(), instance, o.strategy, s.ArgoCDNamespace, s.Settings)
	}
	if !app.InCluster() {
		return refused("Application %s deploys to another cluster (%s %s): its resources live there; run unprune with that cluster's --context",
			app.Ref(), app.DestName, app.DestServer)
	}
	if app.Operation {
		return refused("Application %s has a sync operation running (phase %s): changing its resources now races the sync; wait for it to finish and run again",
			app.Ref(), orUnknown(app.OperationPhase))
	}

	selected, err := o.selectResources(app)
	if err != nil {
		return err
	}
	if len(selected) == 0 {
		fmt.Fprintf(o.ErrOut, "Nothing to do: no resource of Application %s requires pruning (sync status %s).\n", app.Ref(), orUnknown(app.SyncStatus))
		return o.print(doc)
	}

	opts := plan.Options{Strategy: o.strategy, Force: o.Force, ScrubLastApplied: o.ScrubLastApplied}
	targets := make([]target, 0, len(selected))
	for _, r := range selected {
		live, m, err := s.Client.Live(ctx, r)
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w; nothing was changed", err)}
		}
		t := target{res: r, mapping: m, live: live}
		t.plan = plan.Build(s.Settings, planTarget(instance, r, m, live), opts)
		targets = append(targets, t)
	}

	replan := func(t target, fresh *unstructured.Unstructured) plan.Plan {
		return plan.Build(s.Settings, planTarget(instance, t.res, t.mapping, fresh), opts)
	}
	items, toApply, refusals := previewItems(targets)
	doc.Items = items
	changes := len(toApply)
	if refusals > 0 {
		if err := o.print(doc); err != nil {
			return err
		}
		return refused("%d of %d resources refused (see above); nothing was changed", refusals, len(targets))
	}
	if changes == 0 {
		fmt.Fprintln(o.ErrOut, "Nothing to change: the selected resources carry no tracking metadata of this app.")
		return o.print(doc)
	}

	mode := changeMode(o.DryRun, o.Yes)
	if mode == "client" && o.interactive && !o.format.Machine() {
		if err := o.print(doc); err != nil {
			return err
		}
		ok, err := confirm(o.IOStreams, fmt.Sprintf("Detach %d resources from Application %s (strategy %s)? [y/N] ", changes, app.Ref(), o.strategy))
		if err != nil || !ok {
			fmt.Fprintln(o.ErrOut, "Nothing was changed.")
			return Silent(ExitFindings)
		}
		mode = "none"
	}
	switch mode {
	case "client":
		if err := o.print(doc); err != nil {
			return err
		}
		fmt.Fprintf(o.ErrOut, "Preview only: nothing was changed. Check with the API server: --dry-run=server. Apply: --yes.\n")
		return Silent(ExitFindings)
	case "server":
		failed := serverDryRun(ctx, s, &doc, toApply, replan, apply.Options{Workers: o.Workers, Progress: o.ErrOut})
		if err := o.print(doc); err != nil {
			return err
		}
		if failed > 0 {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("the API server rejected %d of %d patches in a dry run; nothing was changed", failed, changes)}
		}
		fmt.Fprintln(o.ErrOut, "Server-side dry run: the API server accepted every patch; nothing was changed. Apply: --yes.")
		return Silent(ExitFindings)
	}

	j := journal.New("detach", string(o.strategy))
	j.Application = &journal.AppRef{Namespace: app.Namespace, Name: app.Name}
	results, failed, err := o.applyJournaled(ctx, s, &doc, j, toApply, replan, apply.Options{Workers: o.Workers, Progress: o.ErrOut})
	if err != nil {
		return err
	}
	applied := len(results) - failed
	fmt.Fprintf(o.ErrOut, "Journal: %s (undo with: unprune undo %s)\n", doc.Journal, doc.Journal)

	var released []cluster.Resource
	for i, r := range results {
		if r.Applied {
			released = append(released, toApply[i].res)
		}
	}
	if o.Wait && applied > 0 {
		v, err := o.verify(ctx, app, released)
		if err != nil {
			fmt.Fprintln(o.ErrOut, "warning: could not verify the app's status:", err)
		} else {
			doc.Verification = v
		}
	}
	if err := o.print(doc); err != nil {
		return err
	}
	if doc.Verification != nil && !o.format.Machine() {
		fmt.Fprint(o.Out, printer.VerificationText(doc.Application, *doc.Verification))
	}
	switch {
	case failed > 0 && applied > 0:
		return &ExitError{Code: ExitPartial, Err: fmt.Errorf("%d of %d resources changed, %d failed; the journal %s says which", applied, len(results), failed, doc.Journal)}
	case failed > 0:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("no resource was changed: %d failed (see above)", failed)}
	case doc.Verification != nil && !doc.Verification.Synced:
		return &ExitError{Code: ExitNotSynced, Err: fmt.Errorf("every change was made, but Argo CD did not show %s Synced within %s", app.Ref(), o.Timeout)}
	}
	return nil
}

func (o *DetachOptions) selectResources(app cluster.Application) ([]cluster.Resource, error) {
	if o.All {
		return app.Pruning(), nil
	}
	var out []cluster.Resource
	for _, raw := range o.Resources {
		arg, _ := parseResourceArg(raw)
		r, found := findResource(app, arg)
		if !found && o.Force {
			// --force may name an object the app does not list (a copy, another app's object):
			// read it, and let the planner say whether it may be touched.
			var err error
			if r, err = resolveResource(o.session.Client.Mapper, arg); err != nil {
				return nil, usageError("%s: %v", raw, err)
			}
			found = true
		}
		if !found {
			var names []string
			for _, r := range app.Pruning() {
				names = append(names, r.String())
			}
			hint := "none of its resources requires pruning"
			if len(names) > 0 {
				hint = "its resources requiring pruning are: " + strings.Join(names, ", ")
			}
			return nil, usageError("Application %s lists no resource %s; %s (--force reads an unlisted object anyway)", app.Ref(), raw, hint)
		}
		out = append(out, r)
	}
	return out, nil
}

func findResource(app cluster.Application, arg resourceArg) (cluster.Resource, bool) {
	for _, r := range app.Resources {
		if arg.matches(r) {
			return r, true
		}
	}
	return cluster.Resource{}, false
}

// resolveResource turns KIND[.GROUP] into the served kind and version, as kubectl does.
func resolveResource(mapper meta.RESTMapper, arg resourceArg) (cluster.Resource, error) {
	gk := schema.GroupKind{Group: arg.Group, Kind: arg.Kind}
	if _, err := mapper.RESTMapping(gk); err != nil {
		// Accept what kubectl accepts too: ns, namespaces, crd …
		gvk, kerr := mapper.KindFor(schema.GroupVersionResource{Group: arg.Group, Resource: strings.ToLower(arg.Kind)})
		if kerr != nil {
			return cluster.Resource{}, fmt.Errorf("the API server serves no kind %s: %w", arg.Kind, err)
		}
		gk = gvk.GroupKind()
	}
	m, err := mapper.RESTMapping(gk)
	if err != nil {
		return cluster.Resource{}, err
	}
	r := cluster.Resource{Group: m.GroupVersionKind.Group, Version: m.GroupVersionKind.Version, Kind: m.GroupVersionKind.Kind, Name: arg.Name}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		r.Namespace = arg.Namespace
		if r.Namespace == "" {
			return r, fmt.Errorf("%s is namespaced: use %s/NAMESPACE/%s", r.Kind, arg.Kind, arg.Name)
		}
	}
	return r, nil
}

func planTarget(instance string, r cluster.Resource, m *meta.RESTMapping, live *unstructured.Unstructured) plan.Target {
	var owners []string
	for _, ref := range live.GetOwnerReferences() {
		owners = append(owners, ref.Kind+"/"+ref.Name)
	}
	return plan.Target{
		Instance: instance,
		Ref: argocd.ObjectRef{Group: r.Group, Kind: r.Kind, Namespace: live.GetNamespace(), Name: live.GetName(),
			ClusterScoped: m.Scope.Name() == meta.RESTScopeNameRoot},
		Labels: live.GetLabels(), Annotations: live.GetAnnotations(), OwnerReferences: owners,
		Deleting: live.GetDeletionTimestamp() != nil, RequiresPruning: r.RequiresPruning,
	}
}

func (o *DetachOptions) verify(ctx context.Context, app cluster.Application, released []cluster.Resource) (*printer.Verification, error) {
	want := verify.Gone
	if o.strategy == plan.StrategyKeep {
		want = verify.Ignored
	}
	if err := verify.Refresh(ctx, o.session.Client, app); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.ErrOut, "Waiting up to %s for Argo CD to show %s Synced...\n", o.Timeout, app.Ref())
	out, err := verify.Wait(ctx, o.session.Client, app, released, want, o.Timeout, 100*time.Millisecond)
	if err != nil {
		return nil, err
	}
	v := &printer.Verification{Synced: out.Synced, SyncStatus: out.App.SyncStatus, Revision: out.App.Revision, ElapsedSeconds: out.Elapsed.Seconds()}
	for _, r := range out.Lingering {
		v.StillListed = append(v.StillListed, resourceRef(r))
	}
	for _, r := range out.OutOfSync {
		v.OutOfSync = append(v.OutOfSync, resourceRef(r))
	}
	return v, nil
}

func (o *DetachOptions) print(doc printer.DetachReport) error {
	if o.format.Machine() {
		return printer.Document(o.Out, o.format, doc)
	}
	return printer.DetachPlanTable(o.Out, doc)
}

func resourceRef(r cluster.Resource) printer.ResourceRef {
	return printer.ResourceRef{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// confirm asks on stderr and reads one line from stdin.
func confirm(streams genericiooptions.IOStreams, question string) (bool, error) {
	fmt.Fprint(streams.ErrOut, question)
	line, err := bufio.NewReader(streams.In).ReadString('\n')
	if err != nil && !errors.Is(err, os.ErrClosed) && line == "" {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
