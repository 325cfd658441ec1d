package watch

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/version"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// manager is one running watch, shaped as controller-runtime's Manager: it owns the clients, the
// caches (the informers of Applications, argocd-cm, AppProjects and cluster Secrets — sources.go —
// and the live read cache, package readcache), the workers that hand each queued app to the
// reconciler (lanes.go, reconciler.go), the exposition (package exposition), the servers (metrics,
// profiles, the admission webhook of package admission: budget.go) and the leader election.
type manager struct {
	cfg     Config
	log     *logger
	metrics *exposition.Metrics
	events  *exposition.Events
	argo    *readcache.ArgoCD
	kube    kubernetes.Interface
	// leases is the Lease's own client: its own connection, a timeout, its own rate limit.
	leases kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
	// listers are the apps listing each object whose guards the watch watches.
	listers *listers
	queue   workqueue.TypedRateLimitingInterface[string]
	// lanes evaluate the apps of the other destinations, one queue each (lanes.go).
	lanes *lanes
	ns    appNamespaces

	apps []cache.SharedIndexInformer
	// informed makes the Applications the apps' informers hold compact, with the table of strings
	// their rows share.
	informed         readcache.Apps
	settingsInformer cache.SharedIndexInformer
	projects         cache.SharedIndexInformer
	// destinations reach the other clusters (nil: none may be reached); clusterSecrets is the
	// informer of Argo CD's cluster Secrets they resolve through (clusters.go).
	destinations   *kube.Destinations
	clusterSecrets cache.SharedIndexInformer

	// settings are argocd-cm as last read; the reconciler judges every app by them.
	settings argoSettings
	// reconciler judges the apps the workers take from the queues (serve sets it up).
	reconciler *reconciler
}

// newManager builds the clients (every request counted) and the informers. The informers' clients
// have no timeout (a WATCH lasts up to --watch-timeout); every other request — live reads, in every
// destination, Events, settings — times out after --request-timeout. Both share one rate limit.
func newManager(ctx context.Context, cfg Config, m *exposition.Metrics, log *logger) (*manager, error) {
	count := func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, metrics: m} }
	limiter := flowcontrol.NewTokenBucketRateLimiter(cfg.REST.QPS, cfg.REST.Burst)
	informing := rest.CopyConfig(cfg.REST)
	informing.Timeout, informing.RateLimiter = 0, limiter
	reading := rest.CopyConfig(cfg.REST)
	reading.Timeout, reading.RateLimiter = cfg.RequestTimeout, limiter
	opts := kube.Options{QPS: cfg.REST.QPS, Burst: cfg.REST.Burst, WrapTransport: count, Uncounted: cfg.uncounted()}
	clients, err := kube.NewClients(informing, clusterInfo(), nil, opts)
	if err != nil {
		return nil, err
	}
	readClients, err := kube.NewClients(reading, clusterInfo(), nil, opts)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(readClients.Config)
	if err != nil {
		return nil, err
	}
	leases, err := kubernetes.NewForConfig(leaseConfig(cfg, count))
	if err != nil {
		return nil, err
	}
	management := kube.NewObjects(readClients, kube.FieldManager)
	argo := &kube.ArgoCD{Objects: management, Ns: cfg.ArgoCDNamespace}
	mgr := &manager{
		cfg: cfg, log: log, metrics: m, kube: kc, leases: leases, dyn: clients.Dynamic, meta: clients.Metadata, listers: newListers(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "applications"}),
	}
	if len(cfg.ClusterContexts) > 0 || cfg.ArgoCDCredentials {
		// Each destination's own clients: their own rate limit, and a timeout on every request.
		destOpts := kube.Options{QPS: cfg.REST.QPS, Burst: cfg.REST.Burst, WrapTransport: count, Timeout: cfg.RequestTimeout, Uncounted: opts.Uncounted}
		mgr.destinations = &kube.Destinations{Management: management, Namespace: cfg.ArgoCDNamespace, Contexts: cfg.ClusterContexts,
			ArgoCDCredentials: cfg.ArgoCDCredentials, FromContext: cfg.FromContext, Options: destOpts, FieldManager: kube.FieldManager}
		argo.Destinations = mgr.destinations
	}
	if mgr.cfg.Version == nil {
		v, note := argo.DetectVersion(ctx)
		if note != "" {
			log.printf("warning: %s", note)
		}
		mgr.cfg.Version = v
	}
	if err := mgr.resolveNamespaces(ctx); err != nil {
		return nil, err
	}
	mgr.argo = readcache.New(argo, readcache.Options{Size: cfg.CacheSize, TTL: cfg.CacheTTL, MaxBytes: cfg.CacheBytes, Now: cfg.Now,
		Informed: mgr.informedApplication})
	mgr.informers()
	return mgr, nil
}

// uncountedKinds are left out of a Namespace's count unless CountAllKinds: a cluster-wide list of
// Pods (their specs), ConfigMaps and Secrets (their data) reads far more than the watch needs,
// only for a number in an Event's text.
var uncountedKinds = []schema.GroupResource{{Resource: "pods"}, {Resource: "configmaps"}, {Resource: "secrets"}}

