package check

import (
	"context"
	"fmt"
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

// Kinds of the items inside an AppChange: what the deletion of a whole app does to one of its
// resources.
const (
	// CascadeDelete: the app's resources finalizer deletes the object (or keeps it, when guarded).
	CascadeDelete Kind = "CascadeDelete"
	// Orphan: the app has no resources finalizer; the object stays, still carrying its tracking.
	Orphan Kind = "Orphan"
)

// Reasons of CascadeDelete and Orphan items.
const (
	DeletedWithApp Reason = "DeletedWithApp"
	KeptByGuard    Reason = "KeptByGuard"
	LeftTracked    Reason = "LeftTracked"
)

// Fate is what Argo CD does with the resources of an Application that is deleted.
type Fate string

const (
	// Cascade: a resources finalizer (plain, /foreground or /background): every resource the app
	// tracks is deleted, except CRDs and guarded ones (controller/appcontroller.go
	// finalizeApplicationDeletion, shouldBeDeleted).
	Cascade Fate = "Cascade"
	// Orphaned: no resources finalizer: the resources stay, still tracked by the gone app's instance;
	// a new app of the same instance re-adopts them.
	Orphaned Fate = "Orphaned"
	// NotDeleted: the app itself is not deleted (a guard on it, or the ApplicationSet's policy).
	NotDeleted Fate = "NotDeleted"
	// NotEvaluated: unprune cannot tell (an unreadable app, a generator it does not evaluate).
	NotEvaluated Fate = "NotEvaluated"
)

// AppChange is an Application that a change deletes or renames, with what that does to its
// resources. Apps of apps nest: an app deleted by another's cascade has its own AppChange, with
// Through naming the app whose deletion deletes it.
type AppChange struct {
	App argocd.Application
	// DeletedBy says who deletes it and when, in words.
	DeletedBy string
	// Through is the chain of apps whose cascade reaches this one, outermost first; empty at the top.
	Through []string
	// RenamedTo is the new name when the change adds an app of the same source and destination.
	RenamedTo string
	Fate      Fate
	Finalizer string
	Cluster   cluster.Info
	Resources []Item
	// Deleted counts resources the cascade deletes; High the unguarded high-risk ones among them.
	Deleted, High int
	// Waits: a resource needs deletion confirmation, so the whole cascade waits for approval.
	Waits bool
	// Fix says how to make the change without deleting anything.
	Fix   string
	Notes []string
	Error string

	// finalizers and sourceTypes are the live app's, for the rename advice; deleteHooks its live
	// hooks that its deletion runs ("ConfigMap/ns/name (PostDelete)").
	finalizers  []string
	sourceTypes []string
	deleteHooks []string
}

// maxDepth bounds how deep apps of apps are followed; the seen set already stops cycles.
const maxDepth = 10

// family turns prunes of Applications into whole-app answers: what Argo CD does to the child's
// resources once the parent deletes it; a pruned Namespace takes the Applications in it along.
func family(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, manifests []Manifest, oracle cluster.Oracle, rep *Report) {
	added := addedApps(manifests, rep.App)
	d := follower{argo: argo, s: s, seen: map[string]bool{rep.App.Ref(): true}}
	for _, it := range rep.Items {
		isApp, isNamespace := isApplication(it.Resource.Group, it.Resource.Kind), it.Resource.Group == "" && it.Resource.Kind == "Namespace"
		if it.Kind != Prune || !(isApp || isNamespace) {
			continue
		}
		objects, err := argo.Destination(ctx, rep.App)
		if err != nil {
			rep.Apps = append(rep.Apps, AppChange{App: argocd.Application{Namespace: it.Resource.Namespace, Name: it.Resource.Name}, Fate: NotEvaluated, Error: err.Error()})
			continue
		}
		by := fmt.Sprintf("the parent app %s prunes it at its next automated sync", rep.App.Ref())
		if it.Reason == LeftRequiringPruning {
			by = fmt.Sprintf("any sync of the parent app %s with PRUNE ticked deletes it", rep.App.Ref())
		}
		switch {
		case isNamespace && !it.Guarded:
			who := fmt.Sprintf("the app %s's prune (at its next automated sync)", rep.App.Ref())
			if it.Reason == LeftRequiringPruning {
				who = fmt.Sprintf("any sync of %s with PRUNE ticked", rep.App.Ref())
			}
			rep.Apps = append(rep.Apps, d.namespace(ctx, objects, it.Resource.Name, who, nil)...)
		case isNamespace:
		case it.Guarded:
			rep.Apps = append(rep.Apps, AppChange{App: argocd.Application{Namespace: it.Resource.Namespace, Name: it.Resource.Name}, Fate: NotDeleted,
				DeletedBy: fmt.Sprintf("nobody: a guard on it (%v) stops the parent app %s from pruning it", it.Guards, rep.App.Ref())})
		default:
			changes := d.app(ctx, objects, it.Resource.Namespace, it.Resource.Name, by, nil)
			if w, ok := renamedTo(ctx, objects, it.Resource, added); ok {
				changes[0].RenamedTo = w.Name
				fix, notes := renameAdvice(s.Version, changes[0], w)
				changes[0].Fix, changes[0].Notes = fix, append(changes[0].Notes, notes...)
			}
			rep.Apps = append(rep.Apps, changes...)
		}
	}
	parentSets(ctx, argo, s, manifests, oracle, rep)
}

func isApplication(group, kind string) bool { return group == "argoproj.io" && kind == "Application" }

// addedApps are the Application manifests of the change that the parent does not track yet.
func addedApps(manifests []Manifest, parent argocd.Application) []argocd.Whole {
	tracked := map[string]bool{}
	for _, r := range parent.Resources {
		if isApplication(r.Group, r.Kind) {
			tracked[r.Namespace+"/"+r.Name] = true
		}
	}
	var out []argocd.Whole
	for _, m := range manifests {
		gvk := m.Object.GroupVersionKind()
		if !isApplication(gvk.Group, gvk.Kind) {
			continue
		}
		w := argocd.ParseWhole(m.Object.Object)
		if w.Namespace == "" {
			w.Namespace = parent.Destination.Namespace
		}
		if !tracked[w.Namespace+"/"+w.Name] {
			out = append(out, w)
		}
	}
	return out
}

// renamedTo finds the added app that deploys what the removed one deployed.
func renamedTo(ctx context.Context, objects cluster.Objects, r argocd.Resource, added []argocd.Whole) (argocd.Whole, bool) {
	ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
	if err != nil {
		return argocd.Whole{}, false
	}
	live, err := objects.Get(ctx, ref)
	if err != nil || live.Content == nil {
		return argocd.Whole{}, false
	}
	old := argocd.ParseWhole(live.Content)
	for _, w := range added {
		if w.Namespace == old.Namespace && old.SameTarget(w) {
			return w, true
		}
	}
	return argocd.Whole{}, false
}

// follower follows one app's deletion through its finalizer and into the apps it deletes.
type follower struct {
	argo cluster.ArgoCD
	s    cluster.Settings
	seen map[string]bool

	scopes   map[string]*deletion.Scope
	projects map[string]*argocd.Project

	// params are argocd-cmd-params-cm, read once when a deleted Namespace holds Applications.
	params     map[string]string
	paramsErr  error
	paramsRead bool
}

// app answers what deleting the Application namespace/name does. home is the cluster where the
// Application object lives (its parent's destination). The first change is the app's own; nested
// ones follow.
func (d *follower) app(ctx context.Context, home cluster.Objects, namespace, name, by string, through []string) []AppChange {
	c := AppChange{App: argocd.Application{Namespace: namespace, Name: name}, DeletedBy: by, Through: through}
	ref := namespace + "/" + name
	if d.seen[ref] || len(through) >= maxDepth {
		c.Fate, c.Notes = NotEvaluated, []string{"already followed: apps of apps form a cycle (or nest deeper than unprune follows)"}
		return []AppChange{c}
	}
	d.seen[ref] = true
	app, err := d.argo.GetApplication(ctx, namespace, name)
	if err != nil {
		c.Fate, c.Error = NotEvaluated, fmt.Sprintf("cannot read the Application: %v", err)
		return []AppChange{c}
	}
	c.App = app
	whole, err := readWhole(ctx, home, namespace, name)
	if err != nil {
		c.Fate, c.Error = NotEvaluated, fmt.Sprintf("cannot read its finalizers: %v", err)
		return []AppChange{c}
	}
	c.Finalizer = argocd.CascadeFinalizer(whole.Finalizers)
	c.finalizers, c.sourceTypes = whole.Finalizers, whole.SourceTypes
	c.Notes = append(c.Notes, deletion.Hooks(whole.Finalizers)...)
	c.Fate = Orphaned
	if c.Finalizer != "" {
		c.Fate = Cascade
	}
	objects, err := d.argo.Destination(ctx, app)
	if err != nil {
		c.Error = err.Error()
		return []AppChange{c}
	}
	c.Cluster = objects.Info()
	c.deleteHooks = deleteHooks(ctx, objects, app)
	nested := d.resources(ctx, objects, &c, append(append([]string(nil), through...), app.Ref()))
	return append([]AppChange{c}, nested...)
}

// deleteHooks are the app's live hooks (its hook rows) that its deletion runs: PreDelete and
// PostDelete ones. An unreadable one is left out; the finalizers still say hooks run.
func deleteHooks(ctx context.Context, objects cluster.Objects, app argocd.Application) []string {
	var out []string
	for _, r := range app.Resources {
		if !r.Hook {
			continue
		}
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			continue
		}
		if live, err := objects.Get(ctx, ref); err == nil {
			if t := argocd.DeleteHookType(live.Annotations); t != "" {
				out = append(out, fmt.Sprintf("%s (%s)", r, t))
			}
		}
	}
	return out
}

