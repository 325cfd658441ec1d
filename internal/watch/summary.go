package watch

import (
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
)

// Risk label values: lower case, as Prometheus label values usually are; every series exists for
// both, so that a resolved alert sees 0 rather than a vanished series.
const (
	riskHigh   = "high"
	riskNormal = "normal"
)

var riskLabels = []string{riskHigh, riskNormal}

// When label values of the unguarded-candidates metric: a prune deletes the resource at the next
// sync with prune ("now"), or, for an app that prunes automatically, when it is removed from git.
const (
	whenNow            = "now"
	whenRemovedFromGit = "removed_from_git"
)

var whenLabels = []string{whenNow, whenRemovedFromGit}

// cascadeFinalizers make deleting the Application delete its resources: Argo CD's
// isPropagationPolicyFinalizer (pkg/apis/application/v1alpha1/types.go, names in
// application_defaults.go, v2.14 through v3.6).
var cascadeFinalizers = map[string]bool{
	"resources-finalizer.argocd.argoproj.io":            true,
	"resources-finalizer.argocd.argoproj.io/foreground": true,
	"resources-finalizer.argocd.argoproj.io/background": true,
}

// Summary is one app's evaluation: what the metrics show and what events are about.
type Summary struct {
	Namespace, Name, UID, Project, Destination string
	// Pruning counts the rows that require pruning (hooks left out), by risk label.
	Pruning map[string]int
	// Unguarded counts the prune candidates no hard guard stops, by when and risk label.
	Unguarded map[string]map[string]int
	// CascadeHighRisk counts the high-risk resources deleting the app would delete with it: zero
	// when the app has no resources finalizer.
	CascadeHighRisk int
	// HighRiskPruning and UnguardedHighRisk are the rows events are about, by resource key.
	HighRiskPruning   map[string]Finding
	UnguardedHighRisk map[string]Finding
	// LiveErrors counts rows whose live object could not be read.
	LiveErrors int
}

// Finding is one row an event may be about.
type Finding struct {
	Resource argocd.Resource
	Why      string
	Contents *risk.Contents
	Guards   []string
}

// Summarize turns audit's rows for one app into its summary. It is pure: finalizers are the app's
// metadata.finalizers, argocdNamespace marks Argo CD's own objects as high risk.
func Summarize(app argocd.Application, finalizers []string, rows []audit.Row, argocdNamespace string) Summary {
	s := Summary{
		Namespace: app.Namespace, Name: app.Name, UID: app.UID, Project: app.Project, Destination: app.Destination.String(),
		Pruning:           map[string]int{riskHigh: 0, riskNormal: 0},
		Unguarded:         map[string]map[string]int{},
		HighRiskPruning:   map[string]Finding{},
		UnguardedHighRisk: map[string]Finding{},
	}
	for _, w := range whenLabels {
		s.Unguarded[w] = map[string]int{riskHigh: 0, riskNormal: 0}
	}
	for _, row := range rows {
		if row.App.Ref() != app.Ref() {
			continue
		}
		r := riskLabel(row.Risk)
		f := Finding{Resource: row.Resource, Why: row.RiskWhy, Contents: row.Contents}
		for _, g := range row.Guards {
			f.Guards = append(f.Guards, string(g))
		}
		if row.LiveError != "" {
			s.LiveErrors++
		}
		var when string
		switch row.When {
		case audit.Now:
			when = whenNow
		case audit.WhenRemovedFromGit:
			when = whenRemovedFromGit
		default:
			// Whole-app rows (audit's WhenItsAppIsDeleted) are the cascade gauge's business.
			continue
		}
		if when == whenNow {
			s.Pruning[r]++
			if r == riskHigh {
				s.HighRiskPruning[row.Resource.Key()] = f
			}
		}
		if !row.Guarded {
			s.Unguarded[when][r]++
			if r == riskHigh && when == whenNow {
				s.UnguardedHighRisk[row.Resource.Key()] = f
			}
		}
	}
	if cascades(finalizers) {
		s.CascadeHighRisk = cascadeHighRisk(app, argocdNamespace)
	}
	return s
}

func riskLabel(c risk.Class) string {
	if c == risk.High {
		return riskHigh
	}
	return riskNormal
}

func cascades(finalizers []string) bool {
	for _, f := range finalizers {
		if cascadeFinalizers[f] {
			return true
		}
	}
	return false
}

// cascadeHighRisk counts the app's resources of high risk by identity alone (no live read: it is a
// count over every resource of every app). The namespaces the API server refuses to delete are left
// out: a cascade cannot delete them.
func cascadeHighRisk(app argocd.Application, argocdNamespace string) int {
	n := 0
	for _, r := range app.Resources {
		if r.Group == "" && r.Kind == "Namespace" && risk.ImmortalNamespaces[r.Name] {
			continue
		}
		if c, _ := risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, argocdNamespace); c == risk.High {
			n++
		}
	}
	return n
}

// sortedKeys returns a map's keys in order, for events emitted in a stable order.
func sortedKeys(m map[string]Finding) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
