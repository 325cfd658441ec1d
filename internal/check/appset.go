package check

import (
	"context"
	"errors"
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
	// OwnedApplications are the Applications in namespace whose controller ownerReference is the
	// ApplicationSet of that name: the ones the set controller considers its own
	// (getCurrentApplications, by the .metadata.controller index).
	OwnedApplications(ctx context.Context, namespace, set string) ([]argocd.Whole, error)
	ClusterSecrets(ctx context.Context) ([]appset.Cluster, error)
}

// SetInfo is what a check of an ApplicationSet found.
type SetInfo struct {
	Namespace, Name string
	// Policy is the policy the controller applies to the set after the change (the set's
	// applicationsSync, or the controller's); SetPolicy the set's own; ControllerPolicy the
	// controller's --policy ("" when it has none); PolicyKnown false when argocd-cmd-params-cm
	// could not be read. Preserve is the set's preserveResourcesOnDeletion.
	Policy, SetPolicy, ControllerPolicy string
	PolicyKnown                         bool
	Preserve                            bool
	// Owned are the apps the live set owns; Generated those the changed set generates; Created
	// those it will create; GeneratedBefore those the live set generates now.
	Owned, Generated, Created, GeneratedBefore []string
	// GeneratedBy is ArgoCD when argocd-server generated the apps, Offline when unprune did;
	// Server names the argocd-server.
	GeneratedBy, Server string
	// NotEvaluated says what of the changed set could not be evaluated.
	NotEvaluated []string
	// Failed is the error Argo CD's generation meets with the changed set.
	Failed string
	// Notes are what the change does to the apps the set keeps generating.
	Notes []string
}

// RunSet checks a change to an ApplicationSet: which Applications the changed set no longer
// generates, whether the controller's effective policy deletes them, and what their deletion does
// to their resources. changed is the set after the change; oracle, when not nil, is argocd-server,
// whose own generation answers instead of unprune's.
func RunSet(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, changed map[string]any, src appset.Sources, oracle cluster.Oracle) (Report, error) {
	after, err := appset.Parse(changed)
	if err != nil {
		return Report{}, err
	}
	if after.Namespace == "" {
		after.Namespace = argo.Namespace()
	}
	rep := Report{App: argocd.Application{Namespace: after.Namespace, Name: after.Name}, Cluster: argo.Cluster(),
		Answers: []Answer{{Question: QuestionDeletions, By: ByOffline}}}
	reader, ok := argo.(SetReader)
	if !ok {
		return rep, fmt.Errorf("checking an ApplicationSet reads it and the Applications it owns through the Kubernetes API: run it with %v kube "+
			"(Argo CD's API then still generates the set's apps: name its server with %v and give a token)", option.Via, option.ArgoCDServer)
	}
	src.Version = s.Version
	src.Controller = controllerOf(ctx, argo, &rep)
	policy, known := after.EffectivePolicy(src.Controller)
	info := &SetInfo{Namespace: after.Namespace, Name: after.Name, Policy: policy, SetPolicy: after.Policy(), ControllerPolicy: src.Controller.Policy,
		PolicyKnown: known, Preserve: after.PreserveResourcesOnDeletion}
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
	res, prior := generate(ctx, oracle, changed, live, after, before, src, &rep)
	info.NotEvaluated, info.Generated, info.Failed, info.GeneratedBy, info.GeneratedBefore = res.NotEvaluated, res.Names(), res.Failed, res.By, prior.Names()
	rep.Answers = append(rep.Answers, Answer{Question: QuestionGeneration, By: res.By, Server: info.Server, For: after.Namespace + "/" + after.Name})
	for _, n := range res.NotEvaluated {
		rep.Warnings = append(rep.Warnings, "not evaluated: "+n)
	}
	owned, err := reader.OwnedApplications(ctx, after.Namespace, after.Name)
	if err != nil {
		return rep, err
	}
	compareSet(ctx, argo, s, before, after, res, owned, &rep)
	return rep, ctx.Err()
}

// controllerOf reads how the ApplicationSet controller was started (argocd-cmd-params-cm).
func controllerOf(ctx context.Context, argo cluster.ArgoCD, rep *Report) appset.Controller {
	r, ok := argo.(cluster.ParamsReader)
	if !ok {
		return appset.Controller{Why: "this backend cannot read argocd-cmd-params-cm"}
	}
	params, err := r.CmdParams(ctx)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the ApplicationSet controller's policy is not known (%v): a policy it was started with overrides the set's", err))
		return appset.Controller{Why: err.Error()}
	}
	c, err := appset.ControllerFrom(params)
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		return appset.Controller{Why: err.Error()}
	}
	return c
}

