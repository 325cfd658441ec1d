package exposition

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names follow Prometheus's conventions: the unprune_ namespace, gauges named for what they
// count, counters ending in _total, durations in seconds. Labels are per Application, never per
// object: an app contributes a fixed number of series (seriesPerApp) however many rows it has.
const (
	metricPruning    = "unprune_resources_requiring_pruning"
	metricUnguarded  = "unprune_unguarded_prune_candidates"
	metricUnknown    = "unprune_unknown_guard_prune_candidates"
	metricCascade    = "unprune_cascade_high_risk_resources"
	metricAutoPrune  = "unprune_application_auto_prune"
	metricAge        = "unprune_evaluation_age_seconds"
	metricErrors     = "unprune_evaluation_errors_total"
	metricLeader     = "unprune_leader"
	metricEvaluated  = "unprune_evaluations_total"
	metricDuration   = "unprune_evaluation_duration_seconds"
	metricApps       = "unprune_applications_watched"
	metricRequests   = "unprune_kubernetes_requests_total"
	metricEventsSent = "unprune_events_total"
	metricEventsLost = "unprune_events_dropped_total"
	metricInfErrors  = "unprune_informer_errors_total"
	metricInfHealthy = "unprune_informer_healthy"
	metricResync     = "unprune_resync_period_seconds"
	metricStale      = "unprune_live_answer_stale_seconds"
)

// The per-app families' help.
const (
	helpPruning   = "Resources of an Argo CD Application that require pruning (a sync with prune deletes them), by risk of the deletion."
	helpUnguarded = "Resources a prune would delete that no hard guard stops (audit's answer), by risk; when=now: they require pruning; when=removed_from_git: the app prunes automatically; when=app_deleted: the Application itself, which its parent app or ApplicationSet may delete with high-risk resources through its finalizer."
	helpUnknown   = "Resources a prune would delete (when=now or removed_from_git) whose guards could not be read — destination unreachable, the object's or unprune's admission policy's read failed with no earlier answer to fall back on — by risk: counted neither as guarded nor as unguarded."
	helpCascade   = "High-risk resources that deleting the Application would delete with it (it has Argo CD's resources finalizer), leaving out those an owner, Delete=false, helm's keep policy or unprune's admission policy keeps; 0 without the finalizer."
	helpAutoPrune = "1 when the Application's automated sync prunes (spec.syncPolicy.automated with prune: true, enabled), else 0: its next sync deletes what requires pruning, with no one pressing a button."
)

// seriesPerApp is how many series one Application adds: both risks of resources requiring pruning,
// both risks of each "when" of unguarded candidates, both risks of candidates whose guards are
// unknown, its cascade gauge and its automated-prune gauge.
const seriesPerApp = 2 + 2*3 + 2 + 1 + 1

// Metrics are the watch's Prometheus metrics: its own, the Go runtime's and the process's in a
// registry of their own (no global state), and the per-app series, which it writes itself (appSeries).
// It serves them all as an http.Handler.
type Metrics struct {
	Registry *prometheus.Registry

	apps      *appSeries
	errors    *prometheus.CounterVec
	evaluated prometheus.Counter
	duration  prometheus.Histogram
	leader    prometheus.Gauge
	requests  *prometheus.CounterVec
	events    *prometheus.CounterVec
	lost      prometheus.Counter
	infErrors *prometheus.CounterVec
	healthy   *prometheus.GaugeVec
	resync    prometheus.Gauge

	mu sync.Mutex
	// labels remembers each app's label values, to delete exactly its series when it goes away or
	// its project or destination changes.
	labels map[string]appLabels
	// evaluatedAt is when each app was last evaluated, for the age gauge.
	evaluatedAt map[string]time.Time
	now         func() time.Time
	// staleSince is when the oldest last good answer served in place of a failing read was read
	// (zero: none); nil until the watch sets it (SetStaleSince).
	staleSince func() time.Time
}

type appLabels struct{ namespace, name, project, destination string }

// NewMetrics registers the watch's metrics, the Go runtime's and the process's.
func NewMetrics(now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		apps:     newAppSeries(),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricErrors,
			Help: "Evaluations that failed (stage=evaluate) or rows whose live object could not be read (stage=live_object)."},
			[]string{"stage"}),
		evaluated: prometheus.NewCounter(prometheus.CounterOpts{Name: metricEvaluated, Help: "Application evaluations done."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricDuration, Help: "Time to evaluate one Application.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLeader, Help: "1 when this replica holds the lease and emits Events, else 0."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricRequests,
			Help: "Requests this process sent to the Kubernetes API, by HTTP method, resource and status code: the proof it only writes Events and its Lease."},
			[]string{"method", "resource", "code"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricEventsSent,
			Help: "Kubernetes Events the API server accepted, by reason."}, []string{"reason"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: metricEventsLost,
			Help: "Events still undelivered when the process stopped (the flush at SIGTERM ran out of time)."}),
		infErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricInfErrors,
			Help: "Failed LISTs and WATCHes of an informer (namespace/resource, or resource when cluster-wide): while they fail, what it holds goes stale."},
			[]string{"informer"}),
		healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricInfHealthy,
			Help: "1 when an informer's last LIST or WATCH succeeded, 0 from its start until its first success and after a failure."},
			[]string{"informer"}),
		resync: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricResync,
			Help: "The resync period: every app is re-evaluated at least this often (jittered up to 1.2 times), so unprune_evaluation_age_seconds well above it means evaluations are stuck."}),
		labels:      map[string]appLabels{},
		evaluatedAt: map[string]time.Time{},
		now:         now,
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricAge,
		Help: "Age of the oldest Application evaluation: how stale the other metrics can be."}, m.oldestAge)
	apps := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricApps, Help: "Applications evaluated and shown in the metrics."}, m.appCount)
	stale := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricStale,
		Help: "Age of the oldest last good answer served in place of a live read that keeps failing (0: every answer is fresh): how old the guards the metrics show can be."}, m.staleAge)
	m.Registry.MustRegister(m.errors, m.evaluated, m.duration, m.leader, m.requests, m.events, m.lost,
		m.infErrors, m.healthy, m.resync, age, apps, stale,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, stage := range []string{"evaluate", "live_object"} {
		m.errors.WithLabelValues(stage)
	}
	return m
}

