package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/fields"
)

// A rename is a deletion of the old app and the creation of a new one. The advice printed for it
// is one that, followed as written, deletes nothing: the old app loses its resources finalizer
// before anything deletes it, so that its deletion leaves every resource in place, still tracked
// by its instance, for the new app to take over (when it renders the same objects) or to leave
// beside its own (when its name changes what it renders).

// nameFeeds lists how an app's name reaches what it renders, read from its spec and the source
// types Argo CD detected: Helm's release name is the app's name unless helm.releaseName is set
// (reposerver/repository/repository.go helmTemplate); $ARGOCD_APP_NAME is substituted into Helm
// parameters and values, jsonnet ext vars and TLAs and plugin environments (the build
// environment, newEnv); a config-management plugin is given ARGOCD_APP_NAME whatever its spec.
// releasePinnable reports whether setting helm.releaseName to the old name on every Helm source
// is all it takes for the new app to render the same objects.
//
// A source-hydrator app (spec.sourceHydrator) renders its dry source, not spec.source: see
// hydratorFeeds.
func nameFeeds(spec map[string]any, sourceTypes []string) (reasons []string, releasePinnable bool) {
	if h := argocd.HydratorOf(spec); h != nil {
		return hydratorFeeds(fields.Map(spec, "sourceHydrator")), false
	}
	sources := []map[string]any{}
	if src := fields.Map(spec, "source"); len(src) > 0 {
		sources = append(sources, src)
	}
	for _, s := range fields.List(spec["sources"]) {
		if m, ok := s.(map[string]any); ok {
			sources = append(sources, m)
		}
	}
	releasePinnable = true
	for i, src := range sources {
		typ := ""
		if i < len(sourceTypes) {
			typ = sourceTypes[i]
		}
		where := "its source"
		if len(sources) > 1 {
			where = fmt.Sprintf("its source #%d", i+1)
		}
		helm := fields.Map(src, "helm")
		isHelm := typ == "Helm" || fields.String(src["chart"]) != "" || (typ == "" && helm != nil)
		if isHelm && fields.String(helm["releaseName"]) == "" {
			reasons = append(reasons, where+" is a Helm chart without helm.releaseName, whose release name is the app's name (charts commonly name their objects from it)")
		}
		if usesAppName(src) {
			reasons = append(reasons, where+" passes $ARGOCD_APP_NAME to its manifests")
			releasePinnable = false
		}
		if fields.Map(src, "plugin") != nil || typ == "Plugin" {
			reasons = append(reasons, where+" is rendered by a config-management plugin, which is given the app's name (ARGOCD_APP_NAME)")
			releasePinnable = false
		}
	}
	return reasons, releasePinnable && len(reasons) > 0
}

// hydratorFeeds lists how the app's name reaches what the hydrator renders from its dry source:
// the controller asks the repo-server with AppName: app.InstanceName (controller/state.go
// GetRepoObjs, called by controller/hydrator/hydrator.go), so the rules of nameFeeds hold for the
// dry source. Its type is not in the app's status (status.sourceType describes the hydrated branch
// Argo CD syncs), so a dry source without options is judged by what it may be: Argo CD detects a
// Helm chart by its Chart.yaml. drySource.helm, kustomize, directory and plugin exist from v3.3.0;
// before, the hydrator renders repoURL, path and targetRevision alone, so a chart's release name is
// the app's whatever the spec says (controller/hydrator/hydrator.go in v2.14.11 and v3.2.11). So a
// hydrator app is never "pinnable": pinning the release name holds only on v3.3+, and only once the
// hydrator has committed for the new name does any comparison show what it renders.
func hydratorFeeds(h map[string]any) []string {
	dry := fields.Map(h, "drySource")
	const where = "its dry source (spec.sourceHydrator.drySource), which Argo CD's source hydrator renders with the app's name,"
	var reasons []string
	helm := fields.Map(dry, "helm")
	switch {
	case fields.Map(dry, "plugin") != nil:
		reasons = append(reasons, where+" is rendered by a config-management plugin, which is given the app's name (ARGOCD_APP_NAME)")
	case helm != nil && fields.String(helm["releaseName"]) == "":
		reasons = append(reasons, where+" is a Helm chart without helm.releaseName, whose release name is the app's name (charts commonly name their objects from it)")
	case helm != nil:
		reasons = append(reasons, where+" sets helm.releaseName, which the hydrator reads from Argo CD v3.3.0 only (before, the release name is the app's name)")
	case fields.Map(dry, "kustomize") == nil && fields.Map(dry, "directory") == nil:
		reasons = append(reasons, where+" has no options that say its type: a Helm chart there (Argo CD detects one by its Chart.yaml) gets the app's name as release name")
	}
	if usesAppName(dry) {
		reasons = append(reasons, where+" passes $ARGOCD_APP_NAME to its manifests")
	}
	return reasons
}

