package watch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cluster"
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

// recorder is an API server's Events as the watch writes them: sent are the Warning ones ("reason:
// message"), normal the Normal ones; fail, while positive, refuses that many writes.
type recorder struct {
	mu     sync.Mutex
	sent   []string
	normal []string
	names  map[string]bool
	fail   int
}

func (r *recorder) write(_ context.Context, ev *corev1.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		return apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	}
	if r.names == nil {
		r.names = map[string]bool{}
	}
	if r.names[ev.Name] {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Name)
	}
	r.names[ev.Name] = true
	line := ev.Reason + ": " + ev.Message
	if ev.Type == corev1.EventTypeNormal {
		r.normal = append(r.normal, line)
	} else {
		r.sent = append(r.sent, line)
	}
	return nil
}

func summary(app argocd.Application, rows ...audit.Row) Summary {
	return Summarize(app, rows, nil)
}

func TestEventsOnTransitionsOnly(t *testing.T) {
	app := testApp(ns("a"), ns("b"))
	rec := &recorder{}
	var listed []string
	existing := map[string][]string{}
	e := newEvents(rec.write, func(_ context.Context, _ string, _ types.UID, reason string) ([]string, error) {
		listed = append(listed, reason)
		return existing[reason], nil
	}, nil)
	ctx := context.Background()
	step := func(s Summary) {
		t.Helper()
		e.observe("argocd/app", s)
		if left := e.deliver(ctx); left != 0 {
			t.Fatalf("%d Events left", left)
		}
	}
	e.setLeading(true)
	// First evaluation after a start: what it sees is checked against the Events already there.
	existing[ReasonHighRiskRequiresPruning] = []string{"Namespace/a requires pruning: …"}
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true)))
	if len(rec.sent) != 0 || len(listed) != 1 {
		t.Fatalf("an already announced row was announced again: %v (listed %v)", rec.sent, listed)
	}
	// The same state again: nothing.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true)))
	// A second high-risk row starts requiring pruning, unguarded: one Event, naming the commands.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true), row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.sent) != 1 || !strings.HasPrefix(rec.sent[0], ReasonHighRiskRequiresPruning+": Namespace/b requires pruning") ||
		!strings.Contains(rec.sent[0], "unprune detach argocd/app Namespace/b <Yes>") || !strings.Contains(rec.sent[0], "unprune guard protect Namespace/b <Yes> (with unprune guard policy <GuardMerge> <GuardKinds> namespaces <Apply>)") ||
		!strings.Contains(rec.sent[0], "the 3 objects in it") {
		t.Fatalf("events: %q", rec.sent)
	}
	// a loses its guard: one UnguardedHighRiskPrune.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)))
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.sent) != 2 || !strings.HasPrefix(rec.sent[1], ReasonUnguardedHighRiskPrune+": Namespace/a requires pruning and nothing guards it") {
		t.Fatalf("events: %q", rec.sent)
	}
	// Released, then stuck again: a new transition, a new Event. Each release is a Normal Event
	// naming its resource.
	step(summary(app))
	if len(rec.normal) != 2 || !strings.HasPrefix(rec.normal[0], ReasonHighRiskPruneResolved+": Namespace/a no longer requires pruning") ||
		!strings.HasPrefix(rec.normal[1], ReasonHighRiskPruneResolved+": Namespace/b no longer requires pruning") {
		t.Fatalf("normal events after the release: %q", rec.normal)
	}
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.sent) != 3 {
		t.Fatalf("events: %q", rec.sent)
	}
	// Guarded again: a Normal Event naming the guard.
	guardedB := row(app, ns("b"), audit.Now, risk.High, true)
	guardedB.Guards = []risk.Guard{"AdmissionPolicy"}
	step(summary(app, guardedB))
	if len(rec.sent) != 3 || len(rec.normal) != 3 || rec.normal[2] != ReasonHighRiskPruneGuarded+": Namespace/b still requires pruning and is guarded again (AdmissionPolicy): a sync with prune does not delete it." {
		t.Fatalf("after guarding b: %q %q", rec.sent, rec.normal)
	}
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false)))
	// Normal-risk rows never make Events.
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false), row(app, cm("c"), audit.Now, risk.Normal, false)))
	if len(rec.sent) != 4 || len(rec.normal) != 3 {
		t.Fatalf("events: %q %q", rec.sent, rec.normal)
	}
}

