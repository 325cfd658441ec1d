package budget

import (
	"strings"
	"testing"
	"time"
)

func TestDecideAppSet(t *testing.T) {
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	asked := func(ago time.Duration, names ...string) string {
		var a []Asked
		for _, n := range names {
			a = append(a, Asked{Name: n, UID: "uid-" + n, At: now.Add(-ago)})
		}
		return FormatAsked(a)
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		app         string
		allowed     bool
		reason      Reason
		deletes     int
		record      []string // names the written record holds; nil: nothing written
		message     string
	}{
		{name: "first ask is recorded and refused", app: "a", reason: ReasonCounting, deletes: 1, record: []string{"a"},
			message: "judged on the controller's next attempt"},
		{name: "asked again within the budget", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b")}, app: "a",
			allowed: true, deletes: 2, message: "within its budget of 2"},
		{name: "three asked, budget 2: each refused", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b", "c")}, app: "b",
			reason: ReasonOverBudget, deletes: 3, message: "unprune guard approve set <ApplicationSet> <Namespace> argocd <Yes>"},
		{name: "a new ask beside others counts them all", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b")}, app: "c",
			reason: ReasonCounting, deletes: 3, record: []string{"a", "b", "c"}},
		{name: "approved passes over the budget", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b", "c"),
			AnnotationApproved: "uid-a,uid-b,uid-c"}, app: "c", allowed: true, message: "approved"},
		{name: "approved asks are not counted", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b", "c", "d"),
			AnnotationApproved: "uid-a,uid-b"}, app: "d", allowed: true, deletes: 2},
		{name: "an ask older than the window is counted again from the start",
			annotations: map[string]string{AnnotationAsked: asked(AppSetWindow, "a", "b", "c")}, app: "a",
			reason: ReasonCounting, deletes: 1, record: []string{"a"}},
		// The API server asks again about one DELETE when the object changed meanwhile; the ask the
		// first call recorded is not judged yet (the budget would let it through: 1 of 2).
		{name: "asked a moment ago: refused alike, nothing written", annotations: map[string]string{AnnotationAsked: asked(AppSetSettle/10, "a")}, app: "a",
			reason: ReasonCounting, message: "is being counted"},
		{name: "counted by Settled: judged at once", annotations: map[string]string{AnnotationAsked: FormatAsked([]Asked{{Name: "a", UID: "uid-a", At: now, Counted: true}})},
			app: "a", allowed: true, deletes: 1},
		{name: "an ask kept asked is refreshed", annotations: map[string]string{AnnotationAsked: asked(AppSetWindow/2, "a")}, app: "a",
			allowed: true, deletes: 1, record: []string{"a"}},
		{name: "the set's own budget", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a", "b"), AnnotationBudget: "1"}, app: "a",
			reason: ReasonOverBudget, deletes: 2, message: "the ApplicationSet's unprune.dev/deletion-budget"},
		{name: "a budget that is not a number reads as 0", annotations: map[string]string{AnnotationAsked: asked(time.Second, "a"), AnnotationBudget: "many"},
			app: "a", reason: ReasonOverBudget, deletes: 1, message: "not a whole number"},
		{name: "an unreadable record counts from the start", annotations: map[string]string{AnnotationAsked: "{"}, app: "a",
			reason: ReasonCounting, deletes: 1, record: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideAppSet(AppSetRequest{Set: "argocd/set", Annotations: tc.annotations, App: tc.app, UID: "uid-" + tc.app, Default: 2, Now: now})
			if d.Allowed != tc.allowed || d.Reason != tc.reason {
				t.Fatalf("allowed %v reason %q, want %v %q: %s", d.Allowed, d.Reason, tc.allowed, tc.reason, d.Message)
			}
			if tc.deletes != 0 && d.Deletes != tc.deletes {
				t.Errorf("deletes %d, want %d: %s", d.Deletes, tc.deletes, d.Message)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q: no %q", d.Message, tc.message)
			}
			switch {
			case tc.record == nil && d.Record != nil:
				t.Errorf("record written: %s", *d.Record)
			case tc.record != nil && d.Record == nil:
				t.Errorf("no record written, want %v", tc.record)
			case tc.record != nil:
				got := Fresh(ParseAsked(map[string]string{AnnotationAsked: *d.Record}), now)
				var names []string
				for _, a := range got {
					names = append(names, a.Name)
					if a.Name == tc.app && !a.At.Equal(now) {
						t.Errorf("%s asked at %v, want now", a.Name, a.At)
					}
				}
				if strings.Join(names, ",") != strings.Join(tc.record, ",") {
					t.Errorf("record %v, want %v", names, tc.record)
				}
			}
		})
	}
}

// TestSettled: after AppSetSettle the webhook counts the asks, and writes only when that changes
// the record (a write makes the set's controller reconcile).
func TestSettled(t *testing.T) {
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	young := Asked{Name: "a", UID: "uid-a", At: now.Add(-AppSetSettle / 2)}
	old := Asked{Name: "b", UID: "uid-b", At: now.Add(-AppSetSettle)}
	rec := Settled(map[string]string{AnnotationAsked: FormatAsked([]Asked{young, old})}, now)
	if rec == nil {
		t.Fatal("nothing counted")
	}
	got := ParseAsked(map[string]string{AnnotationAsked: *rec})
	if len(got) != 2 || got[0].Counted || !got[1].Counted {
		t.Fatalf("record %s: want b counted, a not yet", *rec)
	}
	if again := Settled(map[string]string{AnnotationAsked: *rec}, now); again != nil {
		t.Fatalf("counted again: %s", *again)
	}
}