// usesAppName reports whether a string of the source mentions $ARGOCD_APP_NAME (or
// ${ARGOCD_APP_NAME}), which the repo-server substitutes.
func usesAppName(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "$ARGOCD_APP_NAME") || strings.Contains(t, "${ARGOCD_APP_NAME}")
	case []any:
		for _, x := range t {
			if usesAppName(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if usesAppName(x) {
				return true
			}
		}
	}
	return false
}

// staleTrackingIsDiff (argocd.RuleStaleTrackingIsDiff): from v3.4.6 (3.4 line) and v3.5.0, a live object whose tracking-id names
// another app is OutOfSync in the app that declares it, even when it carries the instance label
// (util/argo/resource_tracking.go Normalize backfills the annotation only when the live object has
// none; argo-cd #28770). Before, the label made the stale tracking-id disappear from the diff.
func staleTrackingIsDiff(v *argocd.Version) (is, known bool) {
	if v == nil {
		return false, false
	}
	return argocd.RuleStaleTrackingIsDiff.Applies(*v), true
}

// InBetween says what the app that takes over objects another app's tracking names shows until its
// sync rewrites that tracking, on the release line in use. them names the objects ("it", "them").
func InBetween(v *argocd.Version, to, them string) string {
	switch is, known := staleTrackingIsDiff(v); {
	case !known:
		return fmt.Sprintf("in between, %s lists %s OutOfSync (with a SharedResourceWarning while the other app exists); under annotation tracking before "+
			"Argo CD v3.4.6 (3.4 line) and v3.5.0, a live object that also carries the instance label shows Synced instead and keeps the old tracking-id "+
			"until %s next applies it (argo-cd #28770)", to, them, to)
	case is:
		return fmt.Sprintf("in between, %s lists %s OutOfSync (with a SharedResourceWarning while the other app exists): Argo CD %s counts a stale tracking-id as a difference (argo-cd #28770)",
			to, them, v)
	}
	return fmt.Sprintf("in between, %s lists %s OutOfSync with a SharedResourceWarning while the other app exists; on Argo CD %s, under annotation tracking, an object that also "+
		"carries the instance label shows Synced instead and keeps the old tracking-id until %s next applies it (fixed in v3.4.6 and v3.5.0: argo-cd #28770)", to, them, v, to)
}