func TestEventsFollowerHandsOverPending(t *testing.T) {
	app := testApp(ns("a"), ns("b"), ns("c"))
	rec := &recorder{}
	existing := map[string][]string{ReasonHighRiskRequiresPruning: {"Namespace/a requires pruning: announced by the old leader"}}
	e := newEvents(rec.write, func(_ context.Context, _ string, _ types.UID, reason string) ([]string, error) {
		return existing[reason], nil
	}, nil)
	// While following: nothing is sent.
	for _, s := range []Summary{
		summary(app),
		summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false), row(app, ns("c"), audit.Now, risk.High, false)),
		// c is released before this replica leads: no longer news.
		summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)),
	} {
		e.observe("argocd/app", s)
		if n := e.queued(); n != 0 {
			t.Fatalf("a follower would send %d Events", n)
		}
	}
	// Leading: a was announced by the old leader; only b is sent.
	e.setLeading(true)
	if left := e.deliver(context.Background()); left != 0 {
		t.Fatalf("%d left", left)
	}
	if len(rec.sent) != 1 || !strings.Contains(rec.sent[0], "Namespace/b requires pruning") {
		t.Fatalf("after taking over: %q", rec.sent)
	}
}

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
	value := gauge(t, m, metricPruning, map[string]string{"application": "app-3", "risk": "high"})
	if value != 30 {
		t.Errorf("app-3 high = %v, want 30", value)
	}
	if v := gauge(t, m, metricUnguarded, map[string]string{"application": "app-3", "risk": "high", "when": "now"}); v != 15 {
		t.Errorf("app-3 unguarded high = %v, want 15", v)
	}
	if v := gauge(t, m, metricAutoPrune, map[string]string{"application": "app-3"}); v != 0 {
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
		if v := gauge(t, m, metricAutoPrune, map[string]string{"application": "app-3"}); v != c.want {
			t.Errorf("automated %v, prune %v: auto prune = %v, want %v", c.automated, c.prune, v, c.want)
		}
	}
}

// appSeries counts the series carrying an application label.
func countAppSeries(t *testing.T, m *Metrics) int {
	t.Helper()
	families := scrape(t, m)
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

// scrape reads the metrics as Prometheus does: the handler's text, parsed.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics answered %d: %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics is not in the text format: %v", err)
	}
	return families
}

func gauge(t *testing.T, m *Metrics, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := find(t, m, name, want)
	if !ok {
		t.Fatalf("no %s%v", name, want)
	}
	return v
}

// counter is gauge for counters.
func counter(t *testing.T, m *Metrics, name string, want map[string]string) float64 {
	return gauge(t, m, name, want)
}