// Set replaces an app's series with its summary's. The lock guards only the bookkeeping: the
// registry is never called under it, because a scrape runs the gauge functions (which take it) while
// it holds the collectors' locks — calling them under this lock deadlocks with a scrape. Calls for
// one app never overlap: the workqueue hands a key to one worker at a time.
func (m *Metrics) Set(key string, s Summary, took time.Duration) {
	l := appLabels{namespace: s.Namespace, name: s.Name, project: s.Project, destination: s.Destination}
	m.mu.Lock()
	m.labels[key] = l
	m.evaluatedAt[key] = m.now()
	m.mu.Unlock()
	m.apps.set(key, l, s)
	m.evaluated.Inc()
	m.duration.Observe(took.Seconds())
	if s.LiveErrors > 0 {
		m.errors.WithLabelValues("live_object").Add(float64(s.LiveErrors))
	}
}

// Delete removes every series of an app that is gone.
func (m *Metrics) Delete(key string) {
	m.mu.Lock()
	_, ok := m.labels[key]
	delete(m.labels, key)
	delete(m.evaluatedAt, key)
	m.mu.Unlock()
	if ok {
		m.apps.delete(key)
	}
}

// EvaluationFailed counts an evaluation that could not be done.
func (m *Metrics) EvaluationFailed() { m.errors.WithLabelValues("evaluate").Inc() }

// SetLeader shows whether this replica leads.
func (m *Metrics) SetLeader(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.Set(v)
}

// EventSent counts an Event the API server accepted.
func (m *Metrics) EventSent(reason string) { m.events.WithLabelValues(reason).Inc() }

// EventsLost counts Events the process could not deliver before it stopped.
func (m *Metrics) EventsLost(n int) { m.lost.Add(float64(n)) }

// InformerStarted shows an informer as not yet healthy: nothing listed yet.
func (m *Metrics) InformerStarted(name string) {
	m.infErrors.WithLabelValues(name)
	m.healthy.WithLabelValues(name).Set(0)
}

// InformerOK records a LIST or WATCH that succeeded.
func (m *Metrics) InformerOK(name string) { m.healthy.WithLabelValues(name).Set(1) }

// InformerFailed records a LIST or WATCH that failed.
func (m *Metrics) InformerFailed(name string) {
	m.infErrors.WithLabelValues(name).Inc()
	m.healthy.WithLabelValues(name).Set(0)
}

// InformerStopped drops the health of an informer the watch stopped on purpose (RBAC without
// watch on a guard kind: guards then show within the TTL), keeping its error count.
func (m *Metrics) InformerStopped(name string) { m.healthy.DeleteLabelValues(name) }

// SetResync shows the resync period.
func (m *Metrics) SetResync(d time.Duration) { m.resync.Set(d.Seconds()) }

// SetStaleSince wires the stale-answer gauge to the watch's caches: since is when the oldest last
// good answer they serve in place of a failing read was read (zero: none). The caches are built
// after the metrics, which count their requests: hence a setter rather than an argument of
// NewMetrics.
func (m *Metrics) SetStaleSince(since func() time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.staleSince = since
}

// staleAge calls staleSince outside the lock: it takes the caches' own.
func (m *Metrics) staleAge() float64 {
	m.mu.Lock()
	since := m.staleSince
	m.mu.Unlock()
	if since == nil {
		return 0
	}
	at := since()
	if at.IsZero() {
		return 0
	}
	return m.now().Sub(at).Seconds()
}

// Request counts one request to the Kubernetes API.
func (m *Metrics) Request(method, resource string, code int) {
	m.requests.WithLabelValues(method, resource, codeLabel(code)).Inc()
}

func codeLabel(code int) string {
	if code == 0 {
		return "error"
	}
	return strconv.Itoa(code)
}

func (m *Metrics) oldestAge() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	oldest := 0.0
	for _, at := range m.evaluatedAt {
		if age := now.Sub(at).Seconds(); age > oldest {
			oldest = age
		}
	}
	return oldest
}

func (m *Metrics) appCount() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(len(m.labels))
}