// takeover says what the new app does with the old one's objects once the old one is gone;
// hydrated reports a new app with spec.sourceHydrator.
func takeover(old, to string, v *argocd.Version, feeds []string, pinnable, hydrated bool) (string, []string) {
	switch {
	case hydrated && len(feeds) > 0:
		// Argo CD compares a hydrator app with the hydrated branch (SourceHydrator.GetSyncSource); the
		// commit-server skips a dry commit its branch's git note records as hydrated
		// (commitserver/commit/commit.go, IsHydrated), so the new name's rendering may land only
		// with the next commit to the dry source.
		return fmt.Sprintf("%s renders through Argo CD's source hydrator, so Argo CD compares it with the manifests the hydrator committed (%s's, while they share "+
				"syncSource.path), not with its dry source, and no comparison shows what it renders under its own name until the hydrator has committed for it — "+
				"at once, or only at the next commit to the dry source when the commit-server finds that commit hydrated already; from then on %s renders its objects "+
				"from its name and prunes the ones named from %s (at once with automated prune): keep the name, or give %s a syncSource.path of its own (and, for a "+
				"Helm dry source, drySource.helm.releaseName: %s, read from Argo CD v3.3.0) with automated sync off, and compare what the hydrator commits for it "+
				"with %s's manifests before giving it automated sync", to, old, to, old, to, old, old),
			[]string{"the app's name feeds what it renders: " + strings.Join(feeds, "; ")}
	case len(feeds) == 0:
		return fmt.Sprintf("%s renders the same objects (its source does not use the app's name; a .argocd-source-%s.yaml override in the source path would be the exception) "+
			"and takes them over at its first sync", to, old), []string{InBetween(v, to, "them")}
	case pinnable:
		return fmt.Sprintf("with helm.releaseName: %s on %s's source, %s renders the same objects and takes them over at its first sync", old, to, to),
			[]string{"the app's name feeds what it renders: " + strings.Join(feeds, "; "), InBetween(v, to, "them")}
	}
	return fmt.Sprintf("%s renders its own objects from its name, so %s's stay behind, still tracked by %s's instance, and %s creates new ones beside them: "+
			"compare `argocd app manifests %s` with %s's before removing what is left", to, old, old, to, to, old),
		[]string{"the app's name feeds what it renders: " + strings.Join(feeds, "; ")}
}

// renameAdvice is the advice for a child app its parent removes while adding one of the same source
// and destination under another name. The parent prunes the old app as soon as it leaves git, so
// its finalizer must be gone first, in a commit of its own.
func renameAdvice(v *argocd.Version, c AppChange, to argocd.Whole) (string, []string) {
	fin := c.finalizerPatch()
	feeds, pinnable := nameFeeds(to.Spec, c.sourceTypes)
	after, notes := takeover(c.App.Name, to.Name, v, feeds, pinnable, argocd.HydratorOf(to.Spec) != nil)
	h := c.hooks(false)
	if c.Fate != Cascade {
		if h.runs {
			return "no resource is deleted: the old app has no resources finalizer, but its deletion runs its delete hooks: " + h.first + "merge the rename: the parent deletes " +
				c.App.Ref() + ", which runs no hook, and " + after, notes
		}
		return "no resource is deleted: the old app has no resources finalizer; " + after, notes
	}
	pin := ""
	if pinnable {
		pin = fmt.Sprintf(" (with helm.releaseName: %s on %s)", c.App.Name, to.Name)
	}
	return fmt.Sprintf("first merge a commit that only drops %s from %s's manifest and let the parent sync it (%s); then %smerge the rename%s: "+
		"the parent deletes %s, which deletes nothing%s, and %s", c.Finalizer, c.App.Ref(), fin.check(), h.first, pin, c.App.Ref(), h.none, after), notes
}

// hookSteps is what the advice adds for an old app whose deletion runs delete hooks: first, the
// step before its deletion ("right before merging the rename, …; then "), and none, what the
// deletion then does not do (" and runs no hook"); both empty when no hook runs.
type hookSteps struct {
	runs        bool
	first, none string
}

