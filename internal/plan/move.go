package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
)

// Refusals of move and prepare, besides those every tracking change shares.
const (
	// RefuseNotTracked: the object is not tracked by the app it would be moved from.
	RefuseNotTracked RefusalCode = "NotTrackedByApp"
	// RefuseLabelTooLong: label tracking cannot name the new app on any object (its instance is
	// longer than a label value may be).
	RefuseLabelTooLong RefusalCode = "InstanceTooLongForLabel"
)

// MoveTo is the app a move hands objects to.
type MoveTo struct {
	// Instance is the app's instance name (app, or <namespace>_<app>).
	Instance string
	// DestinationNamespace is the app's spec.destination.namespace: Argo CD writes it in the
	// namespace slot of a cluster-scoped object's tracking-id (util/argo/resource_tracking.go,
	// UnstructuredToAppInstanceValue), so the moved id must carry the new app's.
	DestinationNamespace string
}

// Prepared is what `move --prepare` wrote on an object's sync-options annotation, read back from
// its journal: the value before (nil when absent) and the value it wrote.
type Prepared struct {
	Before *string
	After  string
}

// BuildMove plans the rewrite of an object's tracking from t.Instance's app to to's, the way Argo CD
// itself would write it for that app (util/argo/resource_tracking.go, SetAppInstance): the instance
// label's value (in annotation+label mode truncated to 63 characters as Argo CD does; in label mode
// as is), the tracking-id naming the object with the new instance, the installation-id left as it
// is (the same installation tracks it). The options `move --prepare` added stay until
// BuildUnprepare takes them off, once Argo CD has shown the new app declares the object.
func BuildMove(s argocd.Settings, t Target, to MoveTo) Plan {
	p := Plan{Target: t}
	if r := untouchable(t); r != nil {
		p.Refusal = r
		return p
	}
	own := s.Owner(t.Labels, t.Annotations, t.Ref)
	switch {
	case own.TrackedBy(to.Instance):
		p.Notes = append(p.Notes, fmt.Sprintf("tracked by %q already: no tracking to rewrite", to.Instance))
		return p
	case own.Reason == argocd.ReasonTrackingIDNamesOtherObject && !own.Tracked:
		return refused(p, RefuseNamesOtherObject, "%s: %s; its metadata belongs to that object: fix the copy by hand if needed", t.Ref, own.Detail)
	case !own.TrackedBy(t.Instance) && own.Tracked:
		return refused(p, RefuseOtherOwner, "%s: %s", t.Ref, own.Refusal(t.Instance))
	case !own.Tracked && isCRD(t.Ref):
		// Argo CD writes no tracking on CustomResourceDefinitions (reposerver/repository/repository.go:
		// `!kube.IsCRD(target)` before SetAppInstance) and lists one only because the app declares it;
		// its cascade deletion never deletes one either (controller/appcontroller.go, shouldBeDeleted).
		// There is nothing to move: the app that declares it lists it.
		p.Notes = append(p.Notes, "Argo CD writes no tracking on a CustomResourceDefinition: nothing to rewrite; the app that declares it lists it")
		return p
	case !own.TrackedBy(t.Instance):
		if id, ok := t.Annotations[argocd.AnnotationInstallationID]; ok && s.InstallationID != "" && id != s.InstallationID {
			return refused(p, RefuseOtherInstallation, "%s carries installation-id %q, while this Argo CD's is %q: it belongs to another Argo CD installation",
				t.Ref, id, s.InstallationID)
		}
		return refused(p, RefuseNotTracked, "%s is not tracked by %q (%s): nothing to move", t.Ref, t.Instance, own.Detail)
	}
	if s.Method == argocd.MethodLabel && !argocd.LabelValueFits(to.Instance) {
		return refused(p, RefuseLabelTooLong, "the instance %q is longer than 63 characters: with label tracking Argo CD cannot apply any resource of that app "+
			"(the API server refuses the label value); switch to annotation tracking first", to.Instance)
	}
	p.Changes = append(p.Changes, rewriteLabel(s, t, to)...)
	p.Changes = append(p.Changes, rewriteTrackingID(t, to)...)
	if len(p.Changes) == 0 {
		return refused(p, RefuseNotTracked, "%s: unprune found no tracking metadata naming %q to rewrite (%s)", t.Ref, t.Instance, own.Detail)
	}
	return p
}

func isCRD(o argocd.ObjectRef) bool {
	return o.Group == "apiextensions.k8s.io" && o.Kind == "CustomResourceDefinition"
}

func refused(p Plan, code RefusalCode, format string, args ...any) Plan {
	p.Refusal = &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
	return p
}

