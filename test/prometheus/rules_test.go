package prometheus

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"go.yaml.in/yaml/v3"
)

// fixture is what `unprune watch` served in the lab's TestWatch: two apps whose Namespace requires
// pruning, one guarded by unprune's admission policy, and an app of apps' child whose deletion would
// take its Namespace. It lets the alerts be tested without the lab; `make test-lab` tests them on the
// scrape of that very run as well (UNPRUNE_WATCH_SCRAPE), and rewriting the fixture is copying it.
const fixture = "testdata/watch-lab.prom"

// budgetFixture is what the deletion budget's watch served in the lab's TestDeletionBudget: refusals
// of every reason (an app over its budget, a high-risk Namespace, an ApplicationSet over its
// budget) and the webhook's latency; `make test-lab` checks it on that run's scrape as well
// (UNPRUNE_BUDGET_SCRAPE).
const budgetFixture = "testdata/budget-lab.prom"

var wantAlerts = []string{"UnpruneHighRiskRequiresPruning", "UnpruneUnguardedHighRiskAutoPrune", "UnpruneUnguardedHighRiskPrune",
	"UnpruneUnguardedHighRiskCascade", "UnpruneWatchDown", "UnpruneWatchBlind", "UnpruneHighRiskGuardsUnknown",
	"UnpruneDeletionsRefused", "UnpruneDeletionBudgetUnreachable"}

// job is the scrape job of the watch's targets: the Service's app.kubernetes.io/name label, which the
// ServiceMonitor's jobLabel makes the job (test/deploytest checks it survives a namePrefix).
const job = "unprune-watch"

// scrapes are the scrapes the alerts are evaluated on, by name: the fixture, and the lab's of this
// run when UNPRUNE_WATCH_SCRAPE names it (then it must exist: TestWatch wrote it).
func scrapes(t *testing.T) map[string]string {
	return scrapesOf(t, fixture, "UNPRUNE_WATCH_SCRAPE", "TestWatch")
}

// budgetScrapes are the deletion budget's scrapes, the fixture and the lab's of this run.
func budgetScrapes(t *testing.T) map[string]string {
	return scrapesOf(t, budgetFixture, "UNPRUNE_BUDGET_SCRAPE", "TestDeletionBudget")
}

func scrapesOf(t *testing.T, fixture, env, test string) map[string]string {
	t.Helper()
	out := map[string]string{"fixture": fixture}
	if lab := os.Getenv(env); lab != "" {
		if _, err := os.Stat(lab); err != nil {
			t.Fatalf("%s: %v: the lab's %s did not save its scrape", env, err, test)
		}
		out["lab"] = lab
	}
	return out
}

