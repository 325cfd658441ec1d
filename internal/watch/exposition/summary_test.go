package exposition

import (
	"fmt"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
)

func ns(name string) argocd.Resource {
	return argocd.Resource{Version: "v1", Kind: "Namespace", Name: name, RequiresPruning: true}
}

func cm(name string) argocd.Resource {
	return argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: name, RequiresPruning: true}
}

func testApp(resources ...argocd.Resource) argocd.Application {
	return argocd.Application{Namespace: "argocd", Name: "app", UID: "uid-1", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"}, Resources: resources}
}

func row(app argocd.Application, r argocd.Resource, when audit.When, c risk.Class, guarded bool) audit.Row {
	return audit.Row{App: app, Resource: r, When: when, Risk: c, Guarded: guarded, RiskWhy: "why",
		Contents: &risk.Contents{Objects: 3, CustomResources: -1}}
}

func TestSummarize(t *testing.T) {
	app := testApp(ns("a"), ns("b"), cm("c"), ns("kube-system"))
	zero := func() map[string]map[string]int {
		return map[string]map[string]int{"now": {"high": 0, "normal": 0}, "removed_from_git": {"high": 0, "normal": 0}, "app_deleted": {"high": 0, "normal": 0}}
	}
	with := func(when, r string, n int) map[string]map[string]int {
		m := zero()
		m[when][r] = n
		return m
	}
	other := testApp()
	other.Name = "other"
	self := argocd.Resource{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Namespace: "argocd", Name: "app"}
	cases := []struct {
		name       string
		rows       []audit.Row
		cascade    []argocd.Resource
		pruning    map[string]int
		unguarded  map[string]map[string]int
		highKeys   int
		unguardedH int
	}{
		{name: "nothing", pruning: map[string]int{"high": 0, "normal": 0}, unguarded: zero()},
		{name: "one unguarded high, one guarded high, one normal",
			rows: []audit.Row{
				row(app, ns("a"), audit.Now, risk.High, false),
				row(app, ns("b"), audit.Now, risk.High, true),
				row(app, cm("c"), audit.Now, risk.Normal, false),
			},
			pruning: map[string]int{"high": 2, "normal": 1},
			unguarded: func() map[string]map[string]int {
				m := with("now", "high", 1)
				m["now"]["normal"] = 1
				return m
			}(),
			highKeys: 2, unguardedH: 1},
		{name: "auto-prune rows count as unguarded when removed from git, not as requiring pruning",
			rows:    []audit.Row{row(app, ns("a"), audit.WhenRemovedFromGit, risk.High, false)},
			pruning: map[string]int{"high": 0, "normal": 0}, unguarded: with("removed_from_git", "high", 1)},
		{name: "the app's own row, deletable by its parent, counts under app_deleted only",
			rows:    []audit.Row{row(app, self, audit.WhenItsAppIsDeleted, risk.High, false)},
			pruning: map[string]int{"high": 0, "normal": 0}, unguarded: with("app_deleted", "high", 1)},
		{name: "a guarded whole-app row counts nowhere",
			rows:    []audit.Row{row(app, self, audit.WhenItsAppIsDeleted, risk.High, true)},
			pruning: map[string]int{"high": 0, "normal": 0}, unguarded: zero()},
		{name: "another app's rows are not this app's",
			rows:    []audit.Row{row(other, ns("a"), audit.Now, risk.High, false)},
			pruning: map[string]int{"high": 0, "normal": 0}, unguarded: zero()},
		{name: "the cascade is counted as given", cascade: []argocd.Resource{ns("a"), ns("b")},
			pruning: map[string]int{"high": 0, "normal": 0}, unguarded: zero()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Summarize(app, c.rows, c.cascade)
			if fmt.Sprint(s.Pruning) != fmt.Sprint(c.pruning) || fmt.Sprint(s.Unguarded) != fmt.Sprint(c.unguarded) {
				t.Errorf("pruning %v unguarded %v; want %v %v", s.Pruning, s.Unguarded, c.pruning, c.unguarded)
			}
			if s.CascadeHighRisk != len(c.cascade) || len(s.HighRiskPruning) != c.highKeys || len(s.UnguardedHighRisk) != c.unguardedH {
				t.Errorf("cascade %d, high %d, unguarded high %d; want %d %d %d", s.CascadeHighRisk, len(s.HighRiskPruning), len(s.UnguardedHighRisk), len(c.cascade), c.highKeys, c.unguardedH)
			}
			if s.Destination != argocd.InClusterServer || s.Project != "default" {
				t.Errorf("labels: %+v", s)
			}
		})
	}
}