// hooks names the delete hooks deleting the old app runs and how to delete it without running
// them: they run for its pre-/post-delete finalizers (controller/appcontroller.go
// finalizeApplicationDeletion), which the controller puts back after every comparison of an app
// whose manifests hold such hooks — unless the app is marked argocd.argoproj.io/skip-reconcile
// (canProcessApp). So the finalizers come off in the patch that sets the mark, which is what
// `unprune rename` does to an app it renames. set is true when an ApplicationSet that updates its
// apps owns the old app until it deletes it: it writes an app's annotations back but for those in
// spec.preservedFields.annotations (applicationset/controllers/applicationset_controller.go).
func (c AppChange) hooks(set bool) hookSteps {
	var fins []string
	for _, f := range c.finalizers {
		if argocd.IsDeleteHookFinalizer(f) {
			fins = append(fins, f)
		}
	}
	if len(fins) == 0 && len(c.deleteHooks) == 0 {
		return hookSteps{}
	}
	var what []string
	if len(c.deleteHooks) > 0 {
		what = append(what, strings.Join(c.deleteHooks, ", "))
	}
	if len(fins) > 0 {
		what = append(what, "finalizers "+strings.Join(fins, ", "))
	} else {
		what = append(what, "its manifests hold PreDelete/PostDelete hooks: Argo CD's controller adds their finalizers at its next comparison")
	}
	fin := c.finalizerPatch()
	first := fmt.Sprintf("right before merging the rename, take off the finalizers with which deleting %s runs its delete hooks (%s) in the patch that marks it %s, "+
		"which keeps Argo CD's controller from putting them back after its comparisons, as `unprune rename` does: %s; make sure none is back (%s: a comparison "+
		"already under way may put them back once; patch again); then ", c.App.Ref(), strings.Join(what, "; "), argocd.AnnotationSkipReconcile, fin.unhook(), fin.show())
	if set {
		first = fmt.Sprintf("list %s in the set's spec.preservedFields.annotations (it writes its apps' other annotations back); ", argocd.AnnotationSkipReconcile) + first
	}
	return hookSteps{runs: true, first: first, none: " and runs no hook"}
}

// setRenameAdvice is the advice for an app an ApplicationSet stops generating while it generates
// one of the same source and destination under another name, under the set's effective policy:
// under sync and create-update the set rewrites its apps' finalizers (one removed by hand comes
// back), so preserveResourcesOnDeletion must reach the old app through the set first; under
// create-delete the set never updates an existing app, so the finalizer is removed by hand and
// stays off; create-only and create-update never delete the old app at all.
func setRenameAdvice(v *argocd.Version, c AppChange, to appset.Generated, setRef, policy string, known bool) (string, []string) {
	fin := c.finalizerPatch()
	feeds, pinnable := nameFeeds(to.Whole.Spec, c.sourceTypes)
	after, notes := takeover(c.App.Name, to.Name, v, feeds, pinnable, argocd.HydratorOf(to.Whole.Spec) != nil)
	pin := ""
	if pinnable {
		pin = fmt.Sprintf(" with helm.releaseName: %s in the template for it", c.App.Name)
	}
	// Where the finalizer comes off by hand, delete-hook finalizers go with it, in the patch that
	// marks the app skip-reconcile. The set keeps the mark where it does not update the app again
	// (create-delete; an app it no longer generates) or lists it among its preserved annotations,
	// which under sync (or a policy not known) it needs until it deletes the app.
	h := c.hooks(!known || policy == appset.PolicySync)
	remove := fin.remove()
	if h.runs {
		remove = fin.unhook()
	}
	if !known {
		return fmt.Sprintf("the controller's policy is not known, so do what holds under every policy: merge syncPolicy.preserveResourcesOnDeletion: true on %s alone; "+
			"once it is live, make sure %s has no resources finalizer (%s) and that it stays off; then %smerge the rename%s: %s", setRef, c.App.Ref(), remove, h.first, pin, after), notes
	}
	switch {
	case c.Fate != Cascade && appset.PolicyDeletes(policy) && h.runs:
		return fmt.Sprintf("no resource is deleted: %s has no resources finalizer, but the set's deletion of it runs its delete hooks: %smerge the rename: the set deletes %s, "+
			"which runs no hook, and %s", c.App.Ref(), h.first, c.App.Ref(), after), notes
	case c.Fate != Cascade && appset.PolicyDeletes(policy):
		return fmt.Sprintf("no resource is deleted: %s has no resources finalizer; %s", c.App.Ref(), after), notes
	case !appset.PolicyDeletes(policy):
		return fmt.Sprintf("under applicationsSync %s the set never deletes %s: after merging the rename both apps claim the same objects until you delete %s yourself, "+
			"its resources finalizer removed first (%s, then %s: its deletion then deletes nothing%s); %s", policy, c.App.Ref(), c.App.Ref(), remove, fin.delete(), h.none, after), notes
	case policy == appset.PolicyCreateDelete:
		return fmt.Sprintf("under applicationsSync create-delete the set never updates an existing app (preserveResourcesOnDeletion would not reach %s): "+
			"remove its resources finalizer by hand first (%s), which the set leaves alone; then merge the rename%s: the set deletes %s, which deletes nothing%s, and %s",
			c.App.Ref(), remove, pin, c.App.Ref(), h.none, after), notes
	}
	return fmt.Sprintf("under applicationsSync sync the set rewrites its apps' finalizers (one removed by hand is back within seconds): first merge "+
		"syncPolicy.preserveResourcesOnDeletion: true on %s alone and wait until the set has removed %s from %s (%s); then %smerge the rename%s: "+
		"the set deletes %s, which deletes nothing%s, and %s (the new app has no resources finalizer either, so deleting it later deletes nothing)",
		setRef, c.Finalizer, c.App.Ref(), fin.check(), h.first, pin, c.App.Ref(), h.none, after), notes
}

