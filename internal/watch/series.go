package watch

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// appCollector serves the per-app series (seriesPerApp of them per Application) as one collector. A
// GaugeVec keeps, for each series, its own copy of every label pair as protobuf messages and a
// hash bucket of its label values: about 750 bytes a series, 80 MiB at 10,000 apps. Here an app's
// label pairs are built once and shared by its series, the risk and when pairs by every app, and
// the values are the summary's counts: about 1 KiB an app. The output is what the GaugeVecs
// exposed, series for series.
type appCollector struct {
	pruning, unguarded, unknown, cascade, autoPrune *prometheus.Desc

	mu   sync.RWMutex
	apps map[string]*appGauges
}

// appGauges are one app's series: the label pairs of each, in the order Prometheus wants them
// (sorted by name), and their values.
type appGauges struct {
	labels appLabels
	series []gaugeSeries
}

type gaugeSeries struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	// value holds the float64's bits: the registry may write a series out after Collect returned.
	value atomic.Uint64
}

// Desc and Write make a series a prometheus.Metric without copying it at each scrape.
func (g *gaugeSeries) Desc() *prometheus.Desc { return g.desc }

func (g *gaugeSeries) Write(out *dto.Metric) error {
	out.Label = g.labels
	out.Gauge = &dto.Gauge{Value: proto.Float64(math.Float64frombits(g.value.Load()))}
	return nil
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
}

// The pairs every app shares.
var (
	riskPairs = map[string]*dto.LabelPair{riskHigh: labelPair("risk", riskHigh), riskNormal: labelPair("risk", riskNormal)}
	whenPairs = map[string]*dto.LabelPair{whenNow: labelPair("when", whenNow), whenRemovedFromGit: labelPair("when", whenRemovedFromGit),
		whenAppDeleted: labelPair("when", whenAppDeleted)}
)

func newAppCollector(pruning, unguarded, unknown, cascade, autoPrune *prometheus.Desc) *appCollector {
	return &appCollector{pruning: pruning, unguarded: unguarded, unknown: unknown, cascade: cascade, autoPrune: autoPrune, apps: map[string]*appGauges{}}
}

// gaugesFor builds an app's series, all at 0.
func (c *appCollector) gaugesFor(l appLabels) *appGauges {
	ns, app := labelPair("namespace", l.namespace), labelPair("application", l.name)
	project, dest := labelPair("project", l.project), labelPair("destination", l.destination)
	g := &appGauges{labels: l, series: make([]gaugeSeries, 0, seriesPerApp)}
	for _, r := range riskLabels {
		g.series = append(g.series, gaugeSeries{desc: c.pruning, labels: []*dto.LabelPair{app, dest, ns, project, riskPairs[r]}})
	}
	for _, r := range riskLabels {
		for _, w := range whenLabels {
			g.series = append(g.series, gaugeSeries{desc: c.unguarded, labels: []*dto.LabelPair{app, ns, riskPairs[r], whenPairs[w]}})
		}
	}
	for _, r := range riskLabels {
		g.series = append(g.series, gaugeSeries{desc: c.unknown, labels: []*dto.LabelPair{app, ns, riskPairs[r]}})
	}
	g.series = append(g.series, gaugeSeries{desc: c.cascade, labels: []*dto.LabelPair{app, ns}})
	g.series = append(g.series, gaugeSeries{desc: c.autoPrune, labels: []*dto.LabelPair{app, ns}})
	return g
}

// set replaces an app's values (and its labels, when its project or destination changed).
func (c *appCollector) set(key string, l appLabels, s Summary) {
	c.mu.RLock()
	g := c.apps[key]
	c.mu.RUnlock()
	if g == nil || g.labels != l {
		g = c.gaugesFor(l)
	}
	values := make([]float64, 0, seriesPerApp)
	for _, r := range riskLabels {
		values = append(values, float64(s.Pruning[r]))
	}
	for _, r := range riskLabels {
		for _, w := range whenLabels {
			values = append(values, float64(s.Unguarded[w][r]))
		}
	}
	for _, r := range riskLabels {
		values = append(values, float64(s.Unknown[r]))
	}
	values = append(values, float64(s.CascadeHighRisk))
	autoPrune := 0.0
	if s.AutoPrune {
		autoPrune = 1
	}
	values = append(values, autoPrune)
	for i := range g.series {
		g.series[i].value.Store(math.Float64bits(values[i]))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps[key] = g
}

func (c *appCollector) delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.apps, key)
}

func (c *appCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pruning
	ch <- c.unguarded
	ch <- c.unknown
	ch <- c.cascade
	ch <- c.autoPrune
}

// Collect hands over each series itself, not a copy.
func (c *appCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, g := range c.apps {
		for i := range g.series {
			ch <- &g.series[i]
		}
	}
}
