package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
)

// GuardAnnotateOptions are the inputs of `guard approve` and `guard budget`: one annotation on an
// Application (or, with --applicationset, an ApplicationSet; for budget --project, an AppProject),
// planned, journaled and undone like every guard change.
type GuardAnnotateOptions struct {
	completed
	genericiooptions.IOStreams
	Verb    string
	App     string
	Project bool
	AppSet  bool
	Budget  int
	change  changeFlags
	output  outputFlags
}

func newGuardApproveCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GuardAnnotateOptions{IOStreams: streams, Verb: "approve"}
	cmd := o.command(f, &cobra.Command{
		Use:   "approve APP",
		Short: "Approve the deletions the deletion budget holds back for an app, exactly those Argo CD's comparison shows now",
		Long: `Approve the deletions Argo CD's comparison shows now for APP — the resources requiring pruning, or,
for an app being deleted, everything its cascade deletes — so that the deletion budget (unprune watch
--deletion-budget, deploy/components/deletion-budget) lets the next sync or the cascade delete them,
however many they are and however risky.

The approval names each object by UID in the annotation ` + budget.AnnotationApproved + ` on the
Application: an object created later under the same name is not approved, and an approval is spent
once its objects are gone. Without --yes this is a preview; --dry-run=server asks the API server.
The change is journaled (with who made it) and "unprune undo" withdraws it.

With --applicationset, APP names an ApplicationSet: the approval covers the Applications its
controller asked to delete in the last ` + budget.AppSetWindowText + ` (the webhook records them in the
annotation ` + budget.AnnotationAsked + ` on the set) and that still exist.

` + exitCodesHelp,
		Example: "  unprune guard approve shop -n argocd\n  unprune guard approve shop -n argocd --yes\n  unprune guard approve envs --applicationset -n argocd --yes",
		Args:    cobra.ExactArgs(1),
	})
	o.appSetFlag(cmd)
	return cmd
}

func newGuardBudgetCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GuardAnnotateOptions{IOStreams: streams, Verb: "budget"}
	cmd := o.command(f, &cobra.Command{
		Use:   "budget APP N",
		Short: "Set the most objects one sync or cascade of an app (or every app of a project) may delete without approval",
		Long: `Set the deletion budget of APP (or, with --project, of every app of project APP that sets none of
its own; with --applicationset, of ApplicationSet APP): the most objects one sync or cascade of
Argo CD may delete (for a set: the most Applications its controller may delete within
` + budget.AppSetWindowText + `) before the deletion budget's webhook refuses all of them until someone runs
"unprune guard approve". It is the annotation
` + budget.AnnotationBudget + `; apps and projects without it have the installation's default
(unprune watch --deletion-budget). High-risk objects wait for approval whatever the budget.

Without --yes this is a preview; --dry-run=server asks the API server. The change is journaled and
"unprune undo" reverses it.

` + exitCodesHelp,
		Example: "  unprune guard budget shop 20 -n argocd --yes\n  unprune guard budget team-a 10 --project --yes",
		Args:    cobra.ExactArgs(2),
	})
	cmd.Flags().BoolVar(&o.Project, "project", false, "APP names an AppProject: its budget is every one of its apps' that sets none")
	o.appSetFlag(cmd)
	return cmd
}

func (o *GuardAnnotateOptions) appSetFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.AppSet, "applicationset", false, "APP names an ApplicationSet: its controller's deletions of Applications")
}