func readWhole(ctx context.Context, home cluster.Objects, namespace, name string) (argocd.Whole, error) {
	ref, err := home.Resolve(ctx, "argoproj.io", "Application", "", namespace, name)
	if err != nil {
		return argocd.Whole{}, err
	}
	live, err := home.Get(ctx, ref)
	if err != nil {
		return argocd.Whole{}, err
	}
	return argocd.ParseWhole(live.Content), nil
}

// resources reads what the app's deletion reaches — its rows read live, and the objects carrying a
// copy of its tracking — and says what the deletion does to each; apps it deletes are followed, and
// so are the apps in a Namespace it deletes.
func (d *follower) resources(ctx context.Context, objects cluster.Objects, c *AppChange, through []string) []AppChange {
	policy, _ := guard.ReadInstalled(ctx, objects)
	instance := c.App.Instance(d.argo.Namespace())
	members, notes := d.scope(objects).Members(ctx, c.App, instance)
	c.Notes = append(c.Notes, notes...)
	var nested []AppChange
	var judged []Item
	for _, m := range members {
		item := Item{Kind: Orphan, Reason: LeftTracked, Resource: m.Object.Resource(), Cluster: c.Cluster}
		if m.Live == nil {
			item.Error = m.Error
			judged = append(judged, item)
			continue
		}
		if item, listed := d.judge(ctx, objects, item, m, policy, c); listed {
			judged = append(judged, item)
		}
	}
	c.Resources = append(c.Resources, together(judged)...)
	for _, item := range c.Resources {
		if item.Reason != DeletedWithApp {
			continue
		}
		r := item.Resource
		switch {
		case isApplication(r.Group, r.Kind):
			by := fmt.Sprintf("the cascade deletion of %s deletes it", c.App.Ref())
			nested = append(nested, d.app(ctx, objects, r.Namespace, r.Name, by, through)...)
		case r.Group == "" && r.Kind == "Namespace":
			nested = append(nested, d.namespace(ctx, objects, r.Name, fmt.Sprintf("the cascade deletion of %s", c.App.Ref()), through)...)
		}
	}
	d.count(c)
	return nested
}

