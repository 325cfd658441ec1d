package plan

import (
	"encoding/json"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
)

// RefuseMarkReverted: the mark would go into an annotation that Argo CD writes from the object's
// manifest, so Argo CD would take it off again.
const RefuseMarkReverted RefusalCode = "MarkRevertedByArgoCD"

// RefuseReplacedBySync: the app syncs with Replace=true, which writes the whole manifest over the
// object at every sync, marks included.
const RefuseReplacedBySync RefusalCode = "ReplacedBySync"

// ManifestSets says how Argo CD's own apply writes the annotation key on the object, or "" when it
// does not. Then Argo CD resets whatever else is put there: its diff is a three-way merge with the
// manifest (gitops-engine pkg/diff), so a changed value shows the object OutOfSync, and the next
// apply — any sync, or self-heal within seconds — writes the manifest's value back. Argo CD applies
// client-side as kubectl apply does, recording the manifest in
// kubectl.kubernetes.io/last-applied-configuration; with ServerSideApply=true its field manager
// argocd-controller owns the manifest's fields (an Apply entry of managedFields).
func ManifestSets(t Target, key string) string {
	if raw, ok := t.Annotations[argocd.AnnotationLastAppliedConfiguration]; ok {
		var doc struct {
			Metadata struct {
				Annotations map[string]any `json:"annotations"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(raw), &doc) == nil {
			if v, ok := doc.Metadata.Annotations[key]; ok {
				return fmt.Sprintf("the manifest Argo CD applied sets %s (%v)", key, v)
			}
		}
	}
	for _, e := range t.ManagedFields {
		if e.Manager != ArgoCDFieldManager || e.Operation != "Apply" {
			continue
		}
		var f map[string]map[string]map[string]any
		if json.Unmarshal(e.FieldsV1, &f) == nil {
			if _, ok := f["f:metadata"]["f:annotations"]["f:"+key]; ok {
				return fmt.Sprintf("Argo CD applies %s server-side (its field manager %s owns it)", key, ArgoCDFieldManager)
			}
		}
	}
	return ""
}

// MarkHolds refuses a mark placed into key on an object its app still declares (its manifest is in
// the app's git), when Argo CD would take the mark off again; replace is true when the app syncs
// with Replace=true. what names the mark, instead the way to place it that holds.
func MarkHolds(p Plan, key, what, instead string, replace bool) Plan {
	t := p.Target
	if !t.Declared {
		// Not in git: no sync applies its manifest again, and nothing compares it with one.
		return p
	}
	if how := ManifestSets(t, key); how != "" {
		return refused(p, RefuseMarkReverted, "%s: %s, so Argo CD would write it back over %s (self-heal, or the next sync). %s", t.Ref, how, what, instead)
	}
	if replace {
		return refused(p, RefuseReplacedBySync, "%s: its app syncs with Replace=true, which writes the whole manifest over %s at every sync. %s", t.Ref, what, instead)
	}
	return p
}