// rewriteLabel rewrites the instance label when it names the old app: in label mode it is the
// tracking itself; in annotation+label mode Argo CD writes it (truncated) for other tools. In
// annotation mode Argo CD neither reads nor writes it, so a label of that key is someone else's
// (Helm's) and stays.
func rewriteLabel(s argocd.Settings, t Target, to MoveTo) []journal.Change {
	value, ok := t.Labels[s.InstanceLabelKey]
	if !ok || (value != t.Instance && !isTruncatedInstance(value, t.Instance)) || !s.WritesLabel() {
		return nil
	}
	next := to.Instance
	if s.Method == argocd.MethodAnnotationAndLabel || !argocd.LabelValueFits(next) {
		// Argo CD truncates the label it writes beside the annotation (TruncateLabel); label mode
		// with a long instance was refused before.
		truncated, ok := argocd.TruncatedLabelValue(to.Instance)
		if !ok {
			return nil
		}
		next = truncated
	}
	if next == value {
		return nil
	}
	return []journal.Change{journal.Rewrite(journal.FieldLabel, s.InstanceLabelKey, value, next)}
}

// rewriteTrackingID rewrites a tracking-id naming the old app and this object, under any method: in
// label mode Argo CD ignores it, but a later switch to annotation tracking would not.
func rewriteTrackingID(t Target, to MoveTo) []journal.Change {
	value, ok := t.Annotations[argocd.AnnotationTrackingID]
	if !ok {
		return nil
	}
	id, ok := argocd.ParseTrackingID(value)
	if !ok || id.Instance != t.Instance || !id.RefersTo(t.Ref) {
		return nil
	}
	id.Instance = to.Instance
	if t.Ref.ClusterScoped || t.Ref.Namespace == "" {
		id.Namespace = to.DestinationNamespace
	}
	if id.String() == value {
		return nil
	}
	return []journal.Change{journal.Rewrite(journal.FieldAnnotation, argocd.AnnotationTrackingID, value, id.String())}
}

// BuildUnprepare takes off the options `move --prepare` added to sync-options: the value it found is
// put back when nobody changed it since; otherwise only the added options are removed and whatever
// else is there now stays. Taking them off lets the app that tracks the object prune it: the engine
// does it only after Argo CD's comparison shows that app declares the object.
func BuildUnprepare(t Target, prepared *Prepared) Plan {
	p := Plan{Target: t}
	if r := untouchable(t); r != nil {
		p.Refusal = r
		return p
	}
	if prepared == nil {
		return p
	}
	const key = argocd.AnnotationSyncOptions
	live, has := p.Target.Annotations[key]
	if !has {
		p.Notes = append(p.Notes, fmt.Sprintf("%s is gone since %v: nothing to take off", key, option.Prepare))
		return p
	}
	next, keep := restoredOptions(live, prepared)
	switch {
	case next == live && keep:
	case !keep:
		p.Changes = append(p.Changes, journal.Removal(journal.FieldAnnotation, key, live))
	default:
		p.Changes = append(p.Changes, journal.Rewrite(journal.FieldAnnotation, key, live, next))
	}
	return p
}

// restoredOptions is live without the options prepare added; keep is false when nothing should
// remain (the annotation was absent before prepare and holds nothing else now).
func restoredOptions(live string, prepared *Prepared) (string, bool) {
	if live == prepared.After {
		if prepared.Before == nil {
			return "", false
		}
		return *prepared.Before, true
	}
	var before []string
	if prepared.Before != nil {
		before = argocd.ParseOptions(*prepared.Before)
	}
	var added []string
	for _, o := range argocd.ParseOptions(prepared.After) {
		if !slices.Contains(before, o) {
			added = append(added, o)
		}
	}
	var rest []string
	for _, o := range argocd.ParseOptions(live) {
		if !slices.Contains(added, o) {
			rest = append(rest, o)
		}
	}
	if len(rest) == len(argocd.ParseOptions(live)) {
		return live, true
	}
	return strings.Join(rest, ","), len(rest) > 0 || prepared.Before != nil
}

// BuildPrepare plans what `move --prepare` writes before the commit that moves an object's manifest
// lands: the sync options that keep it whatever its app does meanwhile (the same `detach --strategy
// keep` merges: KeepSyncOptions). The object is still in its app's git, so it need not require
// pruning; it must be tracked by the app.
//
// The marks must hold until then: on an object its app still declares, they go into
// argocd.argoproj.io/sync-options only when Argo CD does not write that annotation from the
// object's manifest, and not for an app that syncs with Replace=true (replace).
func BuildPrepare(s argocd.Settings, t Target, replace bool) Plan {
	p := Plan{Target: t}
	if r := untouchable(t); r != nil {
		p.Refusal = r
		return p
	}
	own := s.Owner(t.Labels, t.Annotations, t.Ref)
	if !own.TrackedBy(t.Instance) {
		if own.Tracked {
			return refused(p, RefuseOtherOwner, "%s: %s", t.Ref, own.Refusal(t.Instance))
		}
		return refused(p, RefuseNotTracked, "%s is not tracked by %q (%s): nothing to prepare", t.Ref, t.Instance, own.Detail)
	}
	p = MarkHolds(p, argocd.AnnotationSyncOptions, "Prune=false,Delete=false", "Put Prune=false,Delete=false into the manifest's sync-options instead, "+
		"in a commit the app syncs before the one that moves the object; or, on Argo CD v3.4+, set the app's syncPolicy.syncOptions to [Prune=false, Delete=false] until the move is done", replace)
	if p.Refusal != nil {
		return p
	}
	return mergeOptions(p, argocd.AnnotationSyncOptions, KeepSyncOptions()...)
}