// judge says what the app's deletion does to one object, as the one deletion verdict reads it.
// listed is false for objects the cascade does not reach as resources of the app (owned ones, the
// app's own Application object, objects its project does not permit).
func (d *follower) judge(ctx context.Context, objects cluster.Objects, item Item, m deletion.Member, policy *guard.Installed, c *AppChange) (Item, bool) {
	o := m.Object
	item.Contents = risk.ContentsOf(ctx, objects, m.Ref, item.Resource)
	item.Risk, item.RiskWhy = risk.Classify(risk.Object{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Labels: o.Labels, Annotations: o.Annotations}, d.argo.Namespace())
	if o.Row == nil {
		item.Notes = append(item.Notes, "its tracking-id names another object (copied metadata): its app does not list it, and its deletion deletes it all the same")
	}
	if c.Fate != Cascade {
		if len(o.Owners) > 0 {
			return item, false
		}
		item.Notes = append(item.Notes, "stays, still tracked by instance "+c.App.Instance(d.argo.Namespace())+": a new app of that name re-adopts it")
		return item, true
	}
	v := deletion.Judge(o, deletion.Cascade, deletion.Context{Version: d.s.Version, AppSyncOptions: c.App.SyncOptions, Policy: policy,
		SelfApp:      isApplication(o.Group, o.Kind) && o.Namespace == c.App.Namespace && o.Name == c.App.Name,
		NotPermitted: d.notPermitted(ctx, c.App, m)})
	switch v.Outcome {
	case deletion.NotTopLevel, deletion.NotManaged, deletion.Gone:
		return item, false
	}
	item.Kind, item.Reason, item.Guards = CascadeDelete, DeletedWithApp, v.Guards
	item.Notes = append(item.Notes, v.Notes...)
	item.judged = &judged{object: o, verdict: v}
	switch v.Outcome {
	case deletion.Waits:
		c.Waits = true
	case deletion.Kept:
		item.Guarded, item.Reason = true, KeptByGuard
	}
	return item, true
}

