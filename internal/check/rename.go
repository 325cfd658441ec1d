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
func nameFeeds(spec map[string]any, sourceTypes []string) (reasons []string, releasePinnable bool) {
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

// takeover says what the new app does with the old one's objects once the old one is gone.
func takeover(old, to string, v *argocd.Version, feeds []string, pinnable bool) (string, []string) {
	switch {
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
	after, notes := takeover(c.App.Name, to.Name, v, feeds, pinnable)
	if c.Fate != Cascade {
		return "no resource is deleted: the old app has no resources finalizer; " + after, notes
	}
	pin := ""
	if pinnable {
		pin = fmt.Sprintf(" (with helm.releaseName: %s on %s)", c.App.Name, to.Name)
	}
	return fmt.Sprintf("first merge a commit that only drops %s from %s's manifest and let the parent sync it (%s); then merge the rename%s: "+
		"the parent deletes %s, which deletes nothing, and %s", c.Finalizer, c.App.Ref(), fin.check(), pin, c.App.Ref(), after), notes
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
	after, notes := takeover(c.App.Name, to.Name, v, feeds, pinnable)
	pin := ""
	if pinnable {
		pin = fmt.Sprintf(" with helm.releaseName: %s in the template for it", c.App.Name)
	}
	if !known {
		return fmt.Sprintf("the controller's policy is not known, so do what holds under every policy: merge syncPolicy.preserveResourcesOnDeletion: true on %s alone; "+
			"once it is live, make sure %s has no resources finalizer (%s) and that it stays off; then merge the rename%s: %s", setRef, c.App.Ref(), fin.remove(), pin, after), notes
	}
	switch {
	case c.Fate != Cascade && appset.PolicyDeletes(policy):
		return fmt.Sprintf("no resource is deleted: %s has no resources finalizer; %s", c.App.Ref(), after), notes
	case !appset.PolicyDeletes(policy):
		return fmt.Sprintf("under applicationsSync %s the set never deletes %s: after merging the rename both apps claim the same objects until you delete %s yourself, "+
			"its resources finalizer removed first (%s, then %s: its deletion then deletes nothing); %s", policy, c.App.Ref(), c.App.Ref(), fin.remove(), fin.delete(), after), notes
	case policy == appset.PolicyCreateDelete:
		return fmt.Sprintf("under applicationsSync create-delete the set never updates an existing app (preserveResourcesOnDeletion would not reach %s): "+
			"remove its resources finalizer by hand first (%s), which the set leaves alone; then merge the rename%s: the set deletes %s, which deletes nothing, and %s",
			c.App.Ref(), fin.remove(), pin, c.App.Ref(), after), notes
	}
	return fmt.Sprintf("under applicationsSync sync the set rewrites its apps' finalizers (one removed by hand is back within seconds): first merge "+
		"syncPolicy.preserveResourcesOnDeletion: true on %s alone and wait until the set has removed %s from %s (%s); then merge the rename%s: "+
		"the set deletes %s, which deletes nothing, and %s (the new app has no resources finalizer either, so deleting it later deletes nothing)",
		setRef, c.Finalizer, c.App.Ref(), fin.check(), pin, c.App.Ref(), after), notes
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

func (f finalizerPatch) delete() string {
	return fmt.Sprintf("kubectl delete applications.argoproj.io -n %s %s", f.Namespace, f.Name)
}

func (f finalizerPatch) remove() string {
	var keep []string
	for _, x := range f.Finalizers {
		if argocd.CascadeFinalizer([]string{x}) == "" {
			keep = append(keep, x)
		}
	}
	sort.Strings(keep)
	value := "null"
	if len(keep) > 0 {
		b, _ := json.Marshal(keep)
		value = string(b)
	}
	return fmt.Sprintf(`kubectl patch applications.argoproj.io -n %s %s %s merge -p '{"metadata":{"finalizers":%s}}'`, f.Namespace, f.Name, longFlag("type"), value)
}

func (c AppChange) finalizerPatch() finalizerPatch {
	return finalizerPatch{Namespace: c.App.Namespace, Name: c.App.Name, Finalizers: c.finalizers}
}

// longFlag spells a long option of another program (kubectl's, argocd's) in the commands advice
// prints: unprune's own options are named through internal/option.
func longFlag(name string) string { return "--" + name }
