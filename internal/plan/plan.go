// Package plan decides, without touching the cluster, exactly which labels and annotations of a live
// object change to release it from an Argo CD Application — or why it must be left alone.
//
// Two strategies exist. "untrack" removes the tracking metadata Argo CD reads, so the object is no
// longer part of the app and no sync can prune it. "keep" leaves tracking in place and adds
// `compare-options: IgnoreExtraneous` and `sync-options: Prune=false`, so the object stays visible in
// the app but neither counts against its sync status nor can be pruned.
package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/lastapplied"
	"github.com/unprune/unprune/internal/option"
)

// Strategy is how an object is released.
type Strategy string

const (
	StrategyUntrack Strategy = "untrack"
	StrategyKeep    Strategy = "keep"
)

// ParseStrategy validates a --strategy value.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case StrategyUntrack, StrategyKeep:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("unknown strategy %q: use untrack (remove Argo CD's tracking metadata) or keep (stay in the app, never pruned)", s)
}

// Target is a live object of an Application, as read from the cluster.
type Target struct {
	Instance string // the app's instance name (app, or <namespace>_<app>)
	Ref      argocd.ObjectRef
	// Resource is the API resource serving it (deployments), where the planner knows it.
	Resource        string
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []string // "Kind/name" of each owner
	Deleting        bool     // metadata.deletionTimestamp is set
	// RequiresPruning is what the app's status row says. The row is the authority: Argo CD only
	// sets it for an object it matched to the app.
	RequiresPruning bool
	// Declared is true when the app's status lists the object as part of its desired state (a row
	// not requiring pruning): its manifest is in the app's git, and Argo CD applies it again.
	Declared bool
	// Replaced is true when the app that declares it syncs it with Replace=true (its syncOptions, or
	// the object's own sync-options): every sync writes the whole manifest over the object (a PUT,
	// for a Namespace or a CRD too), so no label or annotation that is not in the manifest survives.
	Replaced bool
	// Hook is true when the status row marks the object a hook, or (without a row) its annotations do.
	Hook bool
	// ManagedFields are the object's metadata.managedFields.
	ManagedFields []cluster.ManagedFieldsEntry
}

// Options change what a plan may do.
type Options struct {
	Strategy Strategy
	// Force plans objects the app does not (yet) mark requiresPruning.
	Force bool
	// ScrubLastApplied also removes the same keys from kubectl's last-applied-configuration
	// annotation. Argo CD ignores that copy for ownership; scrubbing only keeps a later
	// `kubectl apply` of that old configuration from writing the keys back.
	ScrubLastApplied bool
	// KeepManagedFields leaves Argo CD's field manager entries in managedFields (see disownFields).
	KeepManagedFields bool
}

// RefusalCode classifies a refusal for machine-readable output and exit codes.
type RefusalCode string

const (
	RefuseNotRequiresPruning RefusalCode = "NotRequiresPruning"
	RefuseOtherOwner         RefusalCode = "TrackedElsewhere"
	RefuseNamesOtherObject   RefusalCode = "TrackingNamesOtherObject"
	RefuseHasOwner           RefusalCode = "HasOwnerReferences"
	RefuseDeleting           RefusalCode = "BeingDeleted"
	RefuseHook               RefusalCode = "Hook"
	// RefuseOtherInstallation: the object's installation-id names another Argo CD installation.
	RefuseOtherInstallation RefusalCode = "OtherInstallation"
)

// Refusal is why an object is left alone.
type Refusal struct {
	Code    RefusalCode `json:"code"`
	Message string      `json:"message"`
}

func (r *Refusal) Error() string { return r.Message }

// Plan is the outcome for one object: the changes to make (none when there is nothing left to do),
// or a refusal.
type Plan struct {
	Target  Target
	Changes []journal.Change
	Notes   []string
	Refusal *Refusal
	// Released is true when the app's status still lists the object but it carries no tracking
	// metadata naming the app under any tracking method: there is nothing left that unprune (or
	// anyone) could remove. This is what a rerun meets after an interruption, while Argo CD has not
	// compared the app again; only that comparison can prove the release, and the engine waits for it.
	Released bool
}

