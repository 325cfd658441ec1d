package exposition

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// TestAppSeriesExposeWhatGaugeVecsDid: the per-app series come out exactly as GaugeVecs with the
// same names, help and labels expose them — after a change of values, a change of an app's project
// (its old series gone), label values the text format must escape, and an app deleted.
func TestAppSeriesExposeWhatGaugeVecsDid(t *testing.T) {
	m := NewMetrics(nil)
	vecs := prometheus.NewRegistry()
	ref := newGaugeVecs(vecs)
	summary := func(ns, name, project string, n int) Summary {
		return Summary{Namespace: ns, Name: name, Project: project, Destination: "in-cluster", AutoPrune: n%2 == 1,
			Pruning: map[string]int{riskHigh: n, riskNormal: 2 * n}, Unknown: map[string]int{riskHigh: n + 1},
			Unguarded:       map[string]map[string]int{whenNow: {riskHigh: n}, whenAppDeleted: {riskNormal: 3}},
			CascadeHighRisk: n + 2}
	}
	escaped := summary("team-c", "api", "p", 3)
	escaped.Destination = "a \"quoted\" back\\slash\nnew line, 1e6 ünïcode"
	escaped.Pruning[riskNormal] = 1_000_000
	steps := [][]Summary{
		{summary("team-a", "web", "a", 1), summary("team-b", "web", "b", 2), summary("argocd", "db", "default", 0)},
		{summary("team-a", "web", "a", 5)},
		{summary("team-b", "web", "moved", 7), escaped},
	}
	for i, step := range steps {
		for _, s := range step {
			m.Set(s.Namespace+"/"+s.Name, s, 0)
			ref.delete(s.Namespace, s.Name)
			ref.set(s)
		}
		if i == len(steps)-1 {
			m.Delete("argocd/db")
			ref.delete("argocd", "db")
		}
		got, want := served(t, m, ""), registryText(t, vecs)
		if got != want {
			t.Fatalf("step %d:\n got:\n%s\nwant:\n%s", i, got, want)
		}
	}
}

// gaugeVecs are the per-app families as the watch kept them before appSeries: a GaugeVec each, with
// the same names, help and labels.
type gaugeVecs struct{ pruning, unguarded, unknown, cascade, autoPrune *prometheus.GaugeVec }

func newGaugeVecs(r *prometheus.Registry) gaugeVecs {
	v := gaugeVecs{
		pruning:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPruning, Help: helpPruning}, []string{"namespace", "application", "project", "destination", "risk"}),
		unguarded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnguarded, Help: helpUnguarded}, []string{"namespace", "application", "risk", "when"}),
		unknown:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnknown, Help: helpUnknown}, []string{"namespace", "application", "risk"}),
		cascade:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricCascade, Help: helpCascade}, []string{"namespace", "application"}),
		autoPrune: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricAutoPrune, Help: helpAutoPrune}, []string{"namespace", "application"}),
	}
	r.MustRegister(v.pruning, v.unguarded, v.unknown, v.cascade, v.autoPrune)
	return v
}

// set writes an app's values.
func (v gaugeVecs) set(s Summary) {
	for _, r := range riskLabels {
		v.pruning.WithLabelValues(s.Namespace, s.Name, s.Project, s.Destination, r).Set(float64(s.Pruning[r]))
		for _, w := range whenLabels {
			v.unguarded.WithLabelValues(s.Namespace, s.Name, r, w).Set(float64(s.Unguarded[w][r]))
		}
		v.unknown.WithLabelValues(s.Namespace, s.Name, r).Set(float64(s.Unknown[r]))
	}
	v.cascade.WithLabelValues(s.Namespace, s.Name).Set(float64(s.CascadeHighRisk))
	auto := 0.0
	if s.AutoPrune {
		auto = 1
	}
	v.autoPrune.WithLabelValues(s.Namespace, s.Name).Set(auto)
}

// delete removes every series of an app.
func (v gaugeVecs) delete(namespace, name string) {
	app := prometheus.Labels{"namespace": namespace, "application": name}
	for _, vec := range []*prometheus.GaugeVec{v.pruning, v.unguarded, v.unknown, v.cascade, v.autoPrune} {
		vec.DeletePartialMatch(app)
	}
}

// registryText is the text format of the per-app families a registry gathers.
func registryText(t *testing.T, r *prometheus.Registry) string {
	t.Helper()
	families, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if perApp(f.GetName()) {
			if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	return canonical(b.String())
}

// served is the text of the per-app families the metrics handler serves, asked with the
// Accept-Encoding given (and ungzipped).
func served(t *testing.T, m *Metrics, acceptEncoding string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, req)
	body := io.Reader(rec.Body)
	if rec.Header().Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = gz
	}
	text, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	keep := false
	for line := range strings.Lines(string(text)) {
		if name, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(name, " ")
			keep = perApp(name)
		}
		if keep {
			b.WriteString(line)
		}
	}
	return canonical(b.String())
}

func perApp(name string) bool {
	for _, f := range appFamilies {
		if f.name == name {
			return true
		}
	}
	return false
}

