// Package plan decides, without touching the cluster, exactly which labels and annotations of a live
// object change to release it from an Argo CD Application — or why it must be left alone.
//
// Two strategies exist. "untrack" removes the tracking metadata Argo CD reads, so the object is no
// longer part of the app and no sync can prune it. "keep" leaves tracking in place and adds
// `compare-options: IgnoreExtraneous` and `sync-options: Prune=false`, so the object stays visible in
// the app but neither counts against its sync status nor can be pruned.
package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
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
	Instance        string // the app's instance name (app, or <namespace>_<app>)
	Ref             argocd.ObjectRef
	Labels          map[string]string
	Annotations     map[string]string
	OwnerReferences []string // "Kind/name" of each owner
	Deleting        bool     // metadata.deletionTimestamp is set
	RequiresPruning bool     // the app's status says so
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
}

// RefusalCode classifies a refusal for machine-readable output and exit codes.
type RefusalCode string

const (
	RefuseNotRequiresPruning RefusalCode = "NotRequiresPruning"
	RefuseOtherOwner         RefusalCode = "TrackedElsewhere"
	RefuseNamesOtherObject   RefusalCode = "TrackingNamesOtherObject"
	RefuseHasOwner           RefusalCode = "HasOwnerReferences"
	RefuseDeleting           RefusalCode = "BeingDeleted"
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
}

// Done reports an object that needs no change: it is already released.
func (p Plan) Done() bool { return p.Refusal == nil && len(p.Changes) == 0 }

// Build plans the release of one object under Argo CD's settings.
func Build(s argocd.Settings, t Target, o Options) Plan {
	p := Plan{Target: t}
	refuse := func(code RefusalCode, format string, args ...any) Plan {
		p.Refusal = &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
		return p
	}
	if t.Deleting {
		return refuse(RefuseDeleting, "%s is being deleted already; nothing can keep it now", t.Ref)
	}
	if len(t.OwnerReferences) > 0 {
		return refuse(RefuseHasOwner, "%s is owned by %s: Argo CD never prunes objects with owners, so detach its owner instead",
			t.Ref, strings.Join(t.OwnerReferences, ", "))
	}
	own := s.Owner(t.Labels, t.Annotations, t.Ref)
	if !own.TrackedBy(t.Instance) {
		if own.Reason == argocd.ReasonNoTrackingMetadata && !own.Tracked {
			// Released already (by an earlier run, or by hand): nothing to do, even while the app's
			// status still lists it (it refreshes within seconds).
			p.Notes = append(p.Notes, "not tracked by Argo CD any more: "+own.Detail)
			return p
		}
		if own.Reason == argocd.ReasonTrackingIDNamesOtherObject {
			return refuse(RefuseNamesOtherObject, "%s: %s; its metadata belongs to that object: fix the copy by hand if needed", t.Ref, own.Detail)
		}
		return refuse(RefuseOtherOwner, "%s: %s", t.Ref, own.Refusal(t.Instance))
	}
	if !t.RequiresPruning && !o.Force {
		return refuse(RefuseNotRequiresPruning, "%s does not require pruning in the app (it is still in git, or the app has not refreshed); use --force to detach it anyway", t.Ref)
	}
	switch o.Strategy {
	case StrategyKeep:
		return planKeep(p)
	default:
		return planUntrack(s, own, p, o)
	}
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
		case f.Kind == argocd.FieldLabel && f.Value == t.Instance && s.WritesLabel():
			// annotation+label: Argo CD wrote the label too; it no longer means anything once
			// the annotation is gone.
			fields = append(fields, f)
		case f.Kind == argocd.FieldLabel:
			p.Notes = append(p.Notes, fmt.Sprintf("label %s=%s left alone: %s tracking does not use it, and other tools (Helm) set it for their own purposes",
				f.Key, f.Value, s.Method))
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
	if o.ScrubLastApplied && len(p.Changes) > 0 {
		if c, note, ok := scrubLastApplied(t, p.Changes); ok {
			p.Changes = append(p.Changes, c)
		} else if note != "" {
			p.Notes = append(p.Notes, note)
		}
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

func planKeep(p Plan) Plan {
	for _, want := range []struct{ key, option string }{
		{argocd.AnnotationCompareOptions, argocd.OptionIgnoreExtraneous},
		{argocd.AnnotationSyncOptions, argocd.OptionPruneDisabled},
	} {
		before, had := p.Target.Annotations[want.key]
		merged, changed := argocd.SetOption(before, want.option)
		if !changed {
			continue
		}
		if had {
			p.Changes = append(p.Changes, journal.Rewrite(journal.FieldAnnotation, want.key, before, merged))
		} else {
			p.Changes = append(p.Changes, journal.Addition(journal.FieldAnnotation, want.key, merged))
		}
	}
	return p
}

// scrubLastApplied removes the removed keys from the copy kubectl keeps in its annotation, leaving
// every other byte of meaning intact. Objects without the annotation need nothing.
func scrubLastApplied(t Target, removals []journal.Change) (journal.Change, string, bool) {
	const key = argocd.AnnotationLastAppliedConfiguration
	raw, ok := t.Annotations[key]
	if !ok {
		return journal.Change{}, "", false
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as written, however large
	if err := dec.Decode(&doc); err != nil {
		return journal.Change{}, fmt.Sprintf("%s left as is: it is not JSON (%v)", key, err), false
	}
	meta, _ := doc["metadata"].(map[string]any)
	if meta == nil {
		return journal.Change{}, "", false
	}
	changed := false
	for _, r := range removals {
		section := "labels"
		if r.Field == journal.FieldAnnotation {
			section = "annotations"
		}
		m, _ := meta[section].(map[string]any)
		if _, ok := m[r.Key]; ok {
			delete(m, r.Key)
			changed = true
			if len(m) == 0 {
				delete(meta, section)
			}
		}
	}
	if !changed {
		return journal.Change{}, "", false
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return journal.Change{}, err.Error(), false
	}
	// kubectl writes the annotation with a trailing newline; keep that shape.
	after := string(b)
	if strings.HasSuffix(raw, "\n") {
		after += "\n"
	}
	return journal.Rewrite(journal.FieldAnnotation, key, raw, after), "", true
}