const uncountedText = "Pods, ConfigMaps and Secrets"

func (c Config) uncounted() []schema.GroupResource {
	if c.CountAllKinds {
		return nil
	}
	return uncountedKinds
}

// leaseConfig is the Lease client's: a renewal must not wait behind the reads of 2,000 apps or a
// burst of Events in the shared client's rate limiter, nor hang on a connection that stopped
// answering. Its own dialer gives it its own connection (client-go shares a transport between
// configs that only differ in timeouts); each request times out at half the renew deadline, which
// leaves one retry before the leader gives up the lead; 5 requests per second (burst 10) is ten
// times what renewing every retry period needs.
func leaseConfig(cfg Config, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	c := rest.CopyConfig(cfg.REST)
	c.QPS, c.Burst = 5, 10
	c.Timeout = cfg.RenewDeadline / 2
	if c.Timeout <= 0 {
		c.Timeout = DefaultRenewDeadline / 2
	}
	c.Dial = (&net.Dialer{Timeout: c.Timeout, KeepAlive: 30 * time.Second}).DialContext
	c.UserAgent = version.UserAgent() + " (lease)"
	c.Wrap(wrap)
	return c
}

// resolveNamespaces reads application.namespaces unless the flag said.
func (mgr *manager) resolveNamespaces(ctx context.Context) error {
	mgr.ns = appNamespaces{argocd.AppNamespaces{ArgoCD: mgr.cfg.ArgoCDNamespace, Patterns: mgr.cfg.AppNamespaces}}
	if mgr.cfg.AppNamespaces != nil {
		return nil
	}
	cm, err := mgr.kube.CoreV1().ConfigMaps(mgr.cfg.ArgoCDNamespace).Get(ctx, argocd.CmdParamsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s/%s (%s): %mgr; or pass %v", mgr.cfg.ArgoCDNamespace, argocd.CmdParamsConfigMap, argocd.ParamAppNamespaces, err, option.AppNamespaces)
	}
	mgr.ns.Patterns = argocd.SplitList(cm.Data[argocd.ParamAppNamespaces])
	return nil
}

// EventComponent is the source of the Events the watch emits.
const EventComponent = "unprune-watch"

func clusterInfo() cluster.Info {
	return cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, Via: cluster.ViaKubeconfig}
}

// logger writes timestamped lines; one mutex keeps concurrent lines whole.
type logger struct {
	mu  sync.Mutex
	out io.Writer
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "%s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// flushTimeout bounds how long a replica stopping (SIGTERM) keeps sending the Events still queued,
// holding its Lease meanwhile so that the next leader does not send them too; the Deployment's
// terminationGracePeriodSeconds (30 s by default) leaves room for it.
const flushTimeout = 10 * time.Second

// Run watches until ctx is done (SIGTERM), then stops: it stops evaluating, flushes its queued
// Events (for at most flushTimeout), releases its Lease and closes the metrics server. It returns an
// error only when it cannot start.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	log := &logger{out: cfg.Log}
	if cfg.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		log.printf("Go memory limit %d MiB", limit>>20)
	}
	if cfg.GCPercent > 0 {
		debug.SetGCPercent(cfg.GCPercent)
		log.printf("Go GC percent %d (GOGC; set it in the environment to change it)", cfg.GCPercent)
	}
	m := exposition.NewMetrics(cfg.Now)
	w, err := newManager(ctx, cfg, m, log)
	if err != nil {
		return err
	}
	events := w.kube.CoreV1()
	w.events = exposition.NewEvents(func(ctx context.Context, ev *corev1.Event) error {
		_, err := events.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		return err
	}, w.listEvents, exposition.EventOptions{Source: corev1.EventSource{Component: EventComponent, Host: cfg.Identity},
		Sent: m.EventSent, Log: log.printf})
	m.SetResync(cfg.Resync)
	m.SetStaleSince(w.argo.OldestStale)

	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen on %v %s: %w", option.MetricsBindAddress, cfg.MetricsAddr, err)
	}
	var ready atomic.Bool
	srv := &http.Server{Handler: w.mux(&ready), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.printf("serving metrics on http://%s/metrics (identity %s, Argo CD in %s, Applications in %v)", ln.Addr(), cfg.Identity, cfg.ArgoCDNamespace, w.ns.informerNamespaces())

	var profiles *http.Server
	if cfg.PprofAddr != "" {
		pl, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("listen on %v %s: %w", option.PprofBindAddress, cfg.PprofAddr, err)
		}
		profiles = &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = profiles.Serve(pl) }()
		log.printf("serving Go profiles on http://%s/debug/pprof/", pl.Addr())
	}

	webhook, err := w.serveBudget()
	if err != nil {
		_ = srv.Close()
		if profiles != nil {
			_ = profiles.Close()
		}
		return err
	}

	w.serve(ctx, &ready)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if webhook != nil {
		_ = webhook.Shutdown(shutdown)
	}
	if profiles != nil {
		_ = profiles.Shutdown(shutdown)
	}
	log.printf("stopped")
	return nil
}

