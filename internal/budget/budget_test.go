package budget

import (
	"fmt"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/deletion"
)

func configMaps(n int) []deletion.Object {
	var out []deletion.Object
	for i := range n {
		out = append(out, deletion.Object{Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i), Read: true})
	}
	return out
}

func request(rows []deletion.Object, max int) Request {
	app := argocd.Application{Namespace: "argocd", Name: "shop"}
	return Request{Object: rows[0], UID: "uid-0", App: app, Rows: rows, Limit: Limit{Max: max, Source: "test"},
		Approved: map[string]bool{}, ArgoCDNamespace: "argocd", Approve: ApproveCommand(app)}
}

func TestDecide(t *testing.T) {
	v34, err := argocd.ParseVersion("v3.4.7")
	if err != nil {
		t.Fatal(err)
	}
	guarded := configMaps(8)
	for i := 3; i < 8; i++ {
		guarded[i].Annotations = map[string]string{argocd.AnnotationSyncOptions: "Prune=false"}
	}
	ns := deletion.Object{Kind: "Namespace", Name: "data", Read: true}
	for _, tc := range []struct {
		name    string
		req     func() Request
		allowed bool
		reason  Reason
		deletes int
	}{
		{"within the budget", func() Request { return request(configMaps(3), 5) }, true, "", 3},
		{"at the budget", func() Request { return request(configMaps(5), 5) }, true, "", 5},
		{"over the budget: every deletion of the operation", func() Request { return request(configMaps(8), 5) }, false, ReasonOverBudget, 8},
		{"over the budget, the last of them", func() Request {
			r := request(configMaps(8), 5)
			r.Object = r.Rows[7]
			return r
		}, false, ReasonOverBudget, 8},
		{"rows a guard keeps do not count", func() Request { return request(guarded, 5) }, true, "", 3},
		{"a row read nowhere counts", func() Request {
			rows := configMaps(8)
			for i := 1; i < 8; i++ {
				rows[i].Read = false
			}
			return request(rows, 5)
		}, false, ReasonOverBudget, 8},
		{"the object itself counts when its row is missing", func() Request {
			r := request(configMaps(5), 5)
			r.Object = deletion.Object{Kind: "ConfigMap", Namespace: "shop", Name: "unlisted", Read: true}
			return r
		}, false, ReasonOverBudget, 6},
		{"budget 0 refuses the first deletion", func() Request { return request(configMaps(1), 0) }, false, ReasonOverBudget, 1},
		{"a Namespace within the budget", func() Request { return request([]deletion.Object{ns}, 5) }, false, ReasonHighRisk, 1},
		{"approved: over the budget", func() Request {
			r := request(configMaps(8), 5)
			r.Approved["uid-0"] = true
			return r
		}, true, "", 8},
		{"approved: a Namespace", func() Request {
			r := request([]deletion.Object{ns}, 5)
			r.Approved["uid-0"] = true
			return r
		}, true, "", 1},
		{"another object's approval", func() Request {
			r := request(configMaps(8), 5)
			r.Approved["uid-1"] = true
			return r
		}, false, ReasonOverBudget, 8},
		{"an app-level Prune=false counts: a sync request carrying its own options replaces it", func() Request {
			r := request(configMaps(8), 5)
			r.App.SyncOptions = []string{"Prune=false"}
			r.Version = &v34
			return r
		}, false, ReasonOverBudget, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.req())
			if d.Allowed != tc.allowed || d.Reason != tc.reason || d.Deletes != tc.deletes {
				t.Fatalf("Decide = allowed %v reason %q deletes %d (%s); want %v %q %d", d.Allowed, d.Reason, d.Deletes, d.Message, tc.allowed, tc.reason, tc.deletes)
			}
			if !d.Allowed && !strings.Contains(d.Message, "unprune guard approve shop <Namespace> argocd <Yes>") {
				t.Fatalf("the refusal does not say how to approve: %s", d.Message)
			}
		})
	}
}

func TestDecideCascade(t *testing.T) {
	r := request(configMaps(8), 5)
	r.App.Deleting = true
	d := Decide(r)
	if d.Allowed || d.Event != deletion.Cascade || !strings.Contains(d.Message, "this deletion of app argocd/shop deletes 8 objects") {
		t.Fatalf("Decide = %+v", d)
	}
}

func TestLimitOf(t *testing.T) {
	for _, tc := range []struct {
		app, project map[string]string
		want         int
		err          bool
	}{
		{nil, nil, 7, false},
		{map[string]string{AnnotationBudget: "3"}, map[string]string{AnnotationBudget: "9"}, 3, false},
		{nil, map[string]string{AnnotationBudget: "9"}, 9, false},
		{map[string]string{AnnotationBudget: "0"}, nil, 0, false},
		{map[string]string{AnnotationBudget: "many"}, nil, 0, true},
		{map[string]string{AnnotationBudget: "-2"}, nil, 0, true},
	} {
		l, err := LimitOf(tc.app, tc.project, "default", 7)
		if l.Max != tc.want || (err != nil) != tc.err {
			t.Errorf("LimitOf(%v, %v) = %+v, %v; want %d, error %v", tc.app, tc.project, l, err, tc.want, tc.err)
		}
	}
}

func TestApproved(t *testing.T) {
	got := Approved(map[string]string{AnnotationApproved: " a, b,,c "})
	if len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Fatalf("Approved = %v", got)
	}
	if FormatApproved([]string{"a", "b"}) != "a,b" {
		t.Fatal("FormatApproved")
	}
}