// find is the value of the series of name whose labels include want.
func find(t *testing.T, m *Metrics, name string, want map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range scrape(t, m) {
		if f.GetName() != name {
			continue
		}
	next:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			if s.GetCounter() != nil {
				return s.GetCounter().GetValue(), true
			}
			return s.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/argocd/events":                                     "events",
		"/api/v1/namespaces/argocd/events/x.123":                               "events",
		"/apis/coordination.k8s.io/v1/namespaces/unprune/leases/unprune-watch": "leases.coordination.k8s.io",
		"/api/v1/namespaces/team-a":                                            "namespaces",
		"/api/v1/namespaces":                                                   "namespaces",
		"/apis/argoproj.io/v1alpha1/applications":                              "applications.argoproj.io",
		"/apis/apps/v1/namespaces/a/deployments/d/status":                      "deployments/status.apps",
		"/version": "discovery",
		"/apis":    "discovery",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestLRUBoundAndTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := newLRU[int](2, time.Minute, func() time.Time { return now })
	c.put("a", 1)
	c.put("b", 2)
	c.get("a") // a is now the most recently used
	c.put("c", 3)
	if _, ok := c.get("b"); ok || c.len() != 2 {
		t.Fatalf("b should have been evicted (len %d)", c.len())
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatal("a should be kept")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get("a"); ok {
		t.Fatal("a should have expired")
	}
}

// TestLRUBoundByBytes: entries are evicted least recently used first once their bytes exceed the
// bound, whatever their count; a replaced or removed entry gives its bytes back; one entry larger
// than the bound is kept alone rather than refused.
func TestLRUBoundByBytes(t *testing.T) {
	var evicted []string
	c := newLRU[string](100, time.Minute, nil)
	c.evicted = func(k string) { evicted = append(evicted, k) }
	c.limitBytes(10, func(_ string, v string) int64 { return int64(len(v)) })
	c.put("a", "xxxx")
	c.put("b", "xxxx")
	c.get("a")
	c.put("c", "xxxx") // 12 bytes: b, the least recently used, goes
	if fmt.Sprint(evicted) != "[b]" || c.size() != 8 || c.len() != 2 {
		t.Fatalf("evicted %v, %d bytes in %d entries", evicted, c.size(), c.len())
	}
	c.put("a", "x") // replaced: 5 bytes
	c.remove("c")
	if c.size() != 1 || c.len() != 1 {
		t.Fatalf("%d bytes in %d entries after a replacement and a removal", c.size(), c.len())
	}
	c.put("big", "xxxxxxxxxxxxxxxx")
	if _, ok := c.get("big"); !ok || c.len() != 1 || c.size() != 16 {
		t.Fatalf("an entry above the bound: kept %v, %d entries, %d bytes", ok, c.len(), c.size())
	}
}

// TestCompactCachedObjects: a live object is cached without its managedFields and kubectl's
// last-applied copy, which no judgement reads; it is answered with its labels, other annotations,
// owners and state as read, under the ref asked for, and the object read is not changed.
func TestCompactCachedObjects(t *testing.T) {
	read := cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "web", Name: "x", Namespaced: true}
	o := &cluster.Object{Ref: read, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:        map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations:   map[string]string{argocd.AnnotationLastAppliedConfiguration: strings.Repeat("x", 4096), "argocd.argoproj.io/sync-options": "Prune=false"},
		ManagedFields: []cluster.ManagedFieldsEntry{{Manager: "argocd-controller", FieldsV1: []byte(strings.Repeat("f", 2048))}}}
	m := compactRead(cluster.ReadResult{Object: o})
	asked := read
	asked.Version = "v1beta1"
	got := m.object(asked)
	want := &cluster.Object{Ref: asked, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:      map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations: map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached as %+v, want %+v", got, want)
	}
	got.Labels["team"] = "b"
	if again := m.object(asked); again.Labels["team"] != "a" {
		t.Fatalf("a caller's change reached the cache: %v", again.Labels)
	}
	if o.ManagedFields == nil || len(o.Annotations) != 2 {
		t.Fatalf("the object read was changed: %+v", o)
	}
	for _, o := range []*cluster.Object{
		{Ref: read, UID: "not-a-uuid", ResourceVersion: "1"},
		// Only the annotation is kubectl's copy: a label of that key is kept.
		{Ref: read, UID: "u-3", Labels: map[string]string{argocd.AnnotationLastAppliedConfiguration: "label"}},
		{Ref: read, UID: "0B6E2C1A-3F4D-4E5A-9B8C-7D6E5F4A3B2C", ResourceVersion: "12345678901234567890"},
		{Ref: read, UID: "0b6e2c1a-3f4d-4e5a-9b8c-7d6e5f4a3b2c", Labels: map[string]string{"empty": ""},
			Annotations: map[string]string{"long": strings.Repeat("v", 300), "é/ключ": "ü"}, Content: map[string]any{"kind": "ConfigMap"}},
	} {
		if got := compactRead(cluster.ReadResult{Object: o}).object(read); !reflect.DeepEqual(got, o) {
			t.Errorf("cached %+v as %+v", o, got)
		}
	}
	if absent := compactRead(cluster.ReadResult{Err: errors.New("not found")}).object(asked); absent != nil {
		t.Fatalf("an object that is not there is answered as %+v", absent)
	}
	if bare := compactRead(cluster.ReadResult{Object: &cluster.Object{Ref: read, UID: "u-2"}}).object(read); bare.Labels != nil || bare.Annotations != nil {
		t.Fatalf("an object with no labels nor annotations is answered with %v and %v", bare.Labels, bare.Annotations)
	}
	before, after := readBytes("k", answer[cluster.ReadResult]{value: cluster.ReadResult{Object: o}}), metaBytes("k", answer[liveMeta]{value: m})
	if after*5 > before {
		t.Errorf("estimated %d bytes before, %d after", before, after)
	}
}

func (t *internTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.all)
}

