package watch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"golang.org/x/sync/singleflight"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// listedCluster is a destination that can list: each LIST counted and, while gate is set, held
// until the gate closes.
type listedCluster struct {
	*flakyObjects
	refs  []cluster.Ref
	gate  atomic.Pointer[chan struct{}]
	lists atomic.Int32
}

func (l *listedCluster) ListAll(ctx context.Context, like cluster.Ref, fn func(*cluster.Object)) error {
	l.lists.Add(1)
	if g := l.gate.Load(); g != nil {
		<-*g
	}
	for _, r := range l.refs {
		if r.Resource == like.Resource && r.Namespace == like.Namespace {
			if obj := l.Object(r); obj != nil {
				fn(obj)
			}
		}
	}
	return nil
}

// TestAChangeAfterTheTTLIsJudgedBeforeTheListThenAgainAfterIt: an app judged after its objects'
// answers passed the TTL is answered from them at once while its namespace is listed again in the
// background, and says so (readcache.Unread.Behind); judged again once the LIST is done, with fresh
// answers only, it sees the guard added in between. A fresh judgement waits for the LIST rather than
// use old answers.
func TestAChangeAfterTheTTLIsJudgedBeforeTheListThenAgainAfterIt(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	dest := &listedCluster{flakyObjects: &flakyObjects{Cluster: c}}
	app := argocd.Application{Namespace: "argocd", Name: "app", UID: "uid-1", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"}}
	for _, name := range []string{"a", "b", "c"} {
		dest.refs = append(dest.refs, c.Add("", "Namespace", "", name, nil, map[string]string{argocd.AnnotationTrackingID: "app:/Namespace:team/" + name}))
		app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "Namespace", Name: name, RequiresPruning: true})
	}
	inner := clustertest.NewArgoCD("argocd", c, s)
	inner.AddApp(app)
	r := &reconciler{argoNamespace: "argocd", metrics: exposition.NewMetrics(clock), argo: readcache.New(&flakyArgo{ArgoCD: inner, dest: dest}, readcache.Options{Size: 100, TTL: 30 * time.Second, Now: clock})}
	unguarded := func(sum exposition.Summary) int { return sum.Unguarded["now"]["high"] }
	judge := func(fresh bool) (exposition.Summary, readcache.Unread) {
		t.Helper()
		type judged struct {
			sum exposition.Summary
			u   readcache.Unread
			err error
		}
		done := make(chan judged, 1)
		go func() {
			sum, u, err := r.judge(t.Context(), s, nil, app, nil, fresh)
			done <- judged{sum, u, err}
		}()
		select {
		case j := <-done:
			if j.err != nil {
				t.Fatal(j.err)
			}
			return j.sum, j.u
		case <-time.After(10 * time.Second):
			t.Fatal("the judgement waited for the LIST")
			return exposition.Summary{}, readcache.Unread{}
		}
	}

	sum, u := judge(false)
	if unguarded(sum) != 3 || len(u.Behind) != 0 || dest.lists.Load() != 1 {
		t.Fatalf("first judgement: %d unguarded, %d LISTs behind, %d LISTs; want 3 unguarded, read by 1 LIST before", unguarded(sum), len(u.Behind), dest.lists.Load())
	}

	// The TTL passes; someone labels Namespace a for unprune's policy; the next LIST hangs.
	now = now.Add(45 * time.Second)
	c.Update(dest.refs[0], func(o *cluster.Object) { o.Labels = map[string]string{guard.ProtectLabel: "true"} })
	gate := make(chan struct{})
	dest.gate.Store(&gate)
	sum, u = judge(false)
	if unguarded(sum) != 3 || len(u.Behind) != 1 {
		t.Fatalf("judged after the TTL: %d unguarded, %d LISTs behind; want the answers before the TTL (3) and 1 LIST behind", unguarded(sum), len(u.Behind))
	}
	deadline := time.Now().Add(10 * time.Second)
	for dest.lists.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if dest.lists.Load() != 2 {
		t.Fatalf("%d LISTs: the refresh never started", dest.lists.Load())
	}
	close(gate)
	for _, ch := range u.Behind {
		if r := <-ch; r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	sum, u = judge(true)
	if unguarded(sum) != 2 || len(u.Behind) != 0 || dest.lists.Load() != 2 {
		t.Errorf("judged again after the LIST: %d unguarded, %d behind, %d LISTs; want the new guard seen (2), from the LIST done", unguarded(sum), len(u.Behind), dest.lists.Load())
	}

	// A fresh judgement after the TTL lists first.
	now = now.Add(45 * time.Second)
	c.Update(dest.refs[1], func(o *cluster.Object) { o.Labels = map[string]string{guard.ProtectLabel: "true"} })
	sum, u = judge(true)
	if unguarded(sum) != 1 || len(u.Behind) != 0 || dest.lists.Load() != 3 {
		t.Errorf("fresh judgement after the TTL: %d unguarded, %d behind, %d LISTs; want it listed first (1 unguarded, 3 LISTs)", unguarded(sum), len(u.Behind), dest.lists.Load())
	}
}

