package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/plan"
)

// ObjectsRequest is a metadata change on objects named one by one, outside any Application (guard
// protect|confirm), with the same preview, dry run, journal and undo as detach. What the change
// is belongs to the caller (package guard): the engine resolves, reads, plans and applies.
type ObjectsRequest struct {
	// Command and Strategy name the change in reports and the journal (guard, protect).
	Command, Strategy string
	Resources         []ResourceArg
	// Build plans the change for one object.
	Build func(plan.Target) plan.Plan
	// Mark says the change is a mark Argo CD reads (an option in sync-options): on an object an app
	// tracks and still declares, Argo CD writes the manifest's value back over a mark it sees, so
	// the planner is told the object is declared (plan.Target.Declared), and after the patches that
	// app's comparison must not see them.
	Mark bool
}

// PlanObjects resolves and reads the named objects in objects' cluster and plans each change.
func (e *Engine) PlanObjects(ctx context.Context, objects cluster.Objects, req ObjectsRequest) (*Change, error) {
	op := &objectsPlanner{build: req.Build, e: e, ctx: ctx, mark: req.Mark, apps: map[string]*argocd.Application{}, tracked: map[*Item]*argocd.Application{}}
	p := &Planned{Command: req.Command, Strategy: req.Strategy, planner: op}
	for _, arg := range req.Resources {
		ref, err := objects.Resolve(ctx, arg.Group, arg.Kind, "", arg.Namespace, arg.Name)
		if err != nil {
			return nil, invalid("%s: %v", Quote(arg.Raw), err)
		}
		if ref.Namespaced && ref.Namespace == "" {
			return nil, invalid("%s is namespaced: use %s/NAMESPACE/%s", ref.Kind, arg.Kind, arg.Name)
		}
		p.Items = append(p.Items, &Item{Objects: objects, Ref: ref, Entry: -1})
	}
	e.readAndPlan(ctx, p, nil)
	if req.Mark {
		op.warnNamespacesPruned(ctx, p)
	}
	c := &Change{Planned: p, Steps: []*Step{{Kind: StepPatch, Why: "change the named objects"}}, rollback: true}
	c.Steps = append(c.Steps, op.checks(p)...)
	if req.Mark && e.ArgoCD == nil {
		p.Warnings = append(p.Warnings, "Argo CD was not read, so unprune cannot ask it whether it sees the marks: check that no app of yours declares these objects "+
			"with that annotation in its manifests, or it writes the manifest's value back")
	}
	return c, nil
}

// objectsPlanner plans an object outside any app: it sees its metadata and, for a mark, whether the
// app that tracks it declares it.
type objectsPlanner struct {
	build func(plan.Target) plan.Plan
	e     *Engine
	ctx   context.Context
	mark  bool
	// apps are the apps read, by instance; tracked the app that declares each item's object.
	apps    map[string]*argocd.Application
	tracked map[*Item]*argocd.Application
}

func (o *objectsPlanner) Plan(it *Item, live *cluster.Object) plan.Plan {
	t := plan.Target{Ref: live.Ref.ObjectRef(), Resource: live.Ref.Resource, Labels: live.Labels, Annotations: live.Annotations, Deleting: live.Deleting, ManagedFields: live.ManagedFields}
	// The app that tracks the object and declares it applies its manifest again; with Replace=true it
	// writes the whole manifest over it. (Another app declaring the same object is audit's to find:
	// its force-replace rows.)
	if app := o.declaring(t); app != nil {
		t.Declared = true
		t.Replaced = slices.Contains(app.SyncOptions, argocd.OptionReplace) || argocd.HasOption(live.Annotations[argocd.AnnotationSyncOptions], argocd.OptionReplace)
		if o.mark {
			o.tracked[it] = app
		}
	}
	return o.build(t)
}