// Build plans the release of one object under Argo CD's settings.
func Build(s argocd.Settings, t Target, o Options) Plan {
	p := Plan{Target: t}
	refuse := func(code RefusalCode, format string, args ...any) Plan {
		p.Refusal = &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
		return p
	}
	if r := untouchable(t); r != nil {
		p.Refusal = r
		return p
	}
	if s.Method == argocd.MethodLabel && !argocd.LabelValueFits(t.Instance) {
		p.Notes = append(p.Notes, fmt.Sprintf("the instance %q is longer than 63 characters: with label tracking Argo CD cannot apply "+
			"this app's resources at all (the label value is refused); use annotation tracking", t.Instance))
	}
	own := s.Owner(t.Labels, t.Annotations, t.Ref)
	if !own.TrackedBy(t.Instance) {
		if own.Reason == argocd.ReasonTrackingIDNamesOtherObject {
			return refuse(RefuseNamesOtherObject, "%s: %s; its metadata belongs to that object: fix the copy by hand if needed", t.Ref, own.Detail)
		}
		if own.Tracked {
			return refuse(RefuseOtherOwner, "%s: %s", t.Ref, own.Refusal(t.Instance))
		}
		if !t.RequiresPruning {
			if o.Force {
				p.Notes = append(p.Notes, "not tracked by Argo CD: "+own.Detail)
				return p
			}
			return refuse(RefuseNotRequiresPruning, "%s is not tracked by this app (%s)", t.Ref, own.Detail)
		}
		// The app's status says Argo CD matched the object to this app, yet the settings find no
		// tracking of it: unprune's model of the installation is wrong (an unknown version, a
		// method read wrongly). Fall back to every kind of tracking metadata naming this app.
		return disownFields(planFromRow(s, p, own, o), o)
	}
	if !t.RequiresPruning && !o.Force {
		return refuse(RefuseNotRequiresPruning, "%s does not require pruning in the app (it is still in git, or the app has not refreshed); use %v to detach it anyway", t.Ref, option.Force)
	}
	switch o.Strategy {
	case StrategyKeep:
		return planKeep(p)
	default:
		return disownFields(planUntrack(s, own, p, o), o)
	}
}

// planFromRow handles an object the app's status lists although the settings see no tracking: it
// removes whatever tracking metadata of any method names this app and this object, or refuses.
func planFromRow(s argocd.Settings, p Plan, own argocd.Ownership, o Options) Plan {
	t := p.Target
	if id, ok := t.Annotations[argocd.AnnotationInstallationID]; ok && s.InstallationID != "" && id != s.InstallationID {
		// Its tracking belongs to another Argo CD installation, whatever this one's status says:
		// never take it away from there.
		p.Refusal = &Refusal{Code: RefuseOtherInstallation, Message: fmt.Sprintf(
			"%s carries installation-id %q, while this Argo CD's is %q: it belongs to another Argo CD installation; detach it there", t.Ref, id, s.InstallationID)}
		return p
	}
	any := argocd.NewSettings(map[string]string{
		argocd.SettingInstanceLabelKey: s.InstanceLabelKey, argocd.SettingInstallationID: s.InstallationID,
	}, nil)
	fallback := any.Owner(t.Labels, t.Annotations, t.Ref)
	fields := fallback.FieldsFor(t.Instance)
	if value, ok := t.Labels[s.InstanceLabelKey]; ok && value != t.Instance && isTruncatedInstance(value, t.Instance) {
		fields = append(fields, argocd.Field{Kind: argocd.FieldLabel, Key: s.InstanceLabelKey, Value: value})
	}
	if len(fields) == 0 {
		// Nothing names this app under any method: whatever unprune's view of the settings, there
		// is nothing left to remove. A refusal here would make every rerun after an interruption
		// fail until Argo CD compares again (a busy or stopped controller: minutes). The release is
		// still not taken on faith: the engine waits for a comparison that no longer lists the
		// object, and says so when Argo CD has not compared yet or still lists it.
		p.Released = true
		p.Notes = append(p.Notes, fmt.Sprintf("no tracking metadata naming %q under any tracking method (%s)", t.Instance, own.Detail))
		return p
	}
	p.Notes = append(p.Notes, fmt.Sprintf("Argo CD lists this object as the app's although, with %s, unprune expected no tracking (%s): "+
		"unprune's view of the settings is wrong, so it removes every kind of tracking metadata naming this app (pass %v to be exact)",
		s, own.Detail, option.ArgoCDVersion))
	if o.Strategy == StrategyKeep {
		return planKeep(p)
	}
	for _, f := range dedupe(fields) {
		p.Changes = append(p.Changes, journal.Removal(journal.Field(f.Kind), f.Key, f.Value))
	}
	return scrub(p, o)
}

