package deletion

import (
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/guard"
)

// TestTogether: what an object's own guards are worth when the same event deletes its Namespace.
func TestTogether(t *testing.T) {
	namespace := func(name string, annotations map[string]string) Object {
		row := argocd.Resource{Version: "v1", Kind: "Namespace", Name: name}
		return Object{Kind: "Namespace", Name: name, Annotations: annotations, Read: true, Row: &row}
	}
	in := func(ns string, annotations map[string]string) Object {
		o := cm(annotations)
		o.Namespace, o.Row.Namespace = ns, ns
		return o
	}
	ctx := Context{Version: v3_6}
	tests := []struct {
		name    string
		objects []Object
		event   Event
		// policyOn marks the object the installed admission policy covers (by index).
		policyOn int
		want     Outcome
		guarded  bool
		with     string
		note     string
	}{
		{name: "Prune=false inside a pruned Namespace", event: Prune, policyOn: -1,
			objects: []Object{namespace("team", nil), in("team", syncOptions("Prune=false"))},
			want:    Deleted, with: "team", note: "deleted with Namespace team, which the same prune deletes"},
		{name: "Prune=confirm inside a pruned Namespace", event: Prune, policyOn: -1,
			objects: []Object{namespace("team", nil), in("team", syncOptions("Prune=confirm"))},
			want:    Deleted, with: "team"},
		{name: "Delete=false and helm keep inside a cascaded Namespace", event: Cascade, policyOn: -1,
			objects: []Object{in("team", map[string]string{argocd.AnnotationSyncOptions: "Delete=false", argocd.AnnotationHelmResourcePolicy: "keep"}), namespace("team", nil)},
			want:    Deleted, with: "team", note: "which the same cascade deletes"},
		{name: "the Namespace is kept", event: Prune, policyOn: -1,
			objects: []Object{namespace("team", syncOptions("Prune=false")), in("team", syncOptions("Prune=false"))},
			want:    Kept, guarded: true},
		{name: "another Namespace goes", event: Prune, policyOn: -1,
			objects: []Object{namespace("other", nil), in("team", syncOptions("Prune=false"))},
			want:    Kept, guarded: true},
		{name: "the Namespace waits for approval", event: Prune, policyOn: -1,
			objects: []Object{namespace("team", syncOptions("Prune=confirm")), in("team", syncOptions("Prune=false"))},
			want:    Waits, guarded: true, with: "team", note: "waits with Namespace team"},
		{name: "unprune's admission policy refuses the namespace controller too", event: Prune, policyOn: 1,
			objects: []Object{namespace("team", nil), in("team", nil)},
			want:    Kept, guarded: true, note: "the Namespace stays Terminating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdicts := make([]Verdict, len(tt.objects))
			for i, o := range tt.objects {
				verdicts[i] = Judge(o, tt.event, ctx)
				if i == tt.policyOn {
					// What judgeServer makes of an object the installed policy covers.
					verdicts[i].Outcome, verdicts[i].Guarded = Kept, true
					verdicts[i].Guards = append(verdicts[i].Guards, guard.PolicyGuard)
				}
			}
			before := slices.Clone(verdicts[len(verdicts)-1].Notes)
			got := Together(tt.objects, verdicts)
			obj := 1
			if tt.objects[0].Kind != "Namespace" {
				obj = 0
			}
			v := got[obj]
			if v.Outcome != tt.want || v.Guarded != tt.guarded || v.WithNamespace != tt.with {
				t.Errorf("outcome %s guarded %t with %q, want %s %t %q (notes %q)", v.Outcome, v.Guarded, v.WithNamespace, tt.want, tt.guarded, tt.with, v.Notes)
			}
			if tt.note != "" && !strings.Contains(strings.Join(v.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", v.Notes, tt.note)
			}
			if v.Outcome == Deleted && len(v.Guards) == 0 {
				t.Errorf("the object's own guards were dropped: %+v", v)
			}
			if !slices.Equal(verdicts[len(verdicts)-1].Notes, before) {
				t.Error("Together changed its input")
			}
		})
	}
}

// TestTogetherKeepsOtherOutcomes: only kept and waiting objects change; the Namespace's own verdict
// and the verdicts of objects deleted anyway stay as they were.
func TestTogetherKeepsOtherOutcomes(t *testing.T) {
	ns := Object{Kind: "Namespace", Name: "team", Read: true, Row: &argocd.Resource{Version: "v1", Kind: "Namespace", Name: "team"}}
	plain := cm(nil)
	plain.Namespace = "team"
	objects := []Object{ns, plain}
	verdicts := []Verdict{Judge(ns, Prune, Context{}), Judge(plain, Prune, Context{})}
	got := Together(objects, verdicts)
	for i := range got {
		if got[i].Outcome != verdicts[i].Outcome || got[i].WithNamespace != "" || len(got[i].Notes) != len(verdicts[i].Notes) {
			t.Errorf("%s: %+v, was %+v", objects[i].Kind, got[i], verdicts[i])
		}
	}
}
