// Package watch is `unprune watch`: a long-running, read-only process that keeps, for every Argo CD
// Application, what a prune would delete — how many of its resources require pruning and how risky
// that is, which of those prunes nothing guards, and whether deleting the app cascades into
// high-risk resources — as Prometheus metrics, and announces the dangerous transitions as
// Kubernetes Events on the Application. It reuses audit's judgement, re-evaluating one app per
// change from informers, with live reads through a bounded cache; with --deletion-budget it is
// also the admission webhook that bounds what Argo CD's controllers delete.
//
// It is shaped as a controller-runtime controller, without the dependency: a manager (manager.go:
// clients, caches, servers, leader election), sources and their handlers (sources.go, guards.go,
// clusters.go, family.go), workers per destination (lanes.go) and a reconciler with one method
// (reconciler.go). The read cache (readcache), what the watch shows (exposition) and the webhook
// (admission) are packages of their own.
package watch

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/option"
)

// Config is everything Run needs; the command line fills it from flags.
type Config struct {
	// REST reaches the cluster Argo CD runs in (a kubeconfig, or the pod's ServiceAccount).
	REST *rest.Config
	// ArgoCDNamespace is where argocd-cm, argocd-cmd-params-cm and the AppProjects live.
	ArgoCDNamespace string
	// Version is the Argo CD version when the user said it; nil detects it from the controller.
	Version *argocd.Version
	// AppNamespaces are the namespaces (Argo CD's patterns: globs, /regexps/) Applications are
	// watched in besides Argo CD's own; nil reads application.namespaces from argocd-cmd-params-cm.
	AppNamespaces []string

	// Destination clusters other than the one Argo CD runs in: reached by a kubeconfig context
	// mapped to Argo CD's name or server URL for them (FromContext builds its client), or, when
	// ArgoCDCredentials allows it, with the credentials of Argo CD's cluster Secrets (which the
	// watch's ServiceAccount must then be allowed to list). Without either, their rows' guards are
	// unknown.
	ClusterContexts   map[string]string
	FromContext       func(context string) (*rest.Config, error)
	ArgoCDCredentials bool

	// MetricsAddr serves /metrics, /healthz and /readyz.
	MetricsAddr string
	// PprofAddr, when set, serves Go's profiles (/debug/pprof/) on a listener of its own, never on
	// the metrics port: a heap profile names who holds memory, and the port the Service and the
	// NetworkPolicy open must not hand it to whoever can scrape.
	PprofAddr string

	// LeaderElect makes replicas elect one leader on a Lease, which alone emits Events. Without it
	// this process emits Events itself (a single replica).
	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
	Identity       string
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration

	// Resync re-evaluates every app this often even when nothing changed (live objects' guards are not
	// watched), each app at its own time (jittered ±20%); Workers evaluate apps in parallel.
	Resync  time.Duration
	Workers int
	// WatchTimeout bounds each informer's WATCH (client-go's 5–10 minutes when zero): the API server
	// keeps a running watch going after its permission is revoked, so a lost permission shows in
	// unprune_informer_healthy at the next watch, within this.
	WatchTimeout time.Duration
	// RequestTimeout bounds every request but the informers' (live reads in every destination,
	// Events, settings): a destination that stops answering fails a read after it, which the watch
	// then answers with the last good answer or as unknown. 0: no timeout.
	RequestTimeout time.Duration
	// CountAllKinds counts Pods, ConfigMaps and Secrets too in a Namespace's contents, which needs
	// a cluster-wide list of them (deploy/components/exact-counts); without it they are left out,
	// never asked for, and the Event's count says so.
	CountAllKinds bool
	// CacheSize bounds the live objects kept, CacheBytes their estimated bytes (each destination
	// cluster's); CacheTTL is how long one is trusted.
	CacheSize  int
	CacheBytes int64
	CacheTTL   time.Duration

	// MemoryLimit, when positive, is the Go runtime's soft memory limit (GOMEMLIMIT): the garbage
	// collector works harder as the heap nears it instead of letting it grow to twice what is live.
	MemoryLimit int64
	// GCPercent, when positive, is the Go collector's target percentage (GOGC): how far the heap may
	// grow past what is live before a collection.
	GCPercent int

	// DeletionBudget, when not nil, serves the deletion budget's admission webhook (package
	// admission) on AdmissionAddr with TLS from TLSCertFile and TLSKeyFile (read again when they
	// change, as cert-manager rotates them): the most objects one operation of Argo CD's controller
	// may delete without approval, for apps and projects that set no budget of their own.
	DeletionBudget *int
	AdmissionAddr  string
	TLSCertFile    string
	TLSKeyFile     string
	// BudgetUsers are the users whose DELETEs the webhook judges (default: Argo CD's application
	// controller's ServiceAccount in ArgoCDNamespace).
	BudgetUsers []string

	// Log receives one line per notable thing (start, leadership, errors).
	Log io.Writer
	Now func() time.Time
}

