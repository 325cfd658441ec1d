package exposition

import (
	"fmt"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
)

func TestMetricsCardinalityAndDeletion(t *testing.T) {
	m := NewMetrics(nil)
	rows := func(app argocd.Application, n int) []audit.Row {
		var out []audit.Row
		for i := 0; i < n; i++ {
			out = append(out, row(app, ns(fmt.Sprintf("ns-%d", i)), audit.Now, risk.High, i%2 == 0), row(app, cm(fmt.Sprintf("cm-%d", i)), audit.Now, risk.Normal, false))
		}
		return out
	}
	for i := 0; i < 50; i++ {
		app := testApp()
		app.Name = fmt.Sprintf("app-%d", i)
		// However many rows an app has, it adds the same series.
		m.Set(app.Ref(), Summarize(app, rows(app, i*10), nil), time.Millisecond)
	}
	if got := countAppSeries(t, m); got != 50*seriesPerApp {
		t.Fatalf("%d per-app series for 50 apps, want %d", got, 50*seriesPerApp)
	}
	// Project change: the old series go, the count stays.
	app := testApp()
	app.Name, app.Project = "app-1", "other"
	m.Set(app.Ref(), Summarize(app, nil, nil), time.Millisecond)
	if got := countAppSeries(t, m); got != 50*seriesPerApp {
		t.Fatalf("%d series after a project change, want %d", got, 50*seriesPerApp)
	}
	m.Delete("argocd/app-2")
	if got := countAppSeries(t, m); got != 49*seriesPerApp {
		t.Fatalf("%d series after deleting an app, want %d", got, 49*seriesPerApp)
	}
	value := expositiontest.Value(t, m, metricPruning, map[string]string{"application": "app-3", "risk": "high"})
	if value != 30 {
		t.Errorf("app-3 high = %v, want 30", value)
	}
	if v := expositiontest.Value(t, m, metricUnguarded, map[string]string{"application": "app-3", "risk": "high", "when": "now"}); v != 15 {
		t.Errorf("app-3 unguarded high = %v, want 15", v)
	}
	if v := expositiontest.Value(t, m, metricAutoPrune, map[string]string{"application": "app-3"}); v != 0 {
		t.Errorf("app-3 auto prune = %v without automation, want 0", v)
	}
	// Automated sync that prunes sets the gauge; automation without prune, or switched off, does not.
	for _, c := range []struct {
		automated, prune bool
		want             float64
	}{{true, true, 1}, {true, false, 0}, {false, true, 0}} {
		app := testApp()
		app.Name, app.Automated, app.AutoPrune = "app-3", c.automated, c.prune
		m.Set(app.Ref(), Summarize(app, nil, nil), time.Millisecond)
		if v := expositiontest.Value(t, m, metricAutoPrune, map[string]string{"application": "app-3"}); v != c.want {
			t.Errorf("automated %v, prune %v: auto prune = %v, want %v", c.automated, c.prune, v, c.want)
		}
	}
}

// appSeries counts the series carrying an application label.
func countAppSeries(t *testing.T, m *Metrics) int {
	t.Helper()
	families := expositiontest.Scrape(t, m)
	n := 0
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "application" {
					n++
				}
			}
		}
	}
	return n
}
