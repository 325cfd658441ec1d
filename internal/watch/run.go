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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/watch/exposition"
)

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
	w, err := newWatcher(ctx, cfg, m, log)
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
func (w *watcher) serve(ctx context.Context, ready *atomic.Bool) {
	sendCtx, stopSending := context.WithCancel(context.WithoutCancel(ctx))
	leadCtx, stopLeading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSending()
	defer stopLeading()
	synced := make(chan struct{})
	var wg, sender, leading sync.WaitGroup
	w.lanes = newLanes(w, ctx, &wg, w.cfg.Workers)
	w.start(ctx, &wg, ready, synced)
	sender.Add(1)
	go func() { defer sender.Done(); w.events.Run(sendCtx) }()
	leading.Add(1)
	go func() {
		defer leading.Done()
		select {
		case <-synced:
		case <-ctx.Done():
			return
		}
		if w.cfg.LeaderElect {
			w.lead(leadCtx)
		} else {
			w.becomeLeader(leadCtx)
		}
	}()
	<-ctx.Done()
	w.queue.ShutDown()
	w.lanes.shutDown()
	wg.Wait()
	stopSending()
	sender.Wait()
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	left := w.events.Deliver(flush)
	cancel()
	if left > 0 {
		w.metrics.EventsLost(left)
		w.log.printf("error: %d Events not sent within %s of stopping", left, flushTimeout)
	}
	stopLeading()
	leading.Wait()
}

// start runs the informers and, once they have synced and argocd-cm was read, the workers; then it
// closes synced.
func (w *watcher) start(ctx context.Context, wg *sync.WaitGroup, ready *atomic.Bool, synced chan<- struct{}) {
	informers := w.informersToRun()
	for _, inf := range informers {
		wg.Add(1)
		go func() { defer wg.Done(); inf.RunWithContext(ctx) }()
	}

	// Not waited for: the guards' informers only make changes show sooner.
	w.watchGuards(ctx, wg)
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
		w.defaultSettings()
		w.log.printf("informers synced in %s: %d Applications", time.Since(started).Round(time.Millisecond), w.queue.Len())
		ready.Store(true)
		close(synced)
		var workers sync.WaitGroup
		for i := 0; i < w.cfg.Workers; i++ {
			workers.Add(1)
			go func() { defer workers.Done(); w.work(ctx, inClusterLane, w.queue) }()
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

func (w *watcher) mux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", w.metrics)
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if !ready.Load() || w.currentSettings() == nil {
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
func (w *watcher) lead(ctx context.Context) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: w.cfg.LeaseNamespace, Name: w.cfg.LeaseName},
		Client:     w.leases.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: w.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: w.cfg.LeaseDuration, RenewDeadline: w.cfg.RenewDeadline, RetryPeriod: w.cfg.RetryPeriod,
			// On SIGTERM the lease is given up at once (after the Events are flushed), so the next
			// leader need not wait it out.
			ReleaseOnCancel: true,
			Name:            w.cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: w.becomeLeader,
				OnStoppedLeading: w.stopLeading,
				OnNewLeader:      func(id string) { w.log.printf("leader is %s", id) },
			},
		})
		if err != nil {
			w.log.printf("error: leader election: %v", err)
			return
		}
		le.Run(ctx)
	}
}

// becomeLeader starts emitting Events, first those this replica saw while following that no Event
// says yet.
func (w *watcher) becomeLeader(context.Context) {
	w.log.printf("leading as %s: emitting Events", w.cfg.Identity)
	w.metrics.SetLeader(true)
	w.events.SetLeading(true)
}

func (w *watcher) stopLeading() {
	w.log.printf("stopped leading")
	w.metrics.SetLeader(false)
	w.events.SetLeading(false)
}