func (t *internTable) has(s string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.index[s]
	return ok
}

// TestCompactKeysPastTheTable: once the interned keys are as many as the table holds, a new key is
// kept with its object and still answered.
func TestCompactKeysPastTheTable(t *testing.T) {
	read := cluster.Ref{Version: "v1", Kind: "ConfigMap", Name: "x"}
	for i := 0; metaKeys.len() < metaKeys.max; i++ {
		metaKeys.append(nil, fmt.Sprintf("filler/%d", i))
	}
	o := &cluster.Object{Ref: read, UID: "u", Labels: map[string]string{"past/the-table": "yes", "filler/0": "interned"}}
	if got := compactRead(cluster.ReadResult{Object: o}).object(read); !reflect.DeepEqual(got, o) {
		t.Fatalf("cached %+v as %+v", o, got)
	}
	if metaKeys.has("past/the-table") || metaKeys.len() != metaKeys.max {
		t.Fatalf("the table grew past its bound: %d keys", metaKeys.len())
	}
}

func TestAppNamespaces(t *testing.T) {
	// "//" is a glob in Argo CD (util/glob.MatchStringInList: a regular expression needs more than the
	// two slashes), which no namespace matches.
	a := appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd", Patterns: argocd.SplitList(" team-a, team-* ,/^ops-[0-9]+$/, //")}}
	for ns, want := range map[string]bool{"argocd": true, "team-a": true, "team-b": true, "ops-12": true, "ops-x": false, "other": false} {
		if got := a.enabled(ns); got != want {
			t.Errorf("enabled(%s) = %t", ns, got)
		}
	}
	if got := a.informerNamespaces(); fmt.Sprint(got) != "[]" {
		t.Errorf("patterns need a cluster-wide informer, got %q", got)
	}
	literal := appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd", Patterns: []string{"team-a", "team-b"}}}
	if got := literal.informerNamespaces(); fmt.Sprint(got) != "[argocd team-a team-b]" {
		t.Errorf("informer namespaces %v", got)
	}
}

func TestContentsText(t *testing.T) {
	for _, c := range []struct {
		contents *risk.Contents
		want     string
	}{
		{nil, ""},
		{&risk.Contents{Objects: 12, CustomResources: -1}, " and the 12 objects in it"},
		{&risk.Contents{Objects: 12, CustomResources: -1, Partial: "at least; 3 kinds unreadable"}, " and at least 12 objects in it"},
		{&risk.Contents{Objects: -1, CustomResources: 4}, " and its 4 custom resources"},
		{&risk.Contents{Objects: -1, CustomResources: -1, Partial: "not counted: forbidden"}, ""},
	} {
		if got := contentsText(Finding{Contents: c.contents}, ""); got != c.want {
			t.Errorf("contentsText(%+v) = %q, want %q", c.contents, got, c.want)
		}
	}
	// Kinds the watch does not count (it may not list them cluster-wide): a minimum that says which.
	if got, want := contentsText(Finding{Contents: &risk.Contents{Objects: 12, CustomResources: -1}}, "Pods, ConfigMaps and Secrets"),
		" and at least 12 objects in it (Pods, ConfigMaps and Secrets not counted)"; got != want {
		t.Errorf("uncounted kinds: %q, want %q", got, want)
	}
}

