package check

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

// SetReader is what checking an ApplicationSet reads beyond Applications: the live set, the apps
// it owns, and Argo CD's cluster Secrets (names, servers, labels and annotations only).
type SetReader interface {
	GetApplicationSet(ctx context.Context, namespace, name string) (map[string]any, error)
	// OwnedApplications are the Applications in namespace whose ownerReferences name the set's uid:
	// the ones the set controller considers its own (getCurrentApplications).
	OwnedApplications(ctx context.Context, namespace, uid string) ([]argocd.Whole, error)
	ClusterSecrets(ctx context.Context) ([]appset.Cluster, error)
}

// SetInfo is what a check of an ApplicationSet found.
type SetInfo struct {
	Namespace, Name string
	// Policy is the applicationsSync policy after the change; Preserve its preserveResourcesOnDeletion.
	Policy   string
	Preserve bool
	// Owned are the apps the live set owns; Generated those the changed set generates; Created
	// those it will create.
	Owned, Generated, Created []string
	// NotEvaluated says what of the changed set could not be evaluated.
	NotEvaluated []string
	// Notes are what the change does to the apps the set keeps generating.
	Notes []string
}

// RunSet checks a change to an ApplicationSet: which Applications the changed set no longer
// generates, whether its policy deletes them, and what their deletion does to their resources.
// changed is the set after the change.
func RunSet(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, changed map[string]any, src appset.Sources) (Report, error) {
	after, err := appset.Parse(changed)
	if err != nil {
		return Report{}, err
	}
	if after.Namespace == "" {
		after.Namespace = argo.Namespace()
	}
	rep := Report{App: argocd.Application{Namespace: after.Namespace, Name: after.Name}, Cluster: argo.Cluster()}
	reader, ok := argo.(SetReader)
	if !ok {
		return rep, fmt.Errorf("checking an ApplicationSet reads it and its Applications through the Kubernetes API: run it with %v kube", option.Via)
	}
	info := &SetInfo{Namespace: after.Namespace, Name: after.Name, Policy: after.Policy(), Preserve: after.PreserveResourcesOnDeletion}
	rep.Set = info
	live, err := reader.GetApplicationSet(ctx, after.Namespace, after.Name)
	if cluster.IsNotFound(err) {
		rep.Warnings = append(rep.Warnings, "the ApplicationSet does not exist yet: the change creates it and deletes nothing")
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	before, err := appset.Parse(live)
	if err != nil {
		return rep, err
	}
	if usesClusters(after.Generators) {
		clusters, err := reader.ClusterSecrets(ctx)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("cannot read Argo CD's cluster Secrets (%v): clusters generators are not evaluated", err))
		} else {
			src.Clusters = clusters
		}
	}
	res := appset.Evaluate(after, src)
	info.NotEvaluated, info.Generated = res.NotEvaluated, res.Names()
	for _, n := range res.NotEvaluated {
		rep.Warnings = append(rep.Warnings, "not evaluated: "+n)
	}
	owned, err := reader.OwnedApplications(ctx, after.Namespace, before.UID)
	if err != nil {
		return rep, err
	}
	compareSet(ctx, argo, s, before, after, res, owned, &rep)
	return rep, ctx.Err()
}

// compareSet answers, for every app the set owns that the changed set does not generate, what
// happens to it.
func compareSet(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, before, after appset.ApplicationSet, res appset.Result, owned []argocd.Whole, rep *Report) {
	generated := map[string]appset.Generated{}
	for _, a := range res.Apps {
		generated[a.Name] = a
	}
	isOwned := map[string]bool{}
	for _, w := range owned {
		isOwned[w.Name] = true
		rep.Set.Owned = append(rep.Set.Owned, w.Name)
	}
	for _, a := range res.Apps {
		if !isOwned[a.Name] {
			rep.Set.Created = append(rep.Set.Created, a.Name)
		}
	}
	sort.Strings(rep.Set.Owned)
	home, err := argo.Destination(ctx, argocd.Application{Namespace: after.Namespace, Destination: argocd.Destination{Server: argocd.InClusterServer}})
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		return
	}
	setRef := after.Namespace + "/" + after.Name
	finalizerNote(after, res, owned, rep.Set)
	for _, w := range owned {
		if _, stays := generated[w.Name]; stays {
			continue
		}
		app := argocd.Application{Namespace: w.Namespace, Name: w.Name}
		switch {
		case !res.Complete():
			rep.Apps = append(rep.Apps, AppChange{App: app, Fate: NotEvaluated,
				DeletedBy: fmt.Sprintf("perhaps ApplicationSet %s: part of it was not evaluated (%s), which may still generate this app", setRef, strings.Join(res.NotEvaluated, "; "))})
			continue
		case !after.DeletesApps():
			rep.Apps = append(rep.Apps, AppChange{App: app, Fate: NotDeleted,
				DeletedBy: fmt.Sprintf("nobody: ApplicationSet %s no longer generates it, but its applicationsSync %s never deletes an app", setRef, after.Policy())})
			continue
		}
		by := fmt.Sprintf("ApplicationSet %s no longer generates it and deletes it (applicationsSync %s)", setRef, after.Policy())
		d := deletion{argo: argo, s: s, seen: map[string]bool{}}
		changes := d.app(ctx, home, w.Namespace, w.Name, by, nil)
		c := &changes[0]
		for _, a := range res.Apps {
			if !isOwned[a.Name] && w.SameTarget(a.Whole) {
				c.RenamedTo, c.Fix = a.Name, renameFix(option.Program(ctx), *c, true)
			}
		}
		if c.Fate == Cascade && after.PreserveResourcesOnDeletion && !before.PreserveResourcesOnDeletion {
			c.Notes = append(c.Notes, "this change also sets preserveResourcesOnDeletion, but the set never updates an app it stops generating: "+
				"this one keeps its finalizer. Merge preserveResourcesOnDeletion first, let the set update its apps, then remove it")
		}
		rep.Apps = append(rep.Apps, changes...)
	}
}

