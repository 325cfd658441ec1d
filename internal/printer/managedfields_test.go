package printer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// A managedFields change is named, never dumped: no fieldsV1 in tables, diffs or documents.
func TestManagedFieldsChangeIsNamedNotDumped(t *testing.T) {
	argo := cluster.ManagedFieldsEntry{Manager: "argocd-controller", Operation: "Apply", APIVersion: "apps/v1", Time: "2026-11-30T11:00:00Z",
		FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:spec":{"f:replicas":{}}}`)}
	team := cluster.ManagedFieldsEntry{Manager: "team", Operation: "Update", APIVersion: "apps/v1", FieldsType: "FieldsV1",
		FieldsV1: json.RawMessage(`{"f:metadata":{"f:labels":{"f:team":{}}}}`)}
	c := journal.ManagedFieldsRemoval("argocd-controller", []cluster.ManagedFieldsEntry{argo, team}, cluster.ManagedFieldsEntry{})
	const want = "managedFields: remove entries of argocd-controller (Apply, apps/v1)"

	out := Changes([]journal.Change{c})
	if got := describeChanges(out); len(got) != 1 || got[0] != want {
		t.Fatalf("table: %q, want %q", got, want)
	}
	doc, _ := json.Marshal(out)
	if strings.Contains(string(doc), "f:spec") || !strings.Contains(string(doc), `"managedFields":{"removed":[{"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1"}]}`) {
		t.Fatalf("document: %s", doc)
	}
	diff := strings.Join(MetadataLines(nil, nil, []journal.Change{c}), "\n")
	if !strings.Contains(diff, want) || strings.Contains(diff, "f:spec") {
		t.Fatalf("diff lines:\n%s", diff)
	}
	inv := Changes([]journal.Change{c.Inverse()})
	if got := describeChanges(inv); got[0] != "managedFields: restore entries of argocd-controller (Apply, apps/v1)" {
		t.Fatalf("undo table: %q", got)
	}
}
