package watch

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/unprune/unprune/internal/watch/exposition"
)

// The watch builds its informers itself rather than through client-go's factories, for two things
// a replica that has stopped seeing must say: every LIST and WATCH's outcome is reported
// (unprune_informer_healthy, unprune_informer_errors_total), and a WATCH lasts at most
// --watch-timeout — the API server does not end a running watch when a permission is taken away,
// so a revoked Role shows at the next one, not after client-go's 5 to 10 minutes.

// informerName names an informer in metrics and logs: namespace/resource, or resource when it
// watches every namespace or a cluster-scoped kind.
func informerName(gvr schema.GroupVersionResource, namespace string) string {
	if namespace == "" {
		return gvr.Resource
	}
	return namespace + "/" + gvr.Resource
}

// health is one informer's: what its metrics say, and one log line when it starts or stops
// failing (not one per retry).
type health struct {
	name    string
	metrics *exposition.Metrics
	log     *logger
	failing atomic.Bool
}

func (h *health) ok() {
	h.metrics.InformerOK(h.name)
	if h.failing.Swap(false) {
		h.log.printf("informer %s lists and watches again", h.name)
	}
}

func (h *health) failed(err error) {
	h.metrics.InformerFailed(h.name)
	if !h.failing.Swap(true) {
		h.log.printf("error: informer %s: %v (what it holds goes stale until it lists again; retrying with backoff)", h.name, err)
	}
}

// listWatch is a ListerWatcher that reports outcomes and bounds each watch.
type listWatch struct {
	health  *health
	list    func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	watch   func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
	tweak   func(*metav1.ListOptions)
	timeout int64 // seconds; 0 leaves client-go's
}

func (l *listWatch) listerWatcher(client any) cache.ListerWatcher {
	list := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		if l.tweak != nil {
			l.tweak(&o)
		}
		obj, err := l.list(ctx, o)
		if err == nil {
			l.health.ok()
		}
		return obj, err
	}
	watchFn := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		if l.tweak != nil {
			l.tweak(&o)
		}
		if l.timeout > 0 && (o.TimeoutSeconds == nil || *o.TimeoutSeconds > l.timeout) {
			// client-go picks a watch's timeout at random in [min, 2×min): the same spread below
			// the bound, so that informers do not all watch again at once.
			t := l.timeout/2 + rand.Int64N(l.timeout/2+1)
			o.TimeoutSeconds = &t
		}
		w, err := l.watch(ctx, o)
		if err == nil {
			l.health.ok()
		}
		return w, err
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFn,
	}, client)
}

func dynamicListWatch(c dynamic.Interface, gvr schema.GroupVersionResource, namespace string) (list func(context.Context, metav1.ListOptions) (runtime.Object, error), w func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	r := c.Resource(gvr).Namespace(namespace)
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return r.Watch(ctx, o) }
}

func metadataListWatch(c metadata.Interface, gvr schema.GroupVersionResource) (list func(context.Context, metav1.ListOptions) (runtime.Object, error), w func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	r := c.Resource(gvr)
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return r.Watch(ctx, o) }
}

// newDynamicInformer is an informer of gvr in namespace ("" for all), without resync: the watch
// schedules each app's re-evaluation itself, jittered (reconciler.nextResync).
func (mgr *manager) newDynamicInformer(gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions), indexers cache.Indexers) cache.SharedIndexInformer {
	list, watchFn := dynamicListWatch(mgr.dyn, gvr, namespace)
	h := mgr.newHealth(informerName(gvr, namespace))
	lw := &listWatch{health: h, list: list, watch: watchFn, tweak: tweak, timeout: int64(mgr.cfg.WatchTimeout.Seconds())}
	inf := cache.NewSharedIndexInformerWithOptions(lw.listerWatcher(mgr.dyn), &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: gvr.String()})
	reportErrors(inf, h, nil)
	return inf
}

// newMetadataInformer is a cluster-wide metadata-only informer of gvr, without resync.
func (mgr *manager) newMetadataInformer(gvr schema.GroupVersionResource, tweak func(*metav1.ListOptions)) (cache.SharedIndexInformer, *health) {
	list, watchFn := metadataListWatch(mgr.meta, gvr)
	h := mgr.newHealth(informerName(gvr, ""))
	lw := &listWatch{health: h, list: list, watch: watchFn, tweak: tweak, timeout: int64(mgr.cfg.WatchTimeout.Seconds())}
	inf := cache.NewSharedIndexInformerWithOptions(lw.listerWatcher(mgr.meta), &metav1.PartialObjectMetadata{},
		cache.SharedIndexInformerOptions{ObjectDescription: gvr.String()})
	return inf, h
}

func (mgr *manager) newHealth(name string) *health {
	mgr.metrics.InformerStarted(name)
	return &health{name: name, metrics: mgr.metrics, log: mgr.log}
}

// reportErrors counts an informer's failures (SetWatchErrorHandler: every failed LIST or WATCH the
// reflector retries). onForbidden, when set, handles a Forbidden error instead and reports whether
// it did.
func reportErrors(inf cache.SharedIndexInformer, h *health, onForbidden func(error) bool) {
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		switch {
		case ctx.Err() != nil:
			return
		case apierrors.IsResourceExpired(err), apierrors.IsGone(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			// A watch that ended or expired: the reflector lists or watches again at once.
			return
		case apierrors.IsForbidden(err) && onForbidden != nil && onForbidden(err):
			return
		}
		h.failed(err)
	})
}
