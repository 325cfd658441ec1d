package exposition

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/common/expfmt"
)

// appSeries keeps the per-app series (seriesPerApp of them per Application) and writes them in
// Prometheus's text format itself, as kube-state-metrics writes its objects' series. Handed to the
// client library's registry, 10,000 apps were 120,000 metrics built, checked for duplicates,
// sorted by their label values and encoded at every scrape: 0.8 s a scrape, measured. Here an
// app's label text is escaped once, when its labels change, and a scrape writes lines: the output
// is what the GaugeVecs this replaced exposed, series for series (series_test.go).
type appSeries struct {
	mu   sync.RWMutex
	apps map[string]*appValues
}

// appValues are one app's series. A published appValues is never written again: set replaces it,
// so that a scrape reads its snapshot without a lock.
type appValues struct {
	key    string
	labels appLabels
	// pruningLabels and appLabels are the label text, escaped: application, destination,
	// namespace and project for the pruning family, application and namespace for the others
	// (each family's labels in the order of their names, as the registry wrote them).
	pruningLabels, appLabels string
	// values are in the order familyOf lays out: pruning by risk, unguarded by risk and when,
	// unknown by risk, cascade, automated prune.
	values [seriesPerApp]float64
}

func newAppSeries() *appSeries { return &appSeries{apps: map[string]*appValues{}} }

// set replaces an app's values (and its label text, when its labels changed).
func (c *appSeries) set(key string, l appLabels, s Summary) {
	v := &appValues{key: key, labels: l}
	c.mu.RLock()
	old := c.apps[key]
	c.mu.RUnlock()
	if old != nil && old.labels == l {
		v.pruningLabels, v.appLabels = old.pruningLabels, old.appLabels
	} else {
		v.pruningLabels = labelText("application", l.name, "destination", l.destination, "namespace", l.namespace, "project", l.project)
		v.appLabels = labelText("application", l.name, "namespace", l.namespace)
	}
	i := 0
	for _, r := range riskLabels {
		v.values[i] = float64(s.Pruning[r])
		i++
	}
	for _, r := range riskLabels {
		for _, w := range whenLabels {
			v.values[i] = float64(s.Unguarded[w][r])
			i++
		}
	}
	for _, r := range riskLabels {
		v.values[i] = float64(s.Unknown[r])
		i++
	}
	v.values[i] = float64(s.CascadeHighRisk)
	if s.AutoPrune {
		v.values[i+1] = 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps[key] = v
}

func (c *appSeries) delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.apps, key)
}

// family is one metric family of the per-app series: which of an app's values it shows, and the
// labels each adds to the app's.
type family struct {
	name, help string
	// pruning: the family carries project and destination too.
	pruning bool
	// first is the index of its first value; extra the label text of each of its series after
	// the app's, in the same order as the values.
	first int
	extra []string
}

// appFamilies lay out an app's values, in the order appSeries.set writes them.
var appFamilies = func() []family {
	risk := func(r string) string { return `,risk="` + r + `"` }
	var pruning, unguarded, unknown []string
	for _, r := range riskLabels {
		pruning = append(pruning, risk(r))
		unknown = append(unknown, risk(r))
		for _, w := range whenLabels {
			unguarded = append(unguarded, risk(r)+`,when="`+w+`"`)
		}
	}
	fs := []family{
		{name: metricPruning, help: helpPruning, pruning: true, extra: pruning},
		{name: metricUnguarded, help: helpUnguarded, extra: unguarded},
		{name: metricUnknown, help: helpUnknown, extra: unknown},
		{name: metricCascade, help: helpCascade, extra: []string{""}},
		{name: metricAutoPrune, help: helpAutoPrune, extra: []string{""}},
	}
	first := 0
	for i := range fs {
		fs[i].first = first
		first += len(fs[i].extra)
	}
	if first != seriesPerApp {
		panic("the per-app families do not add up to seriesPerApp")
	}
	return fs
}()

// writeText writes every app's series, family by family, apps in the order of their keys.
func (c *appSeries) writeText(w *bufio.Writer) error {
	c.mu.RLock()
	apps := make([]*appValues, 0, len(c.apps))
	for _, v := range c.apps {
		apps = append(apps, v)
	}
	c.mu.RUnlock()
	if len(apps) == 0 {
		// As the registry did: a family without series is not written.
		return w.Flush()
	}
	slices.SortFunc(apps, func(a, b *appValues) int { return strings.Compare(a.key, b.key) })
	var num []byte
	for _, f := range appFamilies {
		w.WriteString("# HELP " + f.name + " ")
		helpEscaper.WriteString(w, f.help)
		w.WriteString("\n# TYPE " + f.name + " gauge\n")
		for _, v := range apps {
			labels := v.appLabels
			if f.pruning {
				labels = v.pruningLabels
			}
			for k, extra := range f.extra {
				w.WriteString(f.name)
				w.WriteByte('{')
				w.WriteString(labels)
				w.WriteString(extra)
				w.WriteString("} ")
				num = appendValue(num[:0], v.values[f.first+k])
				num = append(num, '\n')
				if _, err := w.Write(num); err != nil {
					return err
				}
			}
		}
	}
	return w.Flush()
}

// The text format's escaping: of help text, backslash and newline; of a label value, the double
// quote too.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// labelText is name="value",… of the pairs given, values escaped.
func labelText(pairs ...string) string {
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[i])
		b.WriteString(`="`)
		labelEscaper.WriteString(&b, pairs[i+1])
		b.WriteByte('"')
	}
	return b.String()
}

// appendValue writes a sample's value as the text format writes it.
func appendValue(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// ServeHTTP serves /metrics in the text format: the registry's families (the watch's own metrics,
// the Go runtime's and the process's), encoded by the client library, then the per-app series,
// gzipped when the scraper accepts it (Prometheus does). A scraper that asks for the protobuf
// format gets text, which every Prometheus reads.
func (m *Metrics) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	families, err := m.Registry.Gather()
	if err != nil {
		http.Error(rw, "gathering the watch's own metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	format := expfmt.Negotiate(req.Header)
	if format.FormatType() != expfmt.TypeTextPlain {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	rw.Header().Set("Content-Type", string(format))
	var out io.Writer = rw
	if acceptsGzip(req.Header) {
		rw.Header().Set("Content-Encoding", "gzip")
		rw.Header().Add("Vary", "Accept-Encoding")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(rw)
		defer func() {
			gz.Close()
			gzipWriters.Put(gz)
		}()
		out = gz
	}
	w := bufio.NewWriterSize(out, 64<<10)
	enc := expfmt.NewEncoder(w, format)
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return // the scraper went away; nothing to tell it
		}
	}
	_ = m.apps.writeText(w)
}

// gzipWriters are reused: a gzip.Writer holds about 1 MiB of state.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// acceptsGzip reports whether an Accept-Encoding header lists gzip (without q=0).
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