// shape is what of a scrape the alerts and dashboards depend on: each unprune_ series' name, label
// names, and the values of the labels that enumerate (risk, when, stage).
func shape(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "unprune_") {
			continue
		}
		name, rest, _ := strings.Cut(line[:strings.LastIndexByte(line, ' ')], "{")
		var labels []string
		for _, pair := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			k, v, _ := strings.Cut(pair, "=")
			if k == "risk" || k == "when" || k == "stage" {
				k += "=" + v
			}
			if k != "" {
				labels = append(labels, k)
			}
		}
		sort.Strings(labels)
		seen[name+"{"+strings.Join(labels, ",")+"}"] = true
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ruleGroups returns deploy/prometheus's PrometheusRule's groups as a Prometheus rules file.
func ruleGroups(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Groups []any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil || doc.Kind != "PrometheusRule" {
		t.Fatalf("not a PrometheusRule: %v", err)
	}
	groups, err := yaml.Marshal(map[string]any{"groups": doc.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

// rules parses deploy/prometheus's PrometheusRule's groups with Prometheus's rule parser.
func rules(t *testing.T) map[string]rulefmt.Rule {
	t.Helper()
	groups := ruleGroups(t)
	parsed, errs := rulefmt.Parse(groups, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.Default())
	if len(errs) > 0 {
		t.Fatalf("rules do not parse: %v", errs)
	}
	out := map[string]rulefmt.Rule{}
	for _, g := range parsed.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r
		}
	}
	return out
}

// TestRulesParse: each alert parses, says in its description which unprune or kubectl command to
// run, links its runbook in docs/watch.md with runbook_url (the annotation kube-prometheus's
// alerts use, which Alertmanager's and Grafana's integrations show as a link), and has the severity
// and for: docs/watch.md's table says.
func TestRulesParse(t *testing.T) {
	rs := rules(t)
	if len(rs) != len(wantAlerts) {
		t.Errorf("%d alerts, want %v", len(rs), wantAlerts)
	}
	anchors := docAnchors(t, filepath.Join("..", "..", "docs", "watch.md"))
	docRaw, err := os.ReadFile(filepath.Join("..", "..", "docs", "watch.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(docRaw)
	for _, name := range wantAlerts {
		r, ok := rs[name]
		if !ok {
			t.Errorf("no alert %s", name)
			continue
		}
		if d := r.Annotations["description"]; !strings.Contains(d, "`unprune ") && !strings.Contains(d, "`kubectl ") {
			t.Errorf("%s: description %q names no command", name, d)
		}
		if _, ok := r.Annotations["runbook"]; ok {
			t.Errorf("%s: a runbook annotation; the convention is runbook_url", name)
		}
		url := r.Annotations["runbook_url"]
		if anchor, ok := strings.CutPrefix(url, runbookBase); !ok || anchor != strings.ToLower(name) || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q: want %s%s, a heading of docs/watch.md", name, url, runbookBase, strings.ToLower(name))
		}
		if row := fmt.Sprintf("| `%s` | %s, %s |", name, r.Labels["severity"], r.For); !strings.Contains(doc, row) {
			t.Errorf("%s: docs/watch.md's table of alerts has no row %q", name, row)
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s: no severity", name)
		}
	}
}

// runbookBase is where the runbooks are read: docs/watch.md as GitHub renders it.
const runbookBase = "https://github.com/unprune/unprune/blob/main/docs/watch.md#"

// docAnchors returns the anchors GitHub gives a Markdown file's headings: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func docAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// series is one sample of the scrape as a promqltest load line.
func loadScript(t *testing.T, scrape string, instances []string, drop func(name string, labels string) bool) string {
	t.Helper()
	f, err := os.Open(scrape)
	if err != nil {
		t.Fatalf("%v: run TestWatch in the lab with UNPRUNE_WATCH_SCRAPE=$PWD/test/prometheus/%s", err, fixture)
	}
	defer f.Close()
	var b strings.Builder
	b.WriteString("load 1m\n")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "unprune_") || strings.Contains(line, "_bucket") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		metric, value := line[:i], line[i+1:]
		name, labels, _ := strings.Cut(metric, "{")
		labels = strings.TrimSuffix(labels, "}")
		for _, inst := range instances {
			l := labels
			if l != "" {
				l += ","
			}
			l += `instance="` + inst + `",job="` + job + `"`
			if drop != nil && drop(name, l) {
				continue
			}
			fmt.Fprintf(&b, "  %s{%s} %s+0x20\n", name, l, value)
		}
	}
	// Prometheus's own series for each scraped replica.
	for _, inst := range instances {
		if drop == nil || !drop("up", inst) {
			fmt.Fprintf(&b, "  up{instance=%q,job=%q} 1+0x20\n", inst, job)
		}
	}
	return b.String()
}

// eval evaluates an alert's expression over the loaded scrape, as Prometheus's rule manager would
// at 10m, and returns the label sets of the elements it returns.
func eval(t *testing.T, script, expr string) []string {
	t.Helper()
	storage := promqltest.LoadedStorage(t, script)
	engine := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	q, err := engine.NewInstantQuery(context.Background(), storage, nil, expr, time.Unix(0, 0).Add(10*time.Minute))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s: %v", expr, res.Err)
	}
	vec, err := res.Vector()
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var out []string
	for _, s := range vec {
		out = append(out, s.Metric.String())
	}
	sort.Strings(out)
	return out
}

// stuck returns the apps of the scrape whose metric with extra labels is above 0, as the alert's
// by (namespace, application) labels print.
func stuck(t *testing.T, scrape, metric, extra string) []string {
	t.Helper()
	raw, err := os.ReadFile(scrape)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, extra) || strings.HasSuffix(line, " 0") {
			continue
		}
		ns, app := label(line, "namespace"), label(line, "application")
		out = append(out, fmt.Sprintf("{application=%q, namespace=%q}", app, ns))
	}
	sort.Strings(out)
	return out
}

func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	rest := line[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestAlertsOnLabScrape evaluates each alert's expression with Prometheus's engine over what the
// watch served in the lab, scraped from two replicas (as the ServiceMonitor scrapes them): each app
// fires once; the guarded app fires the first alert but not the unguarded one; the child whose
// deletion cascades fires the cascade alert; the watch-down alert is silent while a replica is up
// and leads, and fires when none is scraped or none leads. With the lab's scrape of this run, the
// fixture must still have its shape.
func TestAlertsOnLabScrape(t *testing.T) {
	rs := rules(t)
	all := scrapes(t)
	for name, scrape := range all {
		t.Run(name, func(t *testing.T) { alertsOn(t, rs, scrape) })
	}
	sameShape(t, all, fixture)
}

// sameShape: with the lab's scrape of this run, the fixture must still have its shape.
func sameShape(t *testing.T, all map[string]string, fixture string) {
	t.Helper()
	if lab, ok := all["lab"]; ok {
		if got, want := shape(t, fixture), shape(t, lab); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the fixture's series are not the lab's: copy %s to test/prometheus/%s\nfixture: %v\nlab:     %v", lab, fixture, got, want)
		}
	}
}

