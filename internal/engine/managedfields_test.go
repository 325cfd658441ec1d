package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

const cmID = "guestbook:/ConfigMap:team/settings"

var (
	argoApply = cluster.ManagedFieldsEntry{Manager: plan.ArgoCDFieldManager, Operation: "Apply", APIVersion: "v1", Time: "2026-11-30T11:00:00Z",
		FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:data":{"f:color":{}},"f:metadata":{"f:annotations":{"f:argocd.argoproj.io/tracking-id":{}}}}`)}
	teamUpdate = cluster.ManagedFieldsEntry{Manager: "team-labeler", Operation: "Update", APIVersion: "v1", Time: "2026-11-30T11:30:00Z",
		FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:metadata":{"f:labels":{".":{},"f:team":{}}}}`)}
)

// detachPlan plans the release of a ConfigMap Argo CD applied server-side, with annotation tracking.
func detachPlan(t *testing.T, managed ...cluster.ManagedFieldsEntry) plan.Plan {
	t.Helper()
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v361)
	p := plan.Build(s, plan.Target{Instance: "guestbook", RequiresPruning: true,
		Ref:         argocd.ObjectRef{Kind: "ConfigMap", Namespace: "team", Name: "settings"},
		Annotations: map[string]string{argocd.AnnotationTrackingID: cmID}, ManagedFields: managed}, plan.Options{Strategy: plan.StrategyUntrack})
	if p.Refusal != nil || len(p.Changes) != 2 {
		t.Fatalf("plan: %+v", p)
	}
	return p
}

// The patch removes the tracking and replaces managedFields with every other entry, as read, in one
// request conditional on the resourceVersion.
func TestMergePatchReleasesFieldOwnership(t *testing.T) {
	p := detachPlan(t, argoApply, teamUpdate)
	body, err := MergePatch("42", p.Changes)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			ResourceVersion string                       `json:"resourceVersion"`
			Annotations     map[string]*string           `json:"annotations"`
			ManagedFields   []cluster.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	m := got.Metadata
	if v, ok := m.Annotations[argocd.AnnotationTrackingID]; m.ResourceVersion != "42" || !ok || v != nil {
		t.Fatalf("patch %s: want the tracking-id removed at resourceVersion 42", body)
	}
	if len(m.ManagedFields) != 1 || !m.ManagedFields[0].Equal(teamUpdate) {
		t.Fatalf("patch %s: want exactly the team's entry", body)
	}
	if !strings.Contains(string(body), `"time":"2026-11-30T11:30:00Z"`) {
		t.Fatalf("patch %s: the kept entry's time must be sent as read", body)
	}

	// The only manager: the placeholder is sent, never an empty list (which the API server ignores).
	body, err = MergePatch("42", detachPlan(t, argoApply).Changes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"managedFields":[{"manager":"unprune","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{}}}]`) {
		t.Fatalf("patch %s: want the placeholder alone", body)
	}
}

func TestMismatchesSeesArgoCDStillOwning(t *testing.T) {
	p := detachPlan(t, argoApply, teamUpdate)
	after := &cluster.Object{Annotations: map[string]string{}, ManagedFields: []cluster.ManagedFieldsEntry{teamUpdate}}
	if bad := Mismatches(after, p.Changes); len(bad) != 0 {
		t.Fatalf("mismatches on the expected result: %v", bad)
	}
	after.ManagedFields = append(after.ManagedFields, argoApply)
	if bad := Mismatches(after, p.Changes); len(bad) != 1 || !strings.Contains(bad[0], "managedFields of argocd-controller") {
		t.Fatalf("mismatches %v: want the managedFields named", bad)
	}
}

// A change loaded from a journal does not know the list to send: it is built from the live object
// at undo time, never guessed.
func TestMergePatchRefusesAnUnknownList(t *testing.T) {
	c := detachPlan(t, argoApply).Changes[1]
	b, _ := json.Marshal(c)
	var loaded journal.Change
	if err := json.Unmarshal(b, &loaded); err != nil {
		t.Fatal(err)
	}
	if _, err := MergePatch("42", []journal.Change{loaded.Inverse()}); err == nil {
		t.Fatal("a patch from an unknown managedFields list")
	}
}

func TestUndoGivesOwnershipBack(t *testing.T) {
	p := detachPlan(t, argoApply, teamUpdate)
	j := journal.New("detach", "untrack", "test")
	j.ArgoCD = &journal.ArgoCDRef{Namespace: "argocd", TrackingMethod: "annotation"}
	entry := journal.Entry{Application: &journal.AppRef{Namespace: "argocd", Name: "guestbook", Instance: "guestbook"},
		Object:  journal.ObjectRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "team", Name: "settings", UID: "u1"},
		Changes: p.Changes, State: journal.StateApplied}
	released := &cluster.Object{UID: "u1", Annotations: map[string]string{}, ManagedFields: []cluster.ManagedFieldsEntry{teamUpdate}}

	u := undoPlan(j, entry, released)
	if u.Refusal != nil || len(u.Changes) != 2 || len(u.Notes) != 0 {
		t.Fatalf("undo plan: %+v", u)
	}
	body, err := MergePatch("50", u.Changes)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			ManagedFields []cluster.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(body, &got)
	if mf := got.Metadata.ManagedFields; len(mf) != 2 || !mf[0].Equal(teamUpdate) || !mf[1].Equal(argoApply) {
		t.Fatalf("undo patch %s: want the team's entry and Argo CD's, as journaled", body)
	}

	// Argo CD applied the object again meanwhile: its entries are there, and are not overwritten.
	reapplied := &cluster.Object{UID: "u1", Annotations: map[string]string{argocd.AnnotationTrackingID: cmID},
		ManagedFields: []cluster.ManagedFieldsEntry{teamUpdate, {Manager: plan.ArgoCDFieldManager, Operation: "Apply", APIVersion: "v1", Time: "2026-12-01T09:00:00Z"}}}
	if u := undoPlan(j, entry, reapplied); hasManagedFields(u.Changes) || len(u.Notes) != 1 {
		t.Fatalf("undo over a new apply: %+v", u)
	}

	// The tracking was set to something else since: it is not restored, and neither is ownership.
	retracked := &cluster.Object{UID: "u1", Annotations: map[string]string{argocd.AnnotationTrackingID: "other:/ConfigMap:team/settings"},
		ManagedFields: []cluster.ManagedFieldsEntry{teamUpdate}}
	if u := undoPlan(j, entry, retracked); hasManagedFields(u.Changes) || u.Refusal == nil {
		t.Fatalf("undo with the tracking changed since: %+v", u)
	}
}

func hasManagedFields(cs []journal.Change) bool {
	for _, c := range cs {
		if c.ManagedFields != nil {
			return true
		}
	}
	return false
}

// The whole flow on the fake: detach journals Argo CD's entries and leaves the others, undo puts
// them back and marks the entry undone.
func TestDetachAndUndoManagedFields(t *testing.T) {
	w := newWorld(t, "team-a")
	ref := w.refs["team-a"]
	nsApply := argoApply
	nsApply.FieldsV1 = json.RawMessage(`{"f:metadata":{"f:labels":{"f:app.kubernetes.io/instance":{}}}}`)
	w.cluster.Update(ref, func(o *cluster.Object) { o.ManagedFields = []cluster.ManagedFieldsEntry{nsApply, teamUpdate} })
	run := w.detach(DetachRequest{All: true})
	e := w.engine()
	runDone, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(run.Planned, runDone.Applied)["team-a"]; got != OutcomeApplied {
		t.Fatalf("detach: %s %s", got, run.Items[0].Message)
	}
	if mf := w.cluster.Object(ref).ManagedFields; len(mf) != 1 || !mf[0].Equal(teamUpdate) {
		t.Fatalf("after detach: %+v", mf)
	}
	rec, err := w.store.Open(runDone.Journal)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.withUndo(w, w.argoOf).PlanUndo(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	restored := w.execute(e, u, DryRunNone)
	if got := outcomes(u.Planned, restored.Applied)["team-a"]; got != OutcomeRestored {
		t.Fatalf("undo: %s %s", got, restored.Items[0].Message)
	}
	if mf := w.cluster.Object(ref).ManagedFields; len(mf) != 2 || !mf[0].Equal(teamUpdate) || !mf[1].Equal(nsApply) {
		t.Fatalf("after undo: %+v", mf)
	}
	j, _, _ := w.store.Load(runDone.Journal)
	if j.Entries[0].State != journal.StateUndone {
		t.Fatalf("journal state %s", j.Entries[0].State)
	}
}