// notPermitted: the app's project does not permit the object, so its cascade leaves it
// (getPermittedAppLiveObjects). An unreadable project permits everything here: its cascade is then
// not made to look smaller than it is.
func (d *follower) notPermitted(ctx context.Context, app argocd.Application, m deletion.Member) bool {
	if d.projects == nil {
		d.projects = map[string]*argocd.Project{}
	}
	p, seen := d.projects[app.Project]
	if !seen {
		if proj, err := d.argo.Project(ctx, app.Project); err == nil {
			p = &proj
		}
		d.projects[app.Project] = p
	}
	return p != nil && !p.Permits(m.Ref.Group, m.Ref.Kind, m.Ref.Name, m.Ref.Namespaced)
}

// scope is the cluster's search for objects its apps' cascades reach, made once per check.
func (d *follower) scope(objects cluster.Objects) *deletion.Scope {
	key := objects.Info().Name + "|" + objects.Info().Server
	if d.scopes == nil {
		d.scopes = map[string]*deletion.Scope{}
	}
	if sc, ok := d.scopes[key]; ok {
		return sc
	}
	filter := d.s.Filter
	sc := deletion.NewScope(objects, d.s.Settings, &filter)
	d.scopes[key] = sc
	return sc
}

// count totals a change; a cascade waiting for approval deletes nothing until it is given.
func (d *follower) count(c *AppChange) {
	sort.SliceStable(c.Resources, func(i, j int) bool { return c.Resources[i].Resource.String() < c.Resources[j].Resource.String() })
	for _, it := range c.Resources {
		if it.Reason != DeletedWithApp {
			continue
		}
		c.Deleted++
		if it.Risk == risk.High && !c.Waits {
			c.High++
		}
	}
	switch {
	case c.Fate == Orphaned:
		c.Notes = append(c.Notes, fmt.Sprintf("no resources finalizer: deleting the app leaves its %d resources in place, still tracked", len(c.Resources)))
	case c.Waits:
		c.Notes = append(c.Notes, "a resource has Delete=confirm or Prune=confirm: the cascade deletes nothing until argocd.argoproj.io/deletion-approved is set on "+c.App.Ref())
	}
}
