// Package expositiontest reads what package exposition shows the way its readers do — Prometheus
// scraping /metrics, an API server storing Events — for the tests of exposition and of the watch
// that feeds it.
package expositiontest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Recorder is an API server's Events as the watch writes them: Sent are the Warning ones ("reason:
// message"), Normal the Normal ones. While Fail is positive it refuses that many writes, as an
// overloaded etcd does; an Event whose name it has stored already is refused as AlreadyExists.
// Read Sent and Normal only when no write is under way.
type Recorder struct {
	mu     sync.Mutex
	Sent   []string
	Normal []string
	Fail   int
	names  map[string]bool
}

// Write is an exposition.EventWriter.
func (r *Recorder) Write(_ context.Context, ev *corev1.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Fail > 0 {
		r.Fail--
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
		r.Normal = append(r.Normal, line)
	} else {
		r.Sent = append(r.Sent, line)
	}
	return nil
}

// Scrape reads the metrics as Prometheus does: the handler's text, parsed.
func Scrape(t testing.TB, metrics http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
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

// Value is the value of the gauge or counter name whose labels include want; the test fails when
// there is no such series.
func Value(t testing.TB, metrics http.Handler, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := Find(t, metrics, name, want)
	if !ok {
		t.Fatalf("no %s%v", name, want)
	}
	return v
}

// Find is the value of the series of name whose labels include want, if there is one.
func Find(t testing.TB, metrics http.Handler, name string, want map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range Scrape(t, metrics) {
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