// TestEventsRetryFailedCheck: a transition whose check failed (the list of Events) is retried with
// backoff until it succeeds — not dropped, and not left until the app's next evaluation.
func TestEventsRetryFailedCheck(t *testing.T) {
	app := testApp(ns("a"))
	rec := &recorder{}
	lists := 0
	e := newEvents(rec.write, func(context.Context, string, types.UID, string) ([]string, error) {
		lists++
		if lists <= 2 {
			return nil, fmt.Errorf("connection refused")
		}
		return nil, nil
	}, nil)
	e.retry = time.Millisecond
	e.setLeading(true)
	s := summary(app, row(app, ns("a"), audit.Now, risk.High, false))
	e.observe("argocd/app", s)
	if left := e.deliver(context.Background()); left != 0 || len(rec.sent) != 1 || lists != 3 {
		t.Fatalf("after two failed checks: %d left, sent %q, %d lists", left, rec.sent, lists)
	}
	e.observe("argocd/app", s)
	if left := e.deliver(context.Background()); left != 0 || len(rec.sent) != 1 {
		t.Fatalf("sent again: %q", rec.sent)
	}
}

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{REST: &rest.Config{}, ArgoCDNamespace: "argocd", LeaderElect: true, LeaseNamespace: "argocd",
			LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod,
			Workers: 1, CacheSize: 1, CacheBytes: 1, CacheTTL: time.Second, Resync: time.Minute}
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("valid config refused: %v", c.Validate())
	}
	for name, edit := range map[string]func(*Config){
		"no cluster":               func(c *Config) { c.REST = nil },
		"no Argo CD namespace":     func(c *Config) { c.ArgoCDNamespace = "" },
		"no lease namespace":       func(c *Config) { c.LeaseNamespace = "" },
		"renew deadline too long":  func(c *Config) { c.RenewDeadline = c.LeaseDuration },
		"retry period not shorter": func(c *Config) { c.RetryPeriod = c.RenewDeadline },
		"no workers":               func(c *Config) { c.Workers = 0 },
		"no cache bytes":           func(c *Config) { c.CacheBytes = 0 },
	} {
		c := good()
		edit(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := good()
	c.LeaderElect, c.LeaseNamespace = false, ""
	if err := c.Validate(); err != nil {
		t.Errorf("without leader election a lease namespace is not needed: %v", err)
	}
}

// TestMemoryLimitFrom: 90% of the container's limit passed by the downward API, unless GOMEMLIMIT
// says otherwise (the runtime has read it); nothing without either; a value that is not bytes is
// refused rather than ignored.
func TestMemoryLimitFrom(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    int64
		wantErr bool
	}{
		{env: map[string]string{MemoryLimitEnv: "1073741824"}, want: 966367641},
		{env: map[string]string{MemoryLimitEnv: "1073741824", "GOMEMLIMIT": "500MiB"}, want: 0},
		{env: map[string]string{}, want: 0},
		{env: map[string]string{MemoryLimitEnv: "1Gi"}, wantErr: true},
		{env: map[string]string{MemoryLimitEnv: "0"}, wantErr: true},
	} {
		got, err := MemoryLimitFrom(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%v: %d, %v; want %d (error %t)", c.env, got, err, c.want, c.wantErr)
		}
	}
}

// TestGCPercentFrom: the watch collects at DefaultGCPercent unless GOGC says otherwise (the runtime
// has read it, "off" included).
func TestGCPercentFrom(t *testing.T) {
	for env, want := range map[string]int{"": DefaultGCPercent, "200": 0, "off": 0} {
		if got := GCPercentFrom(func(k string) string {
			if k == "GOGC" {
				return env
			}
			return ""
		}); got != want {
			t.Errorf("GOGC=%q: %d, want %d", env, got, want)
		}
	}
}

// TestSettingsLogTheReleaseLine: when argocd-cm is read, the watch logs the settings and, with the
// Argo CD version known, the release line and the version rules it judges with.
func TestSettingsLogTheReleaseLine(t *testing.T) {
	var out strings.Builder
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	w := &watcher{cfg: Config{ArgoCDNamespace: "argocd", Version: &v}, log: &logger{out: &out}}
	w.settingsChanged(&unstructured.Unstructured{Object: map[string]any{"data": map[string]any{argocd.SettingTrackingMethod: "annotation"}}})
	if got := out.String(); !strings.Contains(got, "Argo CD v3.6.1, release line v3.6: rules ") || !strings.Contains(got, "installation-id-when-configured") {
		t.Fatalf("log %q: want the release line and its rules", got)
	}
}
