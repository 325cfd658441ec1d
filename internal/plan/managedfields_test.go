package plan

import (
	"encoding/json"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

func entry(manager, operation, apiVersion, subresource string) cluster.ManagedFieldsEntry {
	return cluster.ManagedFieldsEntry{Manager: manager, Operation: operation, APIVersion: apiVersion, Subresource: subresource,
		Time: "2026-11-30T11:00:00Z", FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)}
}

func managedFieldsChange(p Plan) *journal.Change {
	for i := range p.Changes {
		if p.Changes[i].ManagedFields != nil {
			return &p.Changes[i]
		}
	}
	return nil
}

func TestDisownArgoCDFieldOwnership(t *testing.T) {
	ssa := entry(ArgoCDFieldManager, "Apply", "apps/v1", "")
	csa := entry(ArgoCDFieldManager, "Update", "apps/v1", "")
	team := entry("team-pipeline", "Apply", "apps/v1", "")
	kcm := entry("kube-controller-manager", "Update", "apps/v1", "status")
	tracked := Target{Instance: "guestbook", Ref: ui, RequiresPruning: true, Annotations: map[string]string{keyTracking: uiID}}
	tests := []struct {
		name        string
		s           Strategy
		keep        bool
		managed     []cluster.ManagedFieldsEntry
		wantRemoved []cluster.ManagedFieldsEntry
		wantSent    []cluster.ManagedFieldsEntry
	}{
		{"applied server-side: every entry of Argo CD's manager goes, the others are sent as read",
			StrategyUntrack, false, []cluster.ManagedFieldsEntry{kcm, ssa, team, csa}, []cluster.ManagedFieldsEntry{ssa, csa}, []cluster.ManagedFieldsEntry{kcm, team}},
		{"the only manager: a placeholder of unprune's that owns no field takes its place",
			StrategyUntrack, false, []cluster.ManagedFieldsEntry{ssa}, []cluster.ManagedFieldsEntry{ssa}, []cluster.ManagedFieldsEntry{placeholder("apps/v1")}},
		{"applied client-side only", StrategyUntrack, false, []cluster.ManagedFieldsEntry{csa, kcm}, nil, nil},
		{"no entries of Argo CD", StrategyUntrack, false, []cluster.ManagedFieldsEntry{team}, nil, nil},
		{"keep never touches managedFields", StrategyKeep, false, []cluster.ManagedFieldsEntry{ssa}, nil, nil},
		{"asked to keep them", StrategyUntrack, true, []cluster.ManagedFieldsEntry{ssa}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tracked
			target.ManagedFields = tt.managed
			p := Build(annotationMode, target, Options{Strategy: tt.s, KeepManagedFields: tt.keep})
			if p.Refusal != nil {
				t.Fatal(p.Refusal)
			}
			c := managedFieldsChange(p)
			if tt.wantRemoved == nil {
				if c != nil {
					t.Fatalf("unexpected %s", c)
				}
				return
			}
			if c == nil {
				t.Fatalf("no managedFields change in %v", changeStrings(p.Changes))
			}
			if c.Key != ArgoCDFieldManager || !sameEntries(c.ManagedFields.Entries, tt.wantRemoved) {
				t.Fatalf("removed %+v, want %+v", c.ManagedFields.Entries, tt.wantRemoved)
			}
			if sent, known := c.ManagedFields.List(); !known || !sameEntries(sent, tt.wantSent) {
				t.Fatalf("sent %+v, want %+v", sent, tt.wantSent)
			}
			if p.Changes[0].ManagedFields != nil {
				t.Fatal("the tracking keys come first")
			}
		})
	}
}

func TestNothingToReleaseLeavesManagedFields(t *testing.T) {
	// Another app's object: refused, and its ownership is not this app's to give away.
	other := Target{Instance: "guestbook", Ref: ui, RequiresPruning: true, Annotations: map[string]string{keyTracking: "other:apps/Deployment:guestbook/ui"},
		ManagedFields: []cluster.ManagedFieldsEntry{entry(ArgoCDFieldManager, "Apply", "apps/v1", "")}}
	if p := Build(annotationMode, other, Options{Strategy: StrategyUntrack}); p.Refusal == nil || managedFieldsChange(p) != nil {
		t.Fatalf("want a refusal and no managedFields change: %+v", p)
	}
}

func sameEntries(a, b []cluster.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