// command completes cmd: flags → options → run, and the change and output flags.
func (o *GuardAnnotateOptions) command(f Factory, cmd *cobra.Command) *cobra.Command {
	cmd.RunE = runE(f, o)
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// Validate checks arguments.
func (o *GuardAnnotateOptions) Validate(args []string) error {
	if err := o.validateGuardChange(o.Verb, &o.output, &o.change); err != nil {
		return err
	}
	o.App = args[0]
	if o.Project && o.AppSet {
		return usageError("--project and %v: pass one of them (APP names an AppProject, or an ApplicationSet)", option.ApplicationSet)
	}
	if strings.Contains(o.App, "/") {
		return usageError("APP %q: give the app's name, and its namespace with -n", o.App)
	}
	if o.Verb == "budget" {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 {
			return usageError("N %q: give the most objects one operation may delete without approval, a whole number (0: every deletion waits for approval)", args[1])
		}
		o.Budget = n
	}
	return nil
}

// Run plans, previews, dry-runs or applies the annotation.
func (o *GuardAnnotateOptions) Run(ctx context.Context) error {
	argo, settings, err := o.connect(ctx)
	if err != nil {
		return err
	}
	namespace, ok := o.namespaceFlag()
	if !ok || o.Project {
		namespace = argo.Namespace()
	}
	arg := engine.ResourceArg{Group: "argoproj.io", Kind: "Application", Namespace: namespace, Name: o.App, Raw: "applications.argoproj.io/" + namespace + "/" + o.App}
	key, value := budget.AnnotationBudget, strconv.Itoa(o.Budget)
	if o.Project {
		arg.Kind, arg.Raw = "AppProject", "appprojects.argoproj.io/"+namespace+"/"+o.App
	}
	if o.AppSet {
		arg.Kind, arg.Raw = "ApplicationSet", "applicationsets.argoproj.io/"+namespace+"/"+o.App
	}
	switch {
	case o.Verb == "approve" && o.AppSet:
		uids, err := o.asked(ctx, argo, namespace)
		if err != nil {
			return err
		}
		if len(uids) == 0 {
			fmt.Fprintf(o.ErrOut, "Nothing to approve: ApplicationSet %s/%s's controller asked to delete no Application that still exists in the last %s.\n", namespace, o.App, budget.AppSetWindowText)
			return nil
		}
		key, value = budget.AnnotationApproved, budget.FormatApproved(uids)
	case o.Verb == "approve":
		app, err := argo.GetApplication(ctx, namespace, o.App)
		if err != nil {
			return failure(fmt.Errorf("Application %s/%s: %w", namespace, o.App, err))
		}
		uids, err := o.pending(ctx, argo, app)
		if err != nil {
			return err
		}
		if len(uids) == 0 {
			fmt.Fprintf(o.ErrOut, "Nothing to approve: Argo CD's comparison shows no deletion for app %s.\n", app.Ref())
			return nil
		}
		key, value = budget.AnnotationApproved, budget.FormatApproved(uids)
	}
	objects, err := o.target(ctx, "")
	if err != nil {
		return err
	}
	e, err := o.engine(argo, settings, 1)
	if err != nil {
		return err
	}
	c, err := e.PlanObjects(ctx, objects, engine.ObjectsRequest{Command: guard.Command, Strategy: o.Verb, Resources: []engine.ResourceArg{arg}, Build: guard.AnnotationPlan(key, value)})
	if err != nil {
		return engineError(err)
	}
	c.AllOrNothing = true
	counts := c.Counts()
	if counts[engine.OutcomePlanned] == 0 && counts[engine.OutcomeRefused]+counts[engine.OutcomeFailed]+counts[engine.OutcomeGone] == 0 {
		fmt.Fprintf(o.ErrOut, "Nothing to change: %s says %s already.\n", arg.Raw, key+"="+value)
	}
	info := objects.Info()
	question := fmt.Sprintf("Set the deletion budget of %s to %d? [y/N] ", arg.Raw, o.Budget)
	if o.Verb == "approve" {
		question = fmt.Sprintf("Approve these deletions for app %s/%s? [y/N] ", namespace, o.App)
		if o.AppSet {
			question = fmt.Sprintf("Approve these deletions for ApplicationSet %s/%s? [y/N] ", namespace, o.App)
		}
	}
	return o.runChange(ctx, o.IOStreams, o.output, o.change.dryRun, e, c, changeCommand{kind: "GuardReport", cluster: &info, question: question})
}

// pending are the UIDs of what Argo CD's comparison says the app's next operation deletes
// (budget.Pending), each listed on stderr. An object that no longer exists needs no approval.
func (o *GuardAnnotateOptions) pending(ctx context.Context, argo cluster.ArgoCD, app argocd.Application) ([]string, error) {
	what, ds, err := budget.Pending(ctx, argo, app)
	if err != nil {
		return nil, failure(err)
	}
	if len(ds) == 0 {
		return nil, nil
	}
	fmt.Fprintf(o.ErrOut, "Argo CD's comparison of app %s shows what %s:\n", app.Ref(), what)
	for _, d := range ds {
		if d.Gone {
			fmt.Fprintf(o.ErrOut, "  %s: gone already\n", d.Row)
			continue
		}
		fmt.Fprintf(o.ErrOut, "  %s (uid %s)\n", d.Row, d.UID)
	}
	return budget.UIDs(ds), nil
}

// asked are the UIDs of the Applications an ApplicationSet's controller asked to delete within the
// budget's window, as the webhook recorded them on the set, that still exist; each is listed on
// stderr.
func (o *GuardAnnotateOptions) asked(ctx context.Context, argo cluster.ArgoCD, namespace string) ([]string, error) {
	reader, ok := argo.(check.SetReader)
	if !ok {
		return nil, usageError("approving an ApplicationSet's deletions reads the set from its cluster: drop %v argocd", option.Via)
	}
	set, err := reader.GetApplicationSet(ctx, namespace, o.App)
	if err != nil {
		return nil, failure(err)
	}
	asked := budget.Fresh(budget.ParseAsked((&unstructured.Unstructured{Object: set}).GetAnnotations()), o.session.Now())
	if len(asked) == 0 {
		return nil, nil
	}
	owned, err := reader.OwnedApplications(ctx, namespace, o.App)
	if err != nil {
		return nil, failure(err)
	}
	exists := map[string]bool{}
	for _, app := range owned {
		exists[app.UID] = true
	}
	fmt.Fprintf(o.ErrOut, "ApplicationSet %s/%s's controller asked to delete, in the last %s:\n", namespace, o.App, budget.AppSetWindowText)
	var uids []string
	for _, a := range asked {
		if !exists[a.UID] {
			fmt.Fprintf(o.ErrOut, "  Application %s: gone already\n", a.Name)
			continue
		}
		fmt.Fprintf(o.ErrOut, "  Application %s/%s (uid %s)\n", namespace, a.Name, a.UID)
		uids = append(uids, a.UID)
	}
	return uids, nil
}