// canonical orders the families by name and each family's samples: the text format leaves both
// orders to the writer (the registry sorts samples by label values, the handler by app).
func canonical(text string) string {
	var blocks [][]string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "# HELP ") || len(blocks) == 0 {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], line)
	}
	var out []string
	for _, b := range blocks {
		head := 0
		for head < len(b) && strings.HasPrefix(b[head], "#") {
			head++
		}
		slices.Sort(b[head:])
		out = append(out, strings.Join(b, ""))
	}
	slices.Sort(out)
	return strings.Join(out, "")
}

// TestMetricsServeGzipWhenAsked: a scraper that accepts gzip (Prometheus does) gets the same text
// gzipped; one that refuses it (q=0) or does not ask, plain text.
func TestMetricsServeGzipWhenAsked(t *testing.T) {
	m := NewMetrics(nil)
	m.Set("argocd/web", Summary{Namespace: "argocd", Name: "web", Project: "default", Destination: "in-cluster",
		Pruning: map[string]int{riskHigh: 2}}, 0)
	plain := served(t, m, "")
	if !strings.Contains(plain, `unprune_resources_requiring_pruning{application="web",destination="in-cluster",namespace="argocd",project="default",risk="high"} 2`) {
		t.Fatalf("no pruning series for web:\n%s", plain)
	}
	for header, gzipped := range map[string]bool{"gzip": true, "deflate, gzip;q=0.5": true, "GZIP": true,
		"gzip;q=0": false, "identity": false, "": false} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", header)
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != gzipped {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", header, got, gzipped)
		}
		if got := served(t, m, header); got != plain {
			t.Errorf("Accept-Encoding %q: served\n%s\nwant\n%s", header, got, plain)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Errorf("Accept-Encoding %q: Content-Type %q", header, ct)
		}
	}
}

// BenchmarkScrape times one scrape of 10,000 apps' series (120,000), gzipped as Prometheus asks:
// promhttp over GaugeVecs holding the same series (the baseline: how the watch served them before)
// and the watch's handler. Compare the two ns/op of one run.
func BenchmarkScrape(b *testing.B) {
	const apps = 10000
	summary := func(i int) Summary {
		return Summary{Namespace: "argocd", Name: fmt.Sprintf("watch-%05d", i), Project: "default", Destination: "in-cluster",
			Pruning: map[string]int{riskNormal: 50}, Unguarded: map[string]map[string]int{whenNow: {riskNormal: 50}}}
	}
	scrapeWith := func(b *testing.B, h http.Handler) {
		b.ReportAllocs()
		for range b.N {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
				b.Fatalf("scrape answered %d with %d bytes", rec.Code, rec.Body.Len())
			}
		}
	}
	b.Run("gaugevecs", func(b *testing.B) {
		r := prometheus.NewRegistry()
		ref := newGaugeVecs(r)
		for i := range apps {
			ref.set(summary(i))
		}
		b.ResetTimer()
		scrapeWith(b, promhttp.HandlerFor(r, promhttp.HandlerOpts{}))
	})
	b.Run("handler", func(b *testing.B) {
		m := NewMetrics(nil)
		for i := range apps {
			s := summary(i)
			m.Set(s.Namespace+"/"+s.Name, s, 0)
		}
		b.ResetTimer()
		scrapeWith(b, m)
	})
}

// retained is the heap that what keep returns holds after a collection.
func retained(keep func() any) (uint64, any) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := keep()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return after.HeapAlloc - before.HeapAlloc, kept
}

// BenchmarkAppSeries measures the heap the per-app series hold per app: four GaugeVecs (the
// baseline) and the collector that replaced them.
func BenchmarkAppSeries(b *testing.B) {
	const apps = 2000
	summary := func(i int) Summary {
		return Summary{Namespace: "argocd", Name: fmt.Sprintf("watch-%05d", i), Project: "default", Destination: "in-cluster",
			Pruning: map[string]int{riskNormal: 50}}
	}
	b.Run("gaugevecs", func(b *testing.B) {
		for range b.N {
			n, kept := retained(func() any {
				pruning := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricPruning, Help: helpPruning}, []string{"namespace", "application", "project", "destination", "risk"})
				unguarded := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnguarded, Help: helpUnguarded}, []string{"namespace", "application", "risk", "when"})
				unknown := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricUnknown, Help: helpUnknown}, []string{"namespace", "application", "risk"})
				cascade := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricCascade, Help: helpCascade}, []string{"namespace", "application"})
				for i := range apps {
					s := summary(i)
					for _, r := range riskLabels {
						pruning.WithLabelValues(s.Namespace, s.Name, s.Project, s.Destination, r).Set(float64(s.Pruning[r]))
						for _, w := range whenLabels {
							unguarded.WithLabelValues(s.Namespace, s.Name, r, w).Set(0)
						}
						unknown.WithLabelValues(s.Namespace, s.Name, r).Set(0)
					}
					cascade.WithLabelValues(s.Namespace, s.Name).Set(0)
				}
				return []any{pruning, unguarded, unknown, cascade}
			})
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(n)/apps, "B/app")
		}
	})
	b.Run("collector", func(b *testing.B) {
		for range b.N {
			n, kept := retained(func() any {
				m := NewMetrics(nil)
				for i := range apps {
					s := summary(i)
					m.apps.set("argocd/"+s.Name, appLabels{namespace: s.Namespace, name: s.Name, project: s.Project, destination: s.Destination}, s)
				}
				return m
			})
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(n)/apps, "B/app")
		}
	})
}
