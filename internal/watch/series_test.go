package watch

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestAppCollectorExposesWhatGaugeVecsDid: the per-app series come out exactly as GaugeVecs with the
// same names, help and labels expose them — after a change of values, a change of an app's project
// (its old series gone) and an app deleted.
func TestAppCollectorExposesWhatGaugeVecsDid(t *testing.T) {
	m := NewMetrics(nil)
	vecs := prometheus.NewRegistry()
	pruning := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPruning, Help: helpPruning}, []string{"namespace", "application", "project", "destination", "risk"})
	unguarded := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnguarded, Help: helpUnguarded}, []string{"namespace", "application", "risk", "when"})
	unknown := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnknown, Help: helpUnknown}, []string{"namespace", "application", "risk"})
	cascade := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricCascade, Help: helpCascade}, []string{"namespace", "application"})
	vecs.MustRegister(pruning, unguarded, unknown, cascade)
	setVecs := func(s Summary) {
		app := prometheus.Labels{"namespace": s.Namespace, "application": s.Name}
		for _, v := range []*prometheus.GaugeVec{pruning, unguarded, unknown, cascade} {
			v.DeletePartialMatch(app)
		}
		for _, r := range riskLabels {
			pruning.WithLabelValues(s.Namespace, s.Name, s.Project, s.Destination, r).Set(float64(s.Pruning[r]))
			for _, w := range whenLabels {
				unguarded.WithLabelValues(s.Namespace, s.Name, r, w).Set(float64(s.Unguarded[w][r]))
			}
			unknown.WithLabelValues(s.Namespace, s.Name, r).Set(float64(s.Unknown[r]))
		}
		cascade.WithLabelValues(s.Namespace, s.Name).Set(float64(s.CascadeHighRisk))
	}
	summary := func(ns, name, project string, n int) Summary {
		return Summary{Namespace: ns, Name: name, Project: project, Destination: "in-cluster",
			Pruning: map[string]int{riskHigh: n, riskNormal: 2 * n}, Unknown: map[string]int{riskHigh: n + 1},
			Unguarded:       map[string]map[string]int{whenNow: {riskHigh: n}, whenAppDeleted: {riskNormal: 3}},
			CascadeHighRisk: n + 2}
	}
	steps := [][]Summary{
		{summary("team-a", "web", "a", 1), summary("team-b", "web", "b", 2), summary("argocd", "db", "default", 0)},
		{summary("team-a", "web", "a", 5)},
		{summary("team-b", "web", "moved", 7)},
	}
	for i, step := range steps {
		for _, s := range step {
			m.Set(s.Namespace+"/"+s.Name, s, 0)
			setVecs(s)
		}
		if i == len(steps)-1 {
			m.Delete("argocd/db")
			for _, v := range []*prometheus.GaugeVec{pruning, unguarded, unknown, cascade} {
				v.DeletePartialMatch(prometheus.Labels{"namespace": "argocd", "application": "db"})
			}
		}
		got, want := exposition(t, m.Registry), exposition(t, vecs)
		if got != want {
			t.Fatalf("step %d:\n got:\n%s\nwant:\n%s", i, got, want)
		}
	}
}

// exposition is the text format of the per-app families a registry gathers.
func exposition(t *testing.T, r *prometheus.Registry) string {
	t.Helper()
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		switch f.GetName() {
		case metricPruning, metricUnguarded, metricUnknown, metricCascade:
			if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}