// generate asks Argo CD for the apps the changed set (and the live one) generate when it can,
// and evaluates them offline otherwise, saying which.
func generate(ctx context.Context, oracle cluster.Oracle, changed, live map[string]any, after, before appset.ApplicationSet, src appset.Sources, rep *Report) (appset.Result, appset.Result) {
	if oracle != nil {
		res, err := askArgoCD(ctx, oracle, changed, after)
		if err == nil {
			rep.Set.Server = oracle.Server()
			prior, perr := askArgoCD(ctx, oracle, live, before)
			if perr != nil {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("Argo CD at %s could not generate the live set's apps (%v)", oracle.Server(), perr))
			}
			return res, prior
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("Argo CD at %s did not generate the set's apps (%v): they were computed offline", oracle.Server(), err))
	}
	return appset.Evaluate(after, src), appset.Evaluate(before, src)
}

// askArgoCD turns argocd-server's generation into a result. Its own refusal to generate the set is
// the generation's failure, as the controller would meet it.
func askArgoCD(ctx context.Context, oracle cluster.Oracle, content map[string]any, set appset.ApplicationSet) (appset.Result, error) {
	apps, err := oracle.GenerateApplicationSet(ctx, content)
	var failed *appset.GenerationFailed
	if errors.As(err, &failed) {
		return appset.Result{By: appset.ByArgoCD, Failed: failed.Message}, nil
	}
	if err != nil {
		return appset.Result{}, err
	}
	r := appset.Result{By: appset.ByArgoCD}
	seen := map[string]bool{}
	for _, a := range apps {
		w := argocd.ParseWhole(a)
		if w.Namespace == "" {
			w.Namespace = set.Namespace
		}
		if seen[w.Name] {
			continue
		}
		seen[w.Name] = true
		r.Apps = append(r.Apps, appset.Generated{Namespace: w.Namespace, Name: w.Name, Content: a, Whole: w})
	}
	sort.Slice(r.Apps, func(i, j int) bool { return r.Apps[i].Name < r.Apps[j].Name })
	return r, nil
}

// compareSet answers, for every app the set owns that the changed set does not generate, what
// happens to it under the controller's effective policy.
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
	policy, known := rep.Set.Policy, rep.Set.PolicyKnown
	if known && policy != after.Policy() {
		rep.Set.Notes = append(rep.Set.Notes, fmt.Sprintf("the controller applies its own applicationsSync %s (applicationsetcontroller.policy), not the set's %s: "+
			"applicationsetcontroller.enable.policy.override is off", policy, after.Policy()))
	}
	finalizerNote(policy, known, res, owned, rep.Set)
	d := follower{argo: argo, s: s, seen: map[string]bool{}}
	for _, w := range owned {
		if _, stays := generated[w.Name]; stays {
			continue
		}
		app := argocd.Application{Namespace: w.Namespace, Name: w.Name}
		switch {
		case res.Failed != "":
			rep.Apps = append(rep.Apps, AppChange{App: app, Fate: NotDeleted,
				DeletedBy: fmt.Sprintf("nobody while the change stands: Argo CD's generation of ApplicationSet %s fails (%s), and the controller then creates, updates and deletes nothing for it", setRef, res.Failed)})
			continue
		case !res.Complete():
			rep.Apps = append(rep.Apps, AppChange{App: app, Fate: NotEvaluated,
				DeletedBy: fmt.Sprintf("perhaps ApplicationSet %s: part of it was not evaluated (%s), which may still generate this app", setRef, strings.Join(res.NotEvaluated, "; "))})
			continue
		case known && !appset.PolicyDeletes(policy):
			c := AppChange{App: app, Fate: NotDeleted, finalizers: w.Finalizers, Finalizer: argocd.CascadeFinalizer(w.Finalizers),
				DeletedBy: fmt.Sprintf("nobody: ApplicationSet %s no longer generates it, but the controller applies applicationsSync %s to it (%s), which never deletes an app", setRef, policy, policySource(rep.Set))}
			for _, a := range res.Apps {
				if !isOwned[a.Name] && w.SameTarget(a.Whole) {
					fix, notes := setRenameAdvice(s.Version, c, a, setRef, policy, known)
					c.RenamedTo, c.Fix, c.Notes = a.Name, fix, append(c.Notes, notes...)
				}
			}
			rep.Apps = append(rep.Apps, c)
			continue
		}
		by := fmt.Sprintf("ApplicationSet %s no longer generates it and deletes it (applicationsSync %s, %s)", setRef, policy, policySource(rep.Set))
		if !known {
			by = fmt.Sprintf("ApplicationSet %s no longer generates it, and deletes it unless the controller was started with a policy that does not delete "+
				"(its own says applicationsSync %s; argocd-cmd-params-cm could not be read)", setRef, after.Policy())
		}
		changes := d.app(ctx, home, w.Namespace, w.Name, by, nil)
		c := &changes[0]
		for _, a := range res.Apps {
			if !isOwned[a.Name] && w.SameTarget(a.Whole) {
				fix, notes := setRenameAdvice(s.Version, *c, a, setRef, policy, known)
				c.RenamedTo, c.Fix, c.Notes = a.Name, fix, append(c.Notes, notes...)
			}
		}
		if c.Fate == Cascade && after.PreserveResourcesOnDeletion && !before.PreserveResourcesOnDeletion {
			c.Notes = append(c.Notes, "this change also sets preserveResourcesOnDeletion, but the set never updates an app it stops generating: "+
				"this one keeps its finalizer. Merge preserveResourcesOnDeletion first, let the set update its apps, then the rest")
		}
		rep.Apps = append(rep.Apps, changes...)
	}
}