// TestAJudgementOnOldAnswersEmitsNoEventAndIsMadeAgain: the metrics show a judgement made on
// answers older than the TTL at once, but its Event waits: the app is queued again, to be judged on
// fresh answers, once the LISTs behind it are done.
func TestAJudgementOnOldAnswersEmitsNoEventAndIsMadeAgain(t *testing.T) {
	m := exposition.NewMetrics(nil)
	rec := &expositiontest.Recorder{}
	mgr := &manager{cfg: Config{ArgoCDNamespace: "argocd"}, metrics: m, ns: appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd"}},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer mgr.queue.ShutDown()
	mgr.events = exposition.NewEvents(rec.Write, func(context.Context, string, types.UID, string) ([]string, error) { return nil, nil }, exposition.EventOptions{Sent: m.EventSent})
	mgr.events.SetLeading(true)
	r := mgr.newReconciler()
	team := argocd.Resource{Version: "v1", Kind: "Namespace", Name: "team", RequiresPruning: true}
	sum := exposition.Summary{Namespace: "argocd", Name: "app", UID: "uid-1", Project: "default", Destination: "in-cluster",
		Pruning: map[string]int{"high": 1}, Unguarded: map[string]map[string]int{"now": {"high": 1}},
		HighRiskPruning:   map[string]exposition.Finding{team.Key(): {Resource: team}},
		UnguardedHighRisk: map[string]exposition.Finding{team.Key(): {Resource: team}}}
	list := make(chan singleflight.Result, 1)
	r.publish("argocd/app", sum, readcache.Unread{Behind: []<-chan singleflight.Result{list}}, time.Millisecond)
	if got := expositiontest.Value(t, m, metricUnguarded, map[string]string{"application": "app", "risk": "high", "when": "now"}); got != 1 {
		t.Fatalf("metrics show %v unguarded, want the judgement at once (1)", got)
	}
	if left := mgr.events.Deliver(t.Context()); left != 0 || len(rec.Sent) != 0 {
		t.Fatalf("events %q sent from a judgement on old answers", rec.Sent)
	}
	if mgr.queue.Len() != 0 {
		t.Fatalf("queued again before the LIST was done")
	}
	list <- singleflight.Result{}
	deadline := time.Now().Add(10 * time.Second)
	for mgr.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	key, _ := mgr.queue.Get()
	if _, fresh := r.refreshed.Load(key); key != "argocd/app" || !fresh {
		t.Fatalf("queued %q (to be judged fresh: %v), want argocd/app, fresh", key, fresh)
	}
	// Judged again on fresh answers: now the Event goes out.
	r.publish("argocd/app", sum, readcache.Unread{}, time.Millisecond)
	if left := mgr.events.Deliver(t.Context()); left != 0 || len(rec.Sent) != 1 {
		t.Fatalf("events %q after the fresh judgement, want 1", rec.Sent)
	}
}