// finalizerPatch names the commands that show and remove the old app's resources finalizer,
// keeping its other finalizers.
type finalizerPatch struct {
	Namespace, Name string
	Finalizers      []string
}

func (f finalizerPatch) check() string {
	return fmt.Sprintf("kubectl get applications.argoproj.io -n %s %s -o jsonpath='{.metadata.finalizers}' no longer shows it", f.Namespace, f.Name)
}

// show is the command that lists the app's finalizers.
func (f finalizerPatch) show() string {
	return fmt.Sprintf("kubectl get applications.argoproj.io -n %s %s -o jsonpath='{.metadata.finalizers}'", f.Namespace, f.Name)
}

// unhook is the patch that marks the app argocd.argoproj.io/skip-reconcile and, in the same write,
// removes its resources finalizer and its delete-hook finalizers, keeping the others.
func (f finalizerPatch) unhook() string {
	return fmt.Sprintf(`kubectl patch applications.argoproj.io -n %s %s %s merge -p '{"metadata":{"annotations":{%q:"true"},"finalizers":%s}}'`,
		f.Namespace, f.Name, longFlag("type"), argocd.AnnotationSkipReconcile, f.kept(argocd.IsDeleteHookFinalizer))
}

func (f finalizerPatch) delete() string {
	return fmt.Sprintf("kubectl delete applications.argoproj.io -n %s %s", f.Namespace, f.Name)
}

func (f finalizerPatch) remove() string {
	return fmt.Sprintf(`kubectl patch applications.argoproj.io -n %s %s %s merge -p '{"metadata":{"finalizers":%s}}'`, f.Namespace, f.Name, longFlag("type"), f.kept(nil))
}

// kept is the JSON of the finalizers a patch keeps: all but the resources finalizer and those
// drop reports.
func (f finalizerPatch) kept(drop func(string) bool) string {
	var keep []string
	for _, x := range f.Finalizers {
		if argocd.CascadeFinalizer([]string{x}) == "" && (drop == nil || !drop(x)) {
			keep = append(keep, x)
		}
	}
	sort.Strings(keep)
	if len(keep) == 0 {
		return "null"
	}
	b, _ := json.Marshal(keep)
	return string(b)
}

func (c AppChange) finalizerPatch() finalizerPatch {
	return finalizerPatch{Namespace: c.App.Namespace, Name: c.App.Name, Finalizers: c.finalizers}
}

// longFlag spells a long option of another program (kubectl's, argocd's) in the commands advice
// prints: unprune's own options are named through internal/option.
func longFlag(name string) string { return "--" + name }