// untouchable refuses the objects no change of tracking may touch, whatever the command: objects
// being deleted, hooks, and objects with owners.
func untouchable(t Target) *Refusal {
	switch {
	case t.Deleting:
		return &Refusal{Code: RefuseDeleting, Message: fmt.Sprintf("%s is being deleted already; nothing can keep it now", t.Ref)}
	case t.Hook:
		return &Refusal{Code: RefuseHook, Message: fmt.Sprintf("%s is a hook: Argo CD lists every live hook as requiring pruning, but never prunes it and it never "+
			"makes the app OutOfSync; its delete policy only deletes hooks the app still tracks, so untracking it would break the next hook run", t.Ref)}
	case len(t.OwnerReferences) > 0:
		return &Refusal{Code: RefuseHasOwner, Message: fmt.Sprintf("%s is owned by %s: Argo CD never prunes objects with owners, so detach its owner instead",
			t.Ref, strings.Join(t.OwnerReferences, ", "))}
	}
	return nil
}

// isTruncatedInstance reports whether value is the instance label Argo CD writes in
// annotation+label mode for an instance too long for a label.
func isTruncatedInstance(value, instance string) bool {
	truncated, ok := argocd.TruncatedLabelValue(instance)
	return ok && value == truncated
}

func planUntrack(s argocd.Settings, own argocd.Ownership, p Plan, o Options) Plan {
	t := p.Target
	fields := own.FieldsFor(t.Instance)
	seen := map[string]bool{}
	for _, f := range fields {
		seen[string(f.Kind)+"/"+f.Key] = true
	}
	for _, f := range own.Informational {
		if seen[string(f.Kind)+"/"+f.Key] {
			continue
		}
		switch {
		case f.Kind == argocd.FieldLabel && (f.Value == t.Instance || isTruncatedInstance(f.Value, t.Instance)) && s.WritesLabel():
			// annotation+label: Argo CD wrote the label too; it no longer means anything once
			// the annotation is gone.
			fields = append(fields, f)
		case f.Kind == argocd.FieldLabel:
			p.Notes = append(p.Notes, fmt.Sprintf("label %s=%s left alone: %s tracking does not read it, and other tools (Helm) set it for their own purposes",
				f.Key, f.Value, orAmbiguous(s.Method)))
		case f.Kind == argocd.FieldAnnotation && f.Key == argocd.AnnotationTrackingID:
			if id, ok := argocd.ParseTrackingID(f.Value); ok && id.Instance == t.Instance && id.RefersTo(t.Ref) {
				// Label tracking ignores it, but a later switch to annotation tracking would not.
				fields = append(fields, f)
				if v, ok := t.Annotations[argocd.AnnotationInstallationID]; ok {
					fields = append(fields, argocd.Field{Kind: argocd.FieldAnnotation, Key: argocd.AnnotationInstallationID, Value: v})
				}
			}
		}
	}
	for _, f := range dedupe(fields) {
		p.Changes = append(p.Changes, journal.Removal(journal.Field(f.Kind), f.Key, f.Value))
	}
	if !own.Certain {
		p.Notes = append(p.Notes, "ownership is uncertain ("+own.Detail+"); removing every candidate that names this app")
	}
	return scrub(p, o)
}

