package watch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
)

// Every app is first taken from the watch's one queue; the apps of the cluster Argo CD runs in are
// evaluated there, and each other destination's are handed to a lane of its own: a queue with
// --workers workers. A destination that is slow or stops answering then holds only its own apps'
// evaluations (each of its requests times out after --request-timeout, and its failed reads back
// off), never those of the other destinations or of the cluster Argo CD runs in.

// inClusterLane is the lane of apps evaluated from the watch's own queue.
const inClusterLane = ""

// laneOf is the lane an app is evaluated in: its destination cluster as its spec names it (name or
// server), or inClusterLane for the cluster Argo CD runs in and for an app the informers no longer
// hold (its series are dropped at once).
func laneOf(u *unstructured.Unstructured) string {
	if u == nil {
		return inClusterLane
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "name")
	server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
	d := argocd.Destination{Name: name, Server: strings.TrimRight(server, "/")}
	switch {
	case d.InCluster():
		return inClusterLane
	case d.Server != "":
		return "server " + d.Server
	}
	return "name " + d.Name
}

// lanes are the queues of the destinations other than the cluster Argo CD runs in, created as
// their first app is seen; inflight keeps one app from being evaluated in two lanes at once (its
// destination changed while an evaluation ran).
type lanes struct {
	mgr     *manager
	ctx     context.Context
	wg      *sync.WaitGroup
	workers int

	mu       sync.Mutex
	closed   bool
	queues   map[string]workqueue.TypedRateLimitingInterface[string]
	inflight map[string]string
}

func newLanes(mgr *manager, ctx context.Context, wg *sync.WaitGroup, workers int) *lanes {
	return &lanes{mgr: mgr, ctx: ctx, wg: wg, workers: workers,
		queues: map[string]workqueue.TypedRateLimitingInterface[string]{}, inflight: map[string]string{}}
}

// add queues key in lane's queue, starting the lane with its workers the first time.
func (l *lanes) add(lane, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	q, ok := l.queues[lane]
	if !ok {
		q = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "applications " + lane})
		l.queues[lane] = q
		for i := 0; i < l.workers; i++ {
			l.wg.Add(1)
			go func() { defer l.wg.Done(); l.mgr.work(l.ctx, lane, q) }()
		}
		l.mgr.log.printf("evaluating the apps of destination %s in a lane of their own (%d workers)", strings.TrimPrefix(strings.TrimPrefix(lane, "server "), "name "), l.workers)
	}
	q.Add(key)
}

// begin marks key evaluated in lane; false when another lane evaluates it now.
func (l *lanes) begin(key, lane string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, ok := l.inflight[key]; ok && other != lane {
		return false
	}
	l.inflight[key] = lane
	return true
}

func (l *lanes) end(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.inflight, key)
}

// shutDown stops every lane's queue; their workers return once their evaluation in flight ends.
func (l *lanes) shutDown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, q := range l.queues {
		q.ShutDown()
	}
}

// busyRetry is how soon an app evaluated in another lane when its turn came is tried again.
const busyRetry = 200 * time.Millisecond

// work evaluates the apps of one lane, taken from q: the watch's own queue (inClusterLane) hands
// every app of another destination to that destination's lane; a lane hands an app whose
// destination changed back to the watch's own queue.
func (mgr *manager) work(ctx context.Context, lane string, q workqueue.TypedRateLimitingInterface[string]) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		var u *unstructured.Unstructured
		if a, ok := mgr.get(key); ok {
			u = a.Unstructured
		}
		switch target := laneOf(u); {
		case target != lane && lane == inClusterLane:
			mgr.lanes.add(target, key)
			q.Forget(key)
		case target != lane:
			mgr.queue.Add(key)
			q.Forget(key)
		case !mgr.lanes.begin(key, lane):
			q.AddAfter(key, busyRetry)
		default:
			mgr.evaluateIn(ctx, key, q)
			mgr.lanes.end(key)
		}
		q.Done(key)
	}
}

// evaluateIn has the reconciler judge key: it schedules the next judgement the reconciler asks
// for, in the watch's own queue, and retries with backoff in q what failed or read only part.
func (mgr *manager) evaluateIn(ctx context.Context, key string, q workqueue.TypedRateLimitingInterface[string]) {
	res, err := mgr.reconciler.Reconcile(ctx, key)
	if res.requeueAfter > 0 {
		mgr.queue.AddAfter(key, res.requeueAfter)
	}
	switch {
	case err == nil:
		q.Forget(key)
	case ctx.Err() != nil:
	case errors.Is(err, errUnread):
		// Shown (the rest as unknown) and counted per row; read again with backoff.
		q.AddRateLimited(key)
	default:
		mgr.metrics.EvaluationFailed()
		mgr.log.printf("error: evaluate Application %s: %v (retrying)", key, err)
		q.AddRateLimited(key)
	}
}
