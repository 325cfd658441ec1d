package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/printer"
)

// CheckOptions are `unprune check`'s inputs.
type CheckOptions struct {
	completed
	genericiooptions.IOStreams

	App engine.AppName
	// Set is true when APP is applicationset/NAME: the change is to an ApplicationSet.
	Set       bool
	RepoDir   string
	Manifests string
	Revision  string
	FailOn    string
	// AlsoValues are --also APP=PATH: other apps of the same change, checked in the same run.
	AlsoValues []string
	also       []alsoApp
	// given are the manifests of --manifests, read before anything is reached.
	given  []check.Manifest
	output outputFlags
	// ask is argocd-server, when it can answer for Argo CD (nil otherwise).
	ask cluster.Oracle
}

// NewCheckCommand builds `unprune check`.
func NewCheckCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CheckOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "check (APP | applicationset/NAME) (--manifests PATH|- | --revision REV)",
		Short: "Before a change is merged: which live objects it makes Argo CD adopt, and which it prunes",
		Long: `Compare an Application's desired manifests after a change with the live cluster and with what
the app tracks today, under Argo CD's rules (tracking method and instance, namespaces defaulting to
the destination's, hooks, resource exclusions, the project's permitted kinds), and report:

  adoptions  manifests whose object already exists and is not this app's: untracked (Argo CD takes
             it over, and removing it from git later deletes it), tracked by another app (the two
             apps will fight), or carrying copied tracking metadata
  prunes     objects the app tracks that the change removes: deleted at the next automated sync
             (automated prune), else left requiring pruning

each with its risk class, what goes with it (a Namespace's objects, a CRD's custom resources) and what
guards it. A pruned (or renamed) child Application of an app of apps is followed through its
finalizer: with resources-finalizer.argocd.argoproj.io its deletion deletes every resource it tracks
(except CRDs, Delete=false and helm.sh/resource-policy: keep; Delete=confirm waits for approval),
recursively; without one they stay, still tracked.

applicationset/NAME checks a change to an ApplicationSet: --manifests holds the set after the change.
With argocd-server reachable (--via argocd, or its address in --argocd-server or $ARGOCD_SERVER with a
token), Argo CD generates the set's Applications itself, every generator included; otherwise unprune
evaluates its list, clusters, git (with --repo-dir), matrix and merge generators offline, as Argo CD
does, and reports anything it does not reproduce exactly as not evaluated, never guessed. Every app the
set owns and no longer generates is deleted when the controller's effective policy deletes apps (the
set's applicationsSync, unless applicationsetcontroller.policy in argocd-cmd-params-cm overrides it),
and gets the same answer. A rename gets the advice that deletes nothing under that policy.

The manifests are the app's, rendered by your CI (kustomize build, helm template, plain YAML: a file,
a directory, or - for stdin); with argocd-server reachable, --revision asks Argo CD to render them.
The output says which answers came from Argo CD and which unprune computed.
check reads only: it changes nothing, ever.

--fail-on adoption|high|any turns findings into exit code 1 for CI; -o markdown writes a
pull-request comment.

` + exitCodesHelp,
		Example: `  kustomize build overlays/prod | unprune check my-app --manifests - --fail-on high
  unprune check my-app --manifests rendered/ -o markdown > comment.md
  argocd unprune check my-app --revision feature-branch
  unprune check applicationset/teams --manifests appsets/teams.yaml --repo-dir . -o markdown`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeApps(f),
		RunE:              runE(f, o),
	}
	cmd.Flags().StringVar(&o.Manifests, "manifests", "", "the app's manifests after the change: a file, a directory, or - for stdin")
	cmd.Flags().StringVar(&o.Revision, "revision", "", "let Argo CD render the app's manifests at this git revision (needs argocd-server: --via argocd, or --argocd-server/$ARGOCD_SERVER)")
	cmd.Flags().StringVar(&o.RepoDir, "repo-dir", "", "for applicationset/NAME: a clone of the repository its git generators read; each generator's revision (HEAD, a branch, a tag, a commit) is read from its commits, never its working tree")
	cmd.Flags().StringVar(&o.FailOn, "fail-on", "", "exit 1 when the change adopts anything (adoption), does anything high-risk (high), or anything at all (any)")
	cmd.Flags().StringArrayVar(&o.AlsoValues, "also", nil, "also check another app of the same change, as APP=PATH (its manifests after it; repeatable): a resource the change moves between the apps is reported once, as a Move, with the unprune move recipe")
	_ = cmd.RegisterFlagCompletionFunc("fail-on", fixedCompletion("adoption", "high", "any"))
	o.output.add(cmd, false)
	cmd.Flags().Lookup("output").Usage = "output format: table, markdown, json, yaml, name, jsonpath=…, go-template=…"
	return cmd
}