// Defaults for the flags.
const (
	DefaultMetricsAddr    = "127.0.0.1:8080"
	DefaultAdmissionAddr  = ":9443"
	DefaultLeaseName      = "unprune-watch"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultResync         = 10 * time.Minute
	DefaultWatchTimeout   = 2 * time.Minute
	DefaultRequestTimeout = 10 * time.Second
	DefaultQPS            = 50
	DefaultBurst          = 100
	DefaultWorkers        = 4
	// DefaultCacheSize holds the 500,000 objects of 10,000 apps × 50 rows: with 100,000, each
	// evaluation at that size found its objects evicted and listed its namespace again (12,500
	// ConfigMaps), and the watch judged about 4 apps a second; with 500,000 it judged all 10,000 in
	// 75 s (docs/watch.md, "Scale").
	DefaultCacheSize = 500000
	// DefaultCacheBytes holds those 500,000 objects with one annotation each (about 275 bytes apiece
	// as the cache keeps them, estimated), about 330,000 with a handful of labels and annotations
	// (about 500), and stops objects carrying large annotations from taking more.
	DefaultCacheBytes = 160 << 20
	DefaultCacheTTL   = 30 * time.Second
)

// MemoryLimitEnv is the container's memory limit in bytes, which deploy/ passes with the downward
// API (resourceFieldRef limits.memory); memoryLimitShare of it is the heap's soft limit, the rest
// left to goroutine stacks, the runtime's own structures and what the collector frees late.
const (
	MemoryLimitEnv   = "UNPRUNE_MEMORY_LIMIT"
	memoryLimitShare = 0.9
)

// MemoryLimitFrom is the soft memory limit to set from the environment: none when GOMEMLIMIT is
// set (the Go runtime has read it: an explicit setting wins), else memoryLimitShare of
// UNPRUNE_MEMORY_LIMIT when it is a positive number of bytes.
func MemoryLimitFrom(getenv func(string) string) (int64, error) {
	v := getenv(MemoryLimitEnv)
	if getenv("GOMEMLIMIT") != "" || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes (the downward API's limits.memory), or unset it", MemoryLimitEnv, v)
	}
	return int64(float64(n) * memoryLimitShare), nil
}

// DefaultGCPercent is the watch's GOGC unless the environment sets one. Go's default, 100, lets
// the heap grow to twice what is live before collecting, and the runtime keeps what it grew to: for
// a daemon that holds a steady cache and idles between evaluations, 50 keeps a third less memory
// for a little more collection (BenchmarkWatch at 2,000 apps: peak RSS 176 → 148 MiB, start to
// every app evaluated 5.4 → 6.4 s, p95 change → metric unchanged; docs/watch.md).
const DefaultGCPercent = 50

// GCPercentFrom is the collector's percentage to set: none when GOGC is set (the Go runtime has read
// it: an explicit setting wins), else DefaultGCPercent.
func GCPercentFrom(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		return 0
	}
	return DefaultGCPercent
}

// Validate checks what flags cannot.
func (c *Config) Validate() error {
	switch {
	case c.REST == nil:
		return fmt.Errorf("no cluster to watch: pass %v, or run in a pod with a ServiceAccount", option.Kubeconfig)
	case c.ArgoCDNamespace == "":
		return fmt.Errorf("Argo CD's namespace is unknown: pass %v", option.ArgoCDNamespace)
	case c.LeaderElect && c.LeaseNamespace == "":
		return fmt.Errorf("the Lease needs a namespace: pass %s (in a pod, the pod's namespace is the default)", option.Namespace.Both())
	case c.LeaderElect && !(c.LeaseDuration > c.RenewDeadline && c.RenewDeadline > c.RetryPeriod && c.RetryPeriod > 0):
		return fmt.Errorf("leader election needs %v > %v > %v > 0 (got %s, %s, %s)",
			option.LeaseDuration, option.RenewDeadline, option.RetryPeriod, c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	case c.Workers <= 0 || c.CacheSize <= 0 || c.CacheBytes <= 0 || c.CacheTTL <= 0 || c.Resync <= 0:
		return fmt.Errorf("%v, %v, %v, %v and %v must be positive", option.Workers, option.LiveCacheSize, option.LiveCacheBytes, option.LiveCacheTTL, option.ResyncPeriod)
	case c.RequestTimeout < 0:
		return fmt.Errorf("%v must not be negative (got %s)", option.RequestTimeout, c.RequestTimeout)
	case c.DeletionBudget != nil && *c.DeletionBudget < 0:
		return fmt.Errorf("%v must be 0 or more (got %d): the most objects one operation of Argo CD may delete without approval", option.DeletionBudget, *c.DeletionBudget)
	case c.DeletionBudget != nil && (c.TLSCertFile == "" || c.TLSKeyFile == ""):
		return fmt.Errorf("%v serves an admission webhook, which the API server reaches only over TLS: pass %v and %v (deploy/components/deletion-budget mounts cert-manager's Secret there)",
			option.DeletionBudget, option.TLSCertFile, option.TLSPrivateKeyFile)
	case c.DeletionBudget == nil && (c.TLSCertFile != "" || c.TLSKeyFile != ""):
		return fmt.Errorf("%v and %v serve the deletion budget's webhook: pass %v too", option.TLSCertFile, option.TLSPrivateKeyFile, option.DeletionBudget)
	case c.WatchTimeout < 0 || (c.WatchTimeout > 0 && c.WatchTimeout < 2*time.Second):
		return fmt.Errorf("%v must be 0 or at least 2s (got %s)", option.WatchTimeout, c.WatchTimeout)
	}
	return nil
}
