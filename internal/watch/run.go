package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

type httpRoundTripper = http.RoundTripper

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

// Run watches until ctx is done (SIGTERM), then stops: it releases its Lease, flushes its Events
// and closes the metrics server. It returns an error only when it cannot start.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	log := &logger{out: cfg.Log}
	m := NewMetrics(cfg.Now)
	w, err := newWatcher(ctx, cfg, m, log)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent, Host: cfg.Identity})
	w.events = newEvents(recorder, w.listEvents, m.EventSent)

	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen on %v %s: %w", option.MetricsBindAddress, cfg.MetricsAddr, err)
	}
	var ready atomic.Bool
	srv := &http.Server{Handler: w.mux(&ready), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.printf("serving metrics on http://%s/metrics (identity %s, Argo CD in %s, Applications in %v)", ln.Addr(), cfg.Identity, cfg.ArgoCDNamespace, w.ns.informerNamespaces())

	var wg sync.WaitGroup
	w.start(ctx, &wg, &ready)
	if cfg.LeaderElect {
		wg.Add(1)
		go func() { defer wg.Done(); w.lead(ctx) }()
	} else {
		w.becomeLeader(ctx)
	}
	<-ctx.Done()
	w.queue.ShutDown()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	wg.Wait()
	log.printf("stopped")
	return nil
}

// start runs the informers and, once they have synced, the workers.
func (w *watcher) start(ctx context.Context, wg *sync.WaitGroup, ready *atomic.Bool) {
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	// Not waited for: the guards' informers only make changes show sooner.
	w.watchGuards(ctx, wg, w.meta)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, f := range w.factories {
			defer f.Shutdown()
		}
		started := time.Now()
		synced := []cache.InformerSynced{w.settingsInformer.HasSynced}
		for _, inf := range w.apps {
			synced = append(synced, inf.HasSynced)
		}
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		w.defaultSettings()
		w.log.printf("informers synced in %s: %d Applications", time.Since(started).Round(time.Millisecond), w.queue.Len())
		ready.Store(true)
		var workers sync.WaitGroup
		for i := 0; i < w.cfg.Workers; i++ {
			workers.Add(1)
			go func() { defer workers.Done(); w.work(ctx) }()
		}
		workers.Wait()
	}()
}

func (w *watcher) work(ctx context.Context) {
	for {
		key, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		err := w.evaluate(ctx, key)
		switch {
		case err == nil:
			w.queue.Forget(key)
		case ctx.Err() != nil:
		default:
			w.metrics.EvaluationFailed()
			w.log.printf("error: evaluate Application %s: %v (retrying)", key, err)
			w.queue.AddRateLimited(key)
		}
		w.queue.Done(key)
	}
}

func (w *watcher) mux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(w.metrics.Registry, promhttp.HandlerOpts{}))
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
// following (it keeps serving metrics) and stands again.
func (w *watcher) lead(ctx context.Context) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: w.cfg.LeaseNamespace, Name: w.cfg.LeaseName},
		Client:     w.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: w.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: w.cfg.LeaseDuration, RenewDeadline: w.cfg.RenewDeadline, RetryPeriod: w.cfg.RetryPeriod,
			// On SIGTERM the lease is given up at once, so the next leader need not wait it out.
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
func (w *watcher) becomeLeader(ctx context.Context) {
	w.log.printf("leading as %s: emitting Events", w.cfg.Identity)
	w.metrics.SetLeader(true)
	if err := w.events.send(ctx, nil, w.events.setLeading(true)); err != nil && !errors.Is(err, context.Canceled) {
		w.log.printf("error: %v", err)
	}
}

func (w *watcher) stopLeading() {
	w.log.printf("stopped leading")
	w.metrics.SetLeader(false)
	w.events.setLeading(false)
}