// warnNamespacesPruned warns of a mark on an object whose Namespace the app tracking it prunes: the
// prune of the Namespace deletes the object, its mark aside (deletion.Together). A Namespace this
// run marks too holds.
func (o *objectsPlanner) warnNamespacesPruned(ctx context.Context, p *Planned) {
	if o.e.ArgoCD == nil {
		return
	}
	marked := map[string]bool{}
	for _, it := range p.Items {
		if it.Ref.Group == "" && it.Ref.Kind == "Namespace" && (it.Outcome == OutcomePlanned || it.Outcome == OutcomeUnchanged) {
			marked[it.rowKey()] = true
		}
	}
	for _, it := range p.Items {
		if (it.Outcome != OutcomePlanned && it.Outcome != OutcomeUnchanged) || it.Ref.Namespace == "" || it.Live == nil {
			continue
		}
		app := o.trackedBy(it.Live)
		if app == nil {
			continue
		}
		if goes, err := o.e.prunedNamespace(ctx, *app, it.Objects, it.Ref.Namespace, marked); err == nil && goes {
			p.Warnings = append(p.Warnings, it.Ref.String()+": "+namespaceGoesWhy(app.Ref(), it.Ref.Namespace, "any sync option", "guard"))
		}
	}
}

// trackedBy is the app whose tracking the object carries, or nil.
func (o *objectsPlanner) trackedBy(live *cluster.Object) *argocd.Application {
	own := o.e.Settings.Owner(live.Labels, live.Annotations, live.Ref.ObjectRef())
	if !own.Tracked {
		return nil
	}
	return o.instanceApp(own.Instance)
}

// instanceApp is the app of an instance, read once per run; nil when there is none.
func (o *objectsPlanner) instanceApp(instance string) *argocd.Application {
	app, seen := o.apps[instance]
	if !seen {
		app, _ = o.e.appOfInstance(o.ctx, undoApps{}, instance)
		o.apps[instance] = app
	}
	return app
}

// declaring is the app that tracks the object and lists it as desired (its manifest is in the
// app's git), or nil.
func (o *objectsPlanner) declaring(t plan.Target) *argocd.Application {
	if o.e.ArgoCD == nil {
		return nil
	}
	own := o.e.Settings.Owner(t.Labels, t.Annotations, t.Ref)
	if !own.Tracked {
		return nil
	}
	app := o.instanceApp(own.Instance)
	if app == nil {
		return nil
	}
	for _, r := range app.Resources {
		if r.Group == t.Ref.Group && r.Kind == t.Ref.Kind && r.Namespace == t.Ref.Namespace && r.Name == t.Ref.Name && !r.RequiresPruning && !r.Hook {
			return app
		}
	}
	return nil
}

// checks are, per app that declares marked objects, the check that its comparison after the
// patches does not see the marks.
func (o *objectsPlanner) checks(p *Planned) []*Step {
	rows := map[string][]argocd.Resource{}
	apps := map[string]*argocd.Application{}
	for _, it := range p.Items {
		app := o.tracked[it]
		if app == nil || it.Outcome != OutcomePlanned {
			continue
		}
		for _, r := range app.Resources {
			if r.Group == it.Ref.Group && r.Kind == it.Ref.Kind && r.Namespace == it.Ref.Namespace && r.Name == it.Ref.Name {
				rows[app.Ref()] = append(rows[app.Ref()], r)
			}
		}
		apps[app.Ref()] = app
	}
	refs := make([]string, 0, len(apps))
	for ref := range apps {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	var steps []*Step
	for _, ref := range refs {
		app := apps[ref]
		name := AppName{Namespace: app.Namespace, Name: app.Name}
		fix := fmt.Sprintf("Argo CD writes its manifest's value back over a mark it sees, so the marks were taken off again: put the option into the annotation "+
			"in %s's manifests instead", name)
		steps = append(steps, &Step{Kind: StepCheck, App: name, Expect: expectUnchanged(rows[ref], fix),
			Why: fmt.Sprintf("Argo CD's comparison of %s, which declares %s, does not see the marks", name, resourceList(rows[ref]))})
	}
	return steps
}

func resourceList(rows []argocd.Resource) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}
