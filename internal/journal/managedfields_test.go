package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
)

// liveManagedFields is what the API server returns for a ConfigMap Argo CD synced server-side and a
// team labelled afterwards.
func liveManagedFields() []cluster.ManagedFieldsEntry {
	return []cluster.ManagedFieldsEntry{
		{Manager: "argocd-controller", Operation: "Apply", APIVersion: "v1", Time: "2026-11-30T11:00:00Z", FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(`{"f:data":{"f:color":{}},"f:metadata":{"f:annotations":{"f:argocd.argoproj.io/tracking-id":{}}}}`)},
		{Manager: "team-pipeline", Operation: "Update", APIVersion: "v1", Time: "2026-11-30T11:30:00Z", FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(`{"f:metadata":{"f:labels":{".":{},"f:team":{}}}}`)},
	}
}

var placeholder = cluster.ManagedFieldsEntry{Manager: "unprune", Operation: "Update", APIVersion: "v1", FieldsType: "FieldsV1",
	FieldsV1: json.RawMessage(`{"f:metadata":{}}`)}

// When Argo CD's manager is the only one, the list sent holds the placeholder (never an empty
// list, which the API server ignores), and undo takes the placeholder out again.
func TestManagedFieldsOnlyManagerGetsAPlaceholder(t *testing.T) {
	argo := liveManagedFields()[:1]
	c := ManagedFieldsRemoval("argocd-controller", argo, placeholder)
	list, _ := c.ManagedFields.List()
	if len(list) != 1 || !list[0].Equal(placeholder) || c.ManagedFields.Placeholder == nil {
		t.Fatalf("sent %+v, want the placeholder alone", list)
	}
	if !c.ExpectsEntries(list) || c.ExpectsEntries(nil) {
		t.Fatal("the result must hold the placeholder and no entry of Argo CD")
	}
	// The placeholder as the API server returns it: with a time, indented differently.
	stored := placeholder
	stored.Time, stored.FieldsV1 = "2026-11-30T12:00:00Z", json.RawMessage(`{ "f:metadata": {} }`)
	team := liveManagedFields()[1]
	restore := c.ManagedFields.RestoreList([]cluster.ManagedFieldsEntry{stored, team})
	if len(restore) != 2 || !restore[0].Equal(team) || !restore[1].Equal(argo[0]) {
		t.Fatalf("restore list %+v: want the team's entry and Argo CD's, without the placeholder", restore)
	}
	// A placeholder someone has written to since is not unprune's to take away.
	stored.FieldsV1 = json.RawMessage(`{"f:metadata":{"f:labels":{}}}`)
	if restore := c.ManagedFields.RestoreList([]cluster.ManagedFieldsEntry{stored}); len(restore) != 2 {
		t.Fatalf("restore list %+v: a changed placeholder entry must stay", restore)
	}
}

func TestManagedFieldsChangeRoundTrip(t *testing.T) {
	live := liveManagedFields()
	c := ManagedFieldsRemoval("argocd-controller", live, placeholder)
	if list, known := c.ManagedFields.List(); !known || len(list) != 1 || !list[0].Equal(live[1]) {
		t.Fatalf("the patch must send exactly the other manager's entries, got %+v", list)
	}
	if !c.FoundEntries(live) || c.ExpectsEntries(live) || !c.ExpectsEntries(live[1:]) {
		t.Fatal("a removal is found on the live list and expects the manager's entries gone")
	}
	if got := c.String(); got != "managedFields: remove entries of argocd-controller (Apply, v1)" {
		t.Fatalf("String(): %s", got)
	}
	s := testStore(t)
	j := testJournal(1)
	j.Entries[0].Changes = append(j.Entries[0].Changes, c)
	rec, err := s.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Replan(0, "12", j.Entries[0].Changes); err != nil {
		t.Fatal(err)
	}
	_ = rec.Close()
	raw, _ := os.ReadFile(rec.Path())
	if strings.Contains(string(raw), "team-pipeline") {
		t.Fatalf("the journal holds entries it does not change:\n%s", raw)
	}
	loaded, _, err := s.Load(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	got := loaded.Entries[0].Changes[1]
	if got.Field != FieldManagedFields || got.Key != "argocd-controller" || len(got.ManagedFields.Entries) != 1 || !got.ManagedFields.Entries[0].Equal(live[0]) {
		t.Fatalf("the removed entry must come back exactly, fieldsV1 and time included: %+v", got.ManagedFields)
	}
	inv := got.Inverse()
	if _, known := inv.ManagedFields.List(); known || !inv.ManagedFields.Restore {
		t.Fatal("a loaded change's inverse must not know the list to send: undo builds it from the live object")
	}
	if !inv.FoundEntries(live[1:]) || !inv.ExpectsEntries(live) {
		t.Fatal("a restore expects the entries back, by identity")
	}
	if got := inv.String(); got != "managedFields: restore entries of argocd-controller (Apply, v1)" {
		t.Fatalf("String(): %s", got)
	}
}

func TestManagedFieldsChangeValidation(t *testing.T) {
	c := ManagedFieldsRemoval("argocd-controller", liveManagedFields(), placeholder)
	foreign := c.clone()
	foreign.ManagedFields.Entries[0].Manager = "team-pipeline"
	empty := c.clone()
	empty.ManagedFields.Entries = nil
	withValue := c.clone()
	v := "x"
	withValue.Before = &v
	bare := Change{Field: FieldManagedFields, Key: "argocd-controller"}
	for name, bad := range map[string]Change{"foreign entry": foreign, "no entries": empty, "before": withValue, "no payload": bare} {
		if err := bad.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
}

// A journal written before managedFields changes existed (unprune.dev/v1alpha2 as released) still
// loads, and undo reads its changes as before. The format is unchanged for label and annotation
// changes; a managedFields change is an addition that an older unprune refuses (strict decoding:
// unknown field "managedFields"), so the version stays v1alpha2.
func TestJournalWithoutManagedFieldsStillLoads(t *testing.T) {
	const old = `{
  "apiVersion": "unprune.dev/v1alpha2",
  "kind": "Journal",
  "id": "20261130-120000-detach-guestbook-0102",
  "createdAt": "2026-11-30T12:00:00Z",
  "toolVersion": "v0.9.0",
  "command": "detach",
  "strategy": "untrack",
  "argocd": {"namespace": "argocd", "trackingMethod": "annotation"},
  "clusters": [{"name": "in-cluster", "server": "https://127.0.0.1:6443", "via": "Kubeconfig", "context": "lab"}],
  "entries": [{
    "cluster": "in-cluster",
    "application": {"namespace": "argocd", "name": "guestbook", "instance": "guestbook"},
    "object": {"version": "v1", "resource": "configmaps", "kind": "ConfigMap", "namespace": "team", "name": "settings", "uid": "uid-1", "resourceVersion": "10"},
    "changes": [{"field": "annotation", "key": "argocd.argoproj.io/tracking-id", "before": "guestbook:/ConfigMap:team/settings"}],
    "state": "applied",
    "appliedResourceVersion": "11",
    "updatedAt": "2026-11-30T12:00:01Z"
  }]
}
`
	s := testStore(t)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir, "20261130-120000-detach-guestbook-0102.json")
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	j, _, err := s.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := j.Entries[0].Changes[0]
	if c.ManagedFields != nil || !c.IsRemoval() || *c.Before != "guestbook:/ConfigMap:team/settings" {
		t.Fatalf("old change read differently: %+v", c)
	}
}