func orAmbiguous(m argocd.Method) string {
	if m == "" {
		return "the configured"
	}
	return string(m)
}

func scrub(p Plan, o Options) Plan {
	if !o.ScrubLastApplied || len(p.Changes) == 0 {
		return p
	}
	c, note, ok := scrubLastApplied(p.Target, p.Changes)
	if ok {
		p.Changes = append(p.Changes, c)
	} else if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return p
}

func dedupe(fields []argocd.Field) []argocd.Field {
	seen := map[string]bool{}
	out := fields[:0:0]
	for _, f := range fields {
		k := string(f.Kind) + "/" + f.Key
		if !seen[k] {
			seen[k] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind > out[j].Kind // labels first
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// planKeep leaves tracking alone and makes the object safe to keep in the app: IgnoreExtraneous so
// it no longer makes the app OutOfSync, Prune=false so no sync prunes it, and Delete=false so that
// deleting the Application with cascade (its resources finalizer) keeps it too — Prune=false does
// nothing there.
func planKeep(p Plan) Plan {
	p = mergeOptions(p, argocd.AnnotationCompareOptions, argocd.OptionIgnoreExtraneous)
	return mergeOptions(p, argocd.AnnotationSyncOptions, KeepSyncOptions()...)
}

// KeepSyncOptions are the sync options that keep an object whatever its app does: Prune=false so
// no sync prunes it, Delete=false so deleting the app with cascade keeps it. `detach --strategy
// keep` and `move --prepare` merge exactly these.
func KeepSyncOptions() []string {
	return []string{argocd.OptionPruneDisabled, argocd.OptionDeleteDisabled}
}

// mergeOptions merges options into the options annotation key of the plan's target, adding one
// change when anything changes.
func mergeOptions(p Plan, key string, options ...string) Plan {
	before, had := p.Target.Annotations[key]
	merged, changed := before, false
	for _, option := range options {
		var c bool
		merged, c = argocd.SetOption(merged, option)
		changed = changed || c
	}
	switch {
	case !changed:
	case had:
		p.Changes = append(p.Changes, journal.Rewrite(journal.FieldAnnotation, key, before, merged))
	default:
		p.Changes = append(p.Changes, journal.Addition(journal.FieldAnnotation, key, merged))
	}
	return p
}

// scrubLastApplied removes the removed keys from the copy kubectl keeps in its annotation, leaving
// every other byte intact. The annotation embeds the whole object as applied — for a Secret, its
// data — so the change is recorded as the keys it removes and digests (journal.EmbeddedRewrite),
// never as values. It is only done when the value is in the canonical form kubectl and Argo CD
// write (Go's JSON encoding of the object: sorted keys), which undo can reproduce byte for byte.
func scrubLastApplied(t Target, removals []journal.Change) (journal.Change, string, bool) {
	const key = argocd.AnnotationLastAppliedConfiguration
	raw, ok := t.Annotations[key]
	if !ok {
		return journal.Change{}, "", false
	}
	doc, err := lastapplied.Parse(raw)
	if err != nil {
		return journal.Change{}, fmt.Sprintf("%s left as is: %v", key, err), false
	}
	var removed []journal.EmbeddedKey
	for _, r := range removals {
		if r.Embedded != nil {
			continue
		}
		if value, ok := doc.Remove(string(r.Field), r.Key); ok {
			removed = append(removed, journal.EmbeddedKey{Field: r.Field, Key: r.Key, Value: value})
		}
	}
	if len(removed) == 0 {
		return journal.Change{}, "", false
	}
	after, err := doc.Encode()
	if err != nil {
		return journal.Change{}, fmt.Sprintf("%s left as is: %v", key, err), false
	}
	return journal.EmbeddedRewrite(key, raw, after, removed), "", true
}