// Validate checks flags; it needs no cluster.
func (o *CheckOptions) Validate(args []string) error {
	markdown := o.output.value == "markdown"
	if markdown {
		o.output.value = ""
	}
	if err := o.output.validate(); err != nil {
		return err
	}
	if markdown {
		o.output.out.Format = "markdown"
	}
	switch o.FailOn {
	case "", "adoption", "high", "any":
	default:
		return usageError("--fail-on=%q: use adoption, high or any", o.FailOn)
	}
	switch {
	case (o.Manifests == "") == (o.Revision == ""):
		return usageError("give the manifests after the change with --manifests PATH|-, or (with --via argocd) --revision REV")
	case o.Revision != "" && !o.cfg.ServerNamed(o.session.Getenv):
		return usageError("--revision needs Argo CD to render the manifests: name its server (%v or $ARGOCD_SERVER, with a token), or use %v argocd; or render them yourself and pass --manifests",
			option.ArgoCDServer, option.Via)
	}
	arg, set := cutSetPrefix(args[0])
	o.Set = set
	if set && o.Revision != "" {
		return usageError("--revision renders an Application's manifests; for an ApplicationSet give the changed set with --manifests")
	}
	app, err := engine.ParseAppName(arg)
	if err != nil {
		return usageError("%v", err)
	}
	if ns, set := o.namespaceFlag(); set && app.Namespace == "" {
		app.Namespace = ns
	}
	o.App = app
	if err := o.parseAlso(); err != nil {
		return err
	}
	return nil
}

// Run checks and prints.
func (o *CheckOptions) Run(ctx context.Context) error {
	// What needs no cluster to judge is judged first: broken YAML is said before any connection.
	if err := o.readGiven(); err != nil {
		return err
	}
	argo, _, err := o.connect(ctx)
	if err != nil {
		return err
	}
	if o.ask, err = o.session.Oracle(argo.Namespace()); err != nil {
		return failure(err)
	}
	ns := o.App.Namespace
	if ns == "" {
		ns = argo.Namespace()
	}
	if o.Set {
		return o.runSet(ctx, argo, ns)
	}
	app, err := argo.GetApplication(ctx, ns, o.App.Name)
	if err != nil {
		return failure(fmt.Errorf("%w (is the app in another namespace? use NAMESPACE/NAME or -n)", err))
	}
	manifests, err := o.manifests(ctx, app)
	if err != nil {
		return err
	}
	rep, err := check.Run(ctx, argo, o.installed.settings, app, manifests, o.ask)
	if err != nil {
		return failure(err)
	}
	rep.Answers = append([]check.Answer{o.manifestsAnswer()}, rep.Answers...)
	check.NoteMoves(ctx, &rep, argo.Namespace())
	if len(o.also) > 0 {
		return o.runAlso(ctx, argo, rep, len(manifests))
	}
	return o.print(argo, rep, len(manifests))
}

