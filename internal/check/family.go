package check

import (
	"context"
	"fmt"
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
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
}

// maxDepth bounds how deep apps of apps are followed; the seen set already stops cycles.
const maxDepth = 10

// family turns prunes of Applications into whole-app answers: what Argo CD does to the child's
// resources once the parent deletes it.
func family(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, manifests []Manifest, rep *Report) {
	added := addedApps(manifests, rep.App)
	for _, it := range rep.Items {
		if it.Kind != Prune || !isApplication(it.Resource.Group, it.Resource.Kind) {
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
		if it.Guarded {
			rep.Apps = append(rep.Apps, AppChange{App: argocd.Application{Namespace: it.Resource.Namespace, Name: it.Resource.Name}, Fate: NotDeleted,
				DeletedBy: fmt.Sprintf("nobody: a guard on it (%v) stops the parent app %s from pruning it", it.Guards, rep.App.Ref())})
			continue
		}
		d := deletion{argo: argo, s: s, seen: map[string]bool{rep.App.Ref(): true}}
		changes := d.app(ctx, objects, it.Resource.Namespace, it.Resource.Name, by, nil)
		if w, ok := renamedTo(ctx, objects, it.Resource, added); ok {
			changes[0].RenamedTo = w.Name
			changes[0].Fix = renameFix(option.Program(ctx), changes[0], false)
		}
		rep.Apps = append(rep.Apps, changes...)
	}
	parentSets(ctx, argo, s, manifests, rep)
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

// renameFix says how to rename without the deletion window.
func renameFix(program string, c AppChange, generated bool) string {
	switch {
	case c.Fate != Cascade:
		return "no resource is deleted; the new app adopts them (their tracking names the old instance until its first sync)"
	case generated:
		return "set syncPolicy.preserveResourcesOnDeletion: true on the ApplicationSet (its next update removes the resources finalizer from the apps it generates), or remove the finalizer from " +
			c.App.Ref() + " first; then merge the rename"
	}
	// unprune rename refuses an app another app manages (the parent would create the old name
	// again), so the parent's own git carries the fix.
	return fmt.Sprintf("first merge a commit that only drops the resources finalizer from %s's manifest and let the parent sync it; "+
		"then merge the rename: the old app goes without deleting anything and %s adopts its resources at its first sync "+
		"(for an app no parent manages, `%s rename %s %s` does it in one step)", c.App.Ref(), c.RenamedTo, program, c.App.Ref(), c.RenamedTo)
}

// deletion follows one app's deletion through its finalizer and into the apps it deletes.
type deletion struct {
	argo cluster.ArgoCD
	s    cluster.Settings
	seen map[string]bool
}

// app answers what deleting the Application namespace/name does. home is the cluster where the
// Application object lives (its parent's destination). The first change is the app's own; nested
// ones follow.
func (d *deletion) app(ctx context.Context, home cluster.Objects, namespace, name, by string, through []string) []AppChange {
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
	nested := d.resources(ctx, objects, &c, append(append([]string(nil), through...), app.Ref()))
	return append([]AppChange{c}, nested...)
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

// resources reads every resource the app tracks and says what its deletion does to each; apps it
// deletes are followed.
func (d *deletion) resources(ctx context.Context, objects cluster.Objects, c *AppChange, through []string) []AppChange {
	var rows []argocd.Resource
	var refs []cluster.Ref
	for _, r := range c.App.Resources {
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: %v", r, err))
			continue
		}
		rows, refs = append(rows, r), append(refs, ref)
	}
	policy, _ := guard.ReadInstalled(ctx, objects)
	instance := c.App.Instance(d.argo.Namespace())
	var nested []AppChange
	for i, res := range objects.Read(ctx, refs) {
		if cluster.IsNotFound(res.Err) {
			continue
		}
		item := Item{Kind: Orphan, Reason: LeftTracked, Resource: rows[i], Cluster: c.Cluster}
		if res.Err != nil {
			item.Error = res.Err.Error()
			c.Resources = append(c.Resources, item)
			continue
		}
		live := res.Object
		// Argo CD deletes the live objects it manages for the app: top-level ones that carry its
		// tracking (GetManagedLiveObjs).
		if len(live.Owners) > 0 || !d.s.Owner(live.Labels, live.Annotations, refs[i].ObjectRef()).TrackedBy(instance) {
			continue
		}
		item = d.judge(ctx, objects, item, live, policy, c)
		c.Resources = append(c.Resources, item)
		if item.Reason == DeletedWithApp && isApplication(item.Resource.Group, item.Resource.Kind) {
			by := fmt.Sprintf("the cascade deletion of %s deletes it", c.App.Ref())
			nested = append(nested, d.app(ctx, objects, item.Resource.Namespace, item.Resource.Name, by, through)...)
		}
	}
	d.count(c)
	return nested
}

// judge classifies one resource of a deleted app.
func (d *deletion) judge(ctx context.Context, objects cluster.Objects, item Item, live *cluster.Object, policy *guard.Installed, c *AppChange) Item {
	r := item.Resource
	obj := risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Labels: live.Labels, Annotations: live.Annotations}
	item.Contents = risk.ContentsOf(ctx, objects, live.Ref, r)
	item.Risk, item.RiskWhy = risk.Classify(obj, d.argo.Namespace())
	if c.Fate != Cascade {
		item.Notes = append(item.Notes, "stays, still tracked by instance "+c.App.Instance(d.argo.Namespace())+": a new app of that name re-adopts it")
		return item
	}
	item.Kind, item.Reason = CascadeDelete, DeletedWithApp
	item.Guards = risk.CascadeGuards(obj, c.App.SyncOptions)
	if policy.Covers(r, obj.Labels) {
		item.Guards = append(item.Guards, guard.PolicyGuard)
	}
	for _, g := range item.Guards {
		switch g {
		case risk.GuardDeleteConfirm:
			c.Waits = true
		default:
			item.Guarded = true
		}
	}
	if item.Guarded {
		item.Reason = KeptByGuard
	}
	return item
}

// count totals a change; a cascade waiting for approval deletes nothing until it is given.
func (d *deletion) count(c *AppChange) {
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