// serve runs the informers, the workers, the Event sender and — once every informer has synced and
// argocd-cm was read, never before — the election, until ctx is done; then it stops them in order:
// evaluations first, then the queued Events are flushed while this replica still holds the Lease,
// and only then is the Lease released (so the next leader neither misses nor repeats them).
func (mgr *manager) serve(ctx context.Context, ready *atomic.Bool) {
	sendCtx, stopSending := context.WithCancel(context.WithoutCancel(ctx))
	leadCtx, stopLeading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSending()
	defer stopLeading()
	synced := make(chan struct{})
	var wg, sender, leading sync.WaitGroup
	mgr.reconciler = mgr.newReconciler()
	mgr.lanes = newLanes(mgr, ctx, &wg, mgr.cfg.Workers)
	mgr.start(ctx, &wg, ready, synced)
	sender.Add(1)
	go func() { defer sender.Done(); mgr.events.Run(sendCtx) }()
	leading.Add(1)
	go func() {
		defer leading.Done()
		select {
		case <-synced:
		case <-ctx.Done():
			return
		}
		if mgr.cfg.LeaderElect {
			mgr.lead(leadCtx)
		} else {
			mgr.becomeLeader(leadCtx)
		}
	}()
	<-ctx.Done()
	mgr.queue.ShutDown()
	mgr.lanes.shutDown()
	wg.Wait()
	stopSending()
	sender.Wait()
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	left := mgr.events.Deliver(flush)
	cancel()
	if left > 0 {
		mgr.metrics.EventsLost(left)
		mgr.log.printf("error: %d Events not sent within %s of stopping", left, flushTimeout)
	}
	stopLeading()
	leading.Wait()
}

// start runs the informers and, once they have synced and argocd-cm was read, the workers; then it
// closes synced.
func (mgr *manager) start(ctx context.Context, wg *sync.WaitGroup, ready *atomic.Bool, synced chan<- struct{}) {
	informers := mgr.informersToRun()
	for _, inf := range informers {
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	}

	// Not waited for: the guards' informers only make changes show sooner.
	mgr.watchGuards(ctx, wg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		started := time.Now()
		var hasSynced []cache.InformerSynced
		for _, inf := range informers {
			hasSynced = append(hasSynced, inf.HasSynced)
		}
		if !cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
			return
		}
		mgr.defaultSettings()
		mgr.log.printf("informers synced in %s: %d Applications", time.Since(started).Round(time.Millisecond), mgr.queue.Len())
		ready.Store(true)
		close(synced)
		var workers sync.WaitGroup
		for i := 0; i < mgr.cfg.Workers; i++ {
			workers.Add(1)
			go func() { defer workers.Done(); mgr.work(ctx, inClusterLane, mgr.queue) }()
		}
		workers.Wait()
	}()
}

// pprofMux serves net/http/pprof's handlers on a mux of their own (the package registers them on
// http.DefaultServeMux, which nothing here serves).
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (mgr *manager) mux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", mgr.metrics)
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if !ready.Load() || mgr.settings.tracking() == nil {
			http.Error(rw, "informers not synced yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ok")
	})
	return mux
}

// lead takes part in the election until ctx is done; a replica that loses the lease goes back to
// following (it keeps serving metrics) and stands again. The Lease has a client of its own
// (leaseClient): its requests time out, and neither a burst of reads nor 100 Events queue them.
func (mgr *manager) lead(ctx context.Context) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: mgr.cfg.LeaseNamespace, Name: mgr.cfg.LeaseName},
		Client:     mgr.leases.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: mgr.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: mgr.cfg.LeaseDuration, RenewDeadline: mgr.cfg.RenewDeadline, RetryPeriod: mgr.cfg.RetryPeriod,
			// On SIGTERM the lease is given up at once (after the Events are flushed), so the next
			// leader need not wait it out.
			ReleaseOnCancel: true,
			Name:            mgr.cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: mgr.becomeLeader,
				OnStoppedLeading: mgr.stopLeading,
				OnNewLeader:      func(id string) { mgr.log.printf("leader is %s", id) },
			},
		})
		if err != nil {
			mgr.log.printf("error: leader election: %v", err)
			return
		}
		le.Run(ctx)
	}
}

// becomeLeader starts emitting Events, first those this replica saw while following that no Event
// says yet.
func (mgr *manager) becomeLeader(context.Context) {
	mgr.log.printf("leading as %s: emitting Events", mgr.cfg.Identity)
	mgr.metrics.SetLeader(true)
	mgr.events.SetLeading(true)
}

func (mgr *manager) stopLeading() {
	mgr.log.printf("stopped leading")
	mgr.metrics.SetLeader(false)
	mgr.events.SetLeading(false)
}

func (mgr *manager) now() time.Time {
	if mgr.cfg.Now != nil {
		return mgr.cfg.Now()
	}
	return time.Now()
}

// listEvents reads the messages of an object's Events with a reason.
func (mgr *manager) listEvents(ctx context.Context, namespace string, uid types.UID, reason string) ([]string, error) {
	list, err := mgr.kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(uid) + ",reason=" + reason,
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, e.Message)
	}
	return out, nil
}
