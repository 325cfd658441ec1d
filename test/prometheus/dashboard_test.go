package prometheus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is deploy/grafana's dashboard of the watch.
var dashboard = filepath.Join("..", "..", "deploy", "grafana", "unprune-watch.json")

// grafanaPanel is what of a Grafana panel the test reads; rows may nest panels.
type grafanaPanel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

// dashboardQueries returns every PromQL query of the dashboard by where it is: the panels' targets
// and the selectors of its label_values() variables.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if d.UID == "" {
		t.Errorf("%s: no uid: each import would make another copy", dashboard)
	}
	out := map[string]string{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out["panel "+p.Title+" "+tg.RefID] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(SELECTOR, LABEL)", v.Name, q.Query)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

// grafanaVars are Grafana's variables as a query might hold them, and what stands for each when
// the query is parsed and evaluated: the dashboard's own variables (inside label matchers' strings)
// match anything; $__rate_interval is a duration.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$job", job, "$namespace", ".*")

// servedMetrics returns the names of the metrics a scrape of the watch holds.
func servedMetrics(t *testing.T, scrape string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(scrape)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		out[name] = true
	}
	return out
}

// TestDashboard: every query of the Grafana dashboard parses as PromQL, names only metrics the watch
// serves (the lab's scrapes, testdata/watch-lab.prom and, with the deletion budget,
// testdata/budget-lab.prom), and evaluates without error over that scrape
// as two replicas, with the dashboard's variables at their defaults.
func TestDashboard(t *testing.T) {
	queries := dashboardQueries(t)
	if len(queries) < 10 {
		t.Fatalf("%d queries in %s", len(queries), dashboard)
	}
	// The watch's series, and those the deletion budget adds (its row reads them).
	served := servedMetrics(t, fixture)
	for name := range servedMetrics(t, budgetFixture) {
		served[name] = true
	}
	replicas := []string{"10.0.0.1:8080", "10.0.0.2:8080"}
	script := loadScript(t, fixture, replicas, nil)
	for _, line := range strings.Split(loadScript(t, budgetFixture, replicas, nil), "\n")[1:] {
		if line != "" && !strings.HasPrefix(line, "  up{") {
			script += line + "\n"
		}
	}
	// loadScript loads the unprune_ series without histogram buckets; the dashboard reads the
	// buckets and the process's memory too.
	script += "  unprune_evaluation_duration_seconds_bucket{le=\"0.1\",instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 0+5x20\n" +
		"  unprune_evaluation_duration_seconds_bucket{le=\"+Inf\",instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 0+6x20\n" +
		"  unprune_admission_duration_seconds_bucket{allowed=\"true\",le=\"0.01\",instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 0+5x20\n" +
		"  unprune_admission_duration_seconds_bucket{allowed=\"true\",le=\"+Inf\",instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 0+6x20\n" +
		"  process_resident_memory_bytes{instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 1e8+0x20\n" +
		"  go_memstats_heap_inuse_bytes{instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 5e7+0x20\n"
	p := parser.NewParser(parser.Options{})
	var where []string
	for w := range queries {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		q := grafanaVars.Replace(queries[w])
		expr, err := p.ParseExpr(q)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", w, queries[w], err)
			continue
		}
		var names []string
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				names = append(names, vs.Name)
			}
			return nil
		})
		if len(names) == 0 {
			t.Errorf("%s: %q reads no metric", w, queries[w])
		}
		for _, n := range names {
			if !served[n] {
				t.Errorf("%s: %q reads %q, which the watch does not serve (%s, %s)", w, queries[w], n, fixture, budgetFixture)
			}
		}
		if strings.HasPrefix(w, "panel ") {
			eval(t, script, q)
		}
	}
}