// print writes the report and turns findings into the exit code --fail-on asks for.
func (o *CheckOptions) print(argo cluster.ArgoCD, rep check.Report, manifests int) error {
	info := argo.Cluster()
	doc := printer.NewCheckReport(o.metadata(&info), printer.NewArgoCD(argo.Namespace(), o.installed.settings.Settings), rep)
	var err error
	for _, w := range rep.Warnings {
		fmt.Fprintln(o.ErrOut, "warning:", printer.Line(w))
	}
	if rep.Set != nil && !o.output.out.Document() && o.output.out.Format != "markdown" {
		for _, n := range rep.Set.Notes {
			fmt.Fprintln(o.ErrOut, "note:", printer.Line(n))
		}
	}
	switch {
	case o.output.out.Format == "markdown":
		err = printer.CheckMarkdown(o.Out, doc)
	case o.output.out.Document():
		err = o.output.out.Print(o.Out, doc, doc.Names)
	case len(doc.Items) == 0 && len(doc.Applications) == 0:
		printer.CheckMovedOut(o.ErrOut, doc)
		elseWord := ""
		if len(doc.MovedOut) > 0 {
			elseWord = " else"
		}
		fmt.Fprintf(o.ErrOut, "The change makes Argo CD adopt no existing object and prune nothing%s (%s).\n", elseWord, printer.Count(manifests, "manifest"))
		if line := printer.AnswersLine(doc.Answers); line != "" && o.ask != nil {
			fmt.Fprintln(o.ErrOut, line)
		}
	default:
		err = printer.CheckTable(o.Out, o.output.out, doc)
		printer.CheckMoves(o.ErrOut, doc)
		printer.CheckMovedOut(o.ErrOut, doc)
		printer.CheckFixes(o.ErrOut, doc)
		if len(doc.Applications) == 0 {
			fmt.Fprintf(o.ErrOut, "%s, %s, %d high-risk.\n", printer.Count(doc.Summary.Adoptions, "adoption"), printer.CheckPrunes(doc.Summary), doc.Summary.High)
			break
		}
		fmt.Fprintf(o.ErrOut, "%s, %s, %s deleted (%s with them), %d high-risk.\n",
			printer.Count(doc.Summary.Adoptions, "adoption"), printer.CheckPrunes(doc.Summary), printer.Count(doc.Summary.AppsDeleted, "app"),
			printer.Count(doc.Summary.CascadeDeletions, "resource"), doc.Summary.High)
	}
	if line := printer.AnswersLine(doc.Answers); line != "" && !o.output.out.Document() && o.output.out.Format != "markdown" && (len(doc.Items) > 0 || len(doc.Applications) > 0) {
		fmt.Fprintln(o.ErrOut, line)
	}
	if err != nil {
		return err
	}
	if doc.Findings(o.FailOn) {
		return Silent(ExitFindings)
	}
	return nil
}

// manifestsAnswer says where the manifests came from.
func (o *CheckOptions) manifestsAnswer() check.Answer {
	if o.Manifests != "" {
		return check.Answer{Question: check.QuestionManifests, By: check.ByGiven}
	}
	return check.Answer{Question: check.QuestionManifests, By: check.ByArgoCD, Server: o.ask.Server()}
}

// readGiven reads and parses the manifests given with --manifests and --also.
func (o *CheckOptions) readGiven() error {
	if o.Manifests != "" {
		ms, err := check.ReadManifests(o.Manifests, o.In)
		if err != nil {
			return usageError("--manifests: %v", err)
		}
		o.given = ms
	}
	for i := range o.also {
		a := &o.also[i]
		ms, err := check.ReadManifests(a.Manifests, o.In)
		if err != nil {
			return usageError("--also %s: %v", a.App, err)
		}
		a.given = ms
	}
	return nil
}

// manifests are the desired manifests: given with --manifests, or rendered by Argo CD at --revision.
func (o *CheckOptions) manifests(ctx context.Context, app argocd.Application) ([]check.Manifest, error) {
	if o.Manifests != "" {
		return o.given, nil
	}
	docs, err := o.ask.Manifests(ctx, app, o.Revision)
	if errors.Is(err, cluster.ErrUnsupported) {
		return nil, usageError("--revision needs Argo CD's API")
	}
	if err != nil {
		return nil, failure(err)
	}
	return check.ParseManifests(fmt.Sprintf("Argo CD's manifests at %s (%s)", o.Revision, o.ask.Server()), docs)
}