// TestBudgetAlertsOnLabScrape: over the deletion budget's scrape, as two replicas,
// UnpruneDeletionsRefused fires once for each app or set and reason the budget refused.
func TestBudgetAlertsOnLabScrape(t *testing.T) {
	rs := rules(t)
	all := budgetScrapes(t)
	for name, scrape := range all {
		t.Run(name, func(t *testing.T) {
			two := loadScript(t, scrape, []string{"10.0.0.1:8080", "10.0.0.2:8080"}, nil)
			raw, err := os.ReadFile(scrape)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			reasons := map[string]bool{}
			for _, line := range strings.Split(string(raw), "\n") {
				if strings.HasPrefix(line, "unprune_deletions_refused_total{") && !strings.HasSuffix(line, " 0") {
					want = append(want, fmt.Sprintf("{app=%q, reason=%q}", label(line, "app"), label(line, "reason")))
					reasons[label(line, "reason")] = true
				}
			}
			sort.Strings(want)
			if len(reasons) != 3 {
				t.Fatalf("the scrape's refusals have reasons %v; want over_budget, high_risk and applicationset_over_budget", reasons)
			}
			if got := eval(t, two, rs["UnpruneDeletionsRefused"].Expr); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("UnpruneDeletionsRefused fires for %v; want one alert per refused app and reason, %v", got, want)
			}
		})
	}
	sameShape(t, all, budgetFixture)
}

func alertsOn(t *testing.T, rs map[string]rulefmt.Rule, scrape string) {
	two := loadScript(t, scrape, []string{"10.0.0.1:8080", "10.0.0.2:8080"}, nil)
	high := stuck(t, scrape, "unprune_resources_requiring_pruning", `risk="high"`)
	unguarded := stuck(t, scrape, "unprune_unguarded_prune_candidates", `risk="high",when="now"`)
	cascade := stuck(t, scrape, "unprune_unguarded_prune_candidates", `risk="high",when="app_deleted"`)
	// Apps whose automated sync prunes.
	autoPrune := stuck(t, scrape, "unprune_application_auto_prune", "")
	if len(high) < 2 || len(unguarded) < 1 || len(unguarded) >= len(high) || len(cascade) < 1 {
		t.Fatalf("the scrape should hold stuck apps, one of them guarded, and a cascade: high %v, unguarded %v, cascade %v", high, unguarded, cascade)
	}
	var unguardedAuto, unguardedOther []string
	for _, app := range unguarded {
		if slices.Contains(autoPrune, app) {
			unguardedAuto = append(unguardedAuto, app)
		} else {
			unguardedOther = append(unguardedOther, app)
		}
	}
	for alert, want := range map[string][]string{"UnpruneHighRiskRequiresPruning": high, "UnpruneUnguardedHighRiskAutoPrune": unguardedAuto,
		"UnpruneUnguardedHighRiskPrune": unguardedOther, "UnpruneUnguardedHighRiskCascade": cascade} {
		if got := eval(t, two, rs[alert].Expr); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s fires for %v, want %v", alert, got, want)
		}
	}
	unknown := stuck(t, scrape, "unprune_unknown_guard_prune_candidates", `risk="high"`)
	if got := eval(t, two, rs["UnpruneHighRiskGuardsUnknown"].Expr); fmt.Sprint(got) != fmt.Sprint(unknown) {
		t.Errorf("UnpruneHighRiskGuardsUnknown fires for %v, want %v", got, unknown)
	}
	// The lab's replicas saw all along: not blind. An informer that fails makes its replica blind.
	blind := rs["UnpruneWatchBlind"].Expr
	if got := eval(t, two, blind); len(got) != 0 {
		t.Errorf("UnpruneWatchBlind fires for replicas that see: %v", got)
	}
	failing := loadScript(t, scrape, []string{"10.0.0.1:8080"}, nil) + "  unprune_informer_healthy{informer=\"gone\",instance=\"10.0.0.1:8080\",job=\"" + job + "\"} 0+0x20\n"
	if got := eval(t, failing, blind); len(got) != 1 {
		t.Errorf("UnpruneWatchBlind with a failing informer: %v, want it to fire once", got)
	}
	down := rs["UnpruneWatchDown"].Expr
	if got := eval(t, two, down); len(got) != 0 {
		t.Errorf("UnpruneWatchDown fires with both replicas up: %v", got)
	}
	noScrape := loadScript(t, scrape, []string{"10.0.0.1:8080"}, func(string, string) bool { return true })
	if got := eval(t, noScrape+"  unrelated_metric 1+0x20\n", down); len(got) != 1 {
		t.Errorf("UnpruneWatchDown with nothing scraped: %v, want it to fire", got)
	}
	noLeader := loadScript(t, scrape, []string{"10.0.0.1:8080"}, func(name, _ string) bool { return name == "unprune_leader" })
	if got := eval(t, noLeader, down); len(got) != 1 {
		t.Errorf("UnpruneWatchDown with no leader: %v, want it to fire", got)
	}
}