// policySource says whose policy the controller applies.
func policySource(info *SetInfo) string {
	switch {
	case info.ControllerPolicy == "":
		return "the set's own; the controller was started without a policy"
	case info.Policy == info.SetPolicy && info.Policy != info.ControllerPolicy:
		return "the set's own, which the controller lets override its " + info.ControllerPolicy
	case info.Policy == info.ControllerPolicy && info.SetPolicy != info.ControllerPolicy:
		return "the controller's applicationsetcontroller.policy, which overrides the set's " + info.SetPolicy
	}
	return "the controller's applicationsetcontroller.policy"
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
func parentSets(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, manifests []Manifest, oracle cluster.Oracle, rep *Report) {
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
		sub, err := RunSet(ctx, argo, s, content, appset.Sources{}, oracle)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", m.Source, err))
			continue
		}
		rep.Apps, rep.Warnings = append(rep.Apps, sub.Apps...), append(rep.Warnings, sub.Warnings...)
		for _, a := range sub.Answers {
			if a.Question == QuestionGeneration {
				rep.Answers = append(rep.Answers, a)
			}
		}
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
	owned, err := reader.OwnedApplications(ctx, r.Namespace, set.Name)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("ApplicationSet %s: %v", ref, err))
		return
	}
	home, err := argo.Destination(ctx, argocd.Application{Namespace: r.Namespace, Destination: argocd.Destination{Server: argocd.InClusterServer}})
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
		return
	}
	policy, known := set.EffectivePolicy(controllerOf(ctx, argo, rep))
	for _, w := range owned {
		if !known || !appset.PolicyDeletes(policy) {
			rep.Apps = append(rep.Apps, AppChange{App: argocd.Application{Namespace: w.Namespace, Name: w.Name}, Fate: NotEvaluated,
				DeletedBy: fmt.Sprintf("perhaps: the parent prunes ApplicationSet %s, whose effective applicationsSync %s (known: %v) makes its controller remove its apps' ownerReferences, racing the garbage collector that deletes them", ref, policy, known)})
			continue
		}
		by := fmt.Sprintf("the parent prunes ApplicationSet %s; the garbage collector deletes the apps it owns", ref)
		d := follower{argo: argo, s: s, seen: map[string]bool{rep.App.Ref(): true}}
		rep.Apps = append(rep.Apps, d.app(ctx, home, w.Namespace, w.Name, by, []string{ref})...)
	}
}

// finalizerNote says when the change gives the apps the set keeps generating another resources
// finalizer (preserveResourcesOnDeletion turned on or off, the template's finalizers changed): with
// an update policy, the set's next update sets their finalizers to the rendered ones
// (applicationset_controller.go createOrUpdateInCluster keeps only pre/post-delete ones).
func finalizerNote(policy string, known bool, res appset.Result, owned []argocd.Whole, info *SetInfo) {
	if !known || !appset.PolicyUpdates(policy) {
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