// usesClusters reports whether any generator, nested ones included, is a clusters generator.
func usesClusters(gens []map[string]any) bool {
	for _, g := range gens {
		if _, ok := g["clusters"]; ok {
			return true
		}
		for _, k := range []string{"matrix", "merge"} {
			spec, _ := g[k].(map[string]any)
			nested, _ := spec["generators"].([]any)
			var ms []map[string]any
			for _, n := range nested {
				if m, ok := n.(map[string]any); ok {
					ms = append(ms, m)
				}
			}
			if usesClusters(ms) {
				return true
			}
		}
	}
	return false
}

// parentSets answers for the ApplicationSets a parent app manages: a changed set is compared as
// `check applicationset/NAME` would; a set the change prunes takes the apps it owns with it when its
// policy deletes apps (Kubernetes' garbage collector follows their ownerReferences; under
// create-only or create-update the set controller removes those references first, racing it).
func parentSets(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, manifests []Manifest, rep *Report) {
	reader, ok := argo.(SetReader)
	for _, m := range manifests {
		gvk := m.Object.GroupVersionKind()
		if gvk.Group != "argoproj.io" || gvk.Kind != "ApplicationSet" {
			continue
		}
		if !ok {
			rep.Warnings = append(rep.Warnings, m.Source+": an ApplicationSet is checked through the Kubernetes API only: run check applicationset/"+m.Object.GetName()+" with "+option.Via.String()+" kube")
			continue
		}
		content := m.Object.DeepCopy().Object
		meta, _ := content["metadata"].(map[string]any)
		if meta["namespace"] == nil || meta["namespace"] == "" {
			meta["namespace"] = rep.App.Destination.Namespace
		}
		sub, err := RunSet(ctx, argo, s, content, appset.Sources{})
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", m.Source, err))
			continue
		}
		rep.Apps, rep.Warnings = append(rep.Apps, sub.Apps...), append(rep.Warnings, sub.Warnings...)
	}
	for _, it := range rep.Items {
		if it.Kind == Prune && it.Resource.Group == "argoproj.io" && it.Resource.Kind == "ApplicationSet" && ok && !it.Guarded {
			prunedSet(ctx, argo, s, reader, it.Resource, rep)
		}
	}
}

// prunedSet follows a pruned ApplicationSet into the apps it owns.
func prunedSet(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, reader SetReader, r argocd.Resource, rep *Report) {
	ref := r.Namespace + "/" + r.Name
	content, err := reader.GetApplicationSet(ctx, r.Namespace, r.Name)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("ApplicationSet %s: %v", ref, err))
		return
	}
	set, err := appset.Parse(content)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("ApplicationSet %s: %v", ref, err))
		return
	}
	owned, err := reader.OwnedApplications(ctx, r.Namespace, set.UID)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("ApplicationSet %s: %v", ref, err))
		return
	}
	home, err := argo.Destination(ctx, argocd.Application{Namespace: r.Namespace, Destination: argocd.Destination{Server: argocd.InClusterServer}})
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		return
	}
	for _, w := range owned {
		if !set.DeletesApps() {
			rep.Apps = append(rep.Apps, AppChange{App: argocd.Application{Namespace: w.Namespace, Name: w.Name}, Fate: NotEvaluated,
				DeletedBy: fmt.Sprintf("perhaps: the parent prunes ApplicationSet %s, whose applicationsSync %s makes its controller remove its apps' ownerReferences, racing the garbage collector that deletes them", ref, set.Policy())})
			continue
		}
		by := fmt.Sprintf("the parent prunes ApplicationSet %s; the garbage collector deletes the apps it owns", ref)
		d := deletion{argo: argo, s: s, seen: map[string]bool{rep.App.Ref(): true}}
		rep.Apps = append(rep.Apps, d.app(ctx, home, w.Namespace, w.Name, by, []string{ref})...)
	}
}

// finalizerNote says when the change gives the apps the set keeps generating another resources
// finalizer (preserveResourcesOnDeletion turned on or off, the template's finalizers changed): with
// an update policy, the set's next update sets their finalizers to the rendered ones
// (applicationset_controller.go createOrUpdateInCluster keeps only pre/post-delete ones).
func finalizerNote(after appset.ApplicationSet, res appset.Result, owned []argocd.Whole, info *SetInfo) {
	if !after.UpdatesApps() {
		return
	}
	removed, added := 0, 0
	for _, w := range owned {
		for _, a := range res.Apps {
			if a.Name != w.Name {
				continue
			}
			had, will := argocd.CascadeFinalizer(w.Finalizers) != "", argocd.CascadeFinalizer(a.Whole.Finalizers) != ""
			switch {
			case had && !will:
				removed++
			case !had && will:
				added++
			}
		}
	}
	if removed > 0 {
		info.Notes = append(info.Notes, fmt.Sprintf("the set's next update removes the resources finalizer from %d app(s) it keeps generating: deleting them later deletes nothing", removed))
	}
	if added > 0 {
		info.Notes = append(info.Notes, fmt.Sprintf("the set's next update adds the resources finalizer to %d app(s) it keeps generating: deleting them later deletes their resources", added))
	}
}
