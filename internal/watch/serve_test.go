package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// eventually polls cond every 10 ms until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeManager is a manager on fake clients: Applications the API server refuses to list while
// forbidden is set, and a Lease that only the election writes.
func fakeManager(t *testing.T, forbidden *atomic.Bool, appLists *atomic.Int32) (*manager, *kubefake.Clientset) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.GVRApplication: "ApplicationList", gvrConfigMap: "ConfigMapList", gvrAppProject: "AppProjectList"})
	dyn.PrependReactor("list", "applications", func(clienttesting.Action) (bool, runtime.Object, error) {
		appLists.Add(1)
		if forbidden.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, "",
				errors.New("RBAC: list not granted"))
		}
		return false, nil, nil
	})
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	kc := kubefake.NewClientset()
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	cfg := Config{ArgoCDNamespace: "argocd", Version: &v, LeaderElect: true, LeaseNamespace: "argocd", LeaseName: DefaultLeaseName,
		Identity: "replica", LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Resync: time.Minute, Workers: 1, CacheSize: 10, CacheTTL: time.Minute}
	m := exposition.NewMetrics(nil)
	mgr := &manager{cfg: cfg, log: &logger{out: io.Discard}, metrics: m, kube: kc, leases: kc, dyn: dyn,
		meta: metadatafake.NewSimpleMetadataClient(scheme), listers: newListers(), ns: appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd"}},
		argo:  readcache.New(nil, readcache.Options{Size: 10, TTL: time.Minute}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	mgr.events = exposition.NewEvents(func(context.Context, *corev1.Event) error { return nil },
		func(context.Context, string, types.UID, string) ([]string, error) { return nil, nil }, exposition.EventOptions{Sent: m.EventSent})
	mgr.informers()
	return mgr, kc
}

func leaseActions(kc *kubefake.Clientset) []string {
	var out []string
	for _, a := range kc.Actions() {
		if a.GetResource().Resource == "leases" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// TestLeaderNotSoughtBeforeSync: a replica whose Application informer cannot list does not stand
// for election — it could announce nothing true — and says so in its metrics: the informer is
// unhealthy and its errors count. Once the list is allowed it syncs, takes the Lease and reports the
// informer healthy.
func TestLeaderNotSoughtBeforeSync(t *testing.T) {
	var forbidden atomic.Bool
	var lists atomic.Int32
	forbidden.Store(true)
	mgr, kc := fakeManager(t, &forbidden, &lists)
	ctx, cancel := context.WithCancel(t.Context())
	var ready atomic.Bool
	var done sync.WaitGroup
	done.Add(1)
	go func() { defer done.Done(); mgr.serve(ctx, &ready) }()
	defer func() { cancel(); done.Wait() }()

	apps := map[string]string{"informer": "argocd/applications"}
	// Two lists refused (client-go backs off between them): time enough for an election to have
	// been tried, had it not waited.
	eventually(t, 20*time.Second, "two refused lists of Applications", func() bool {
		v, _ := expositiontest.Find(t, mgr.metrics, metricInfErrors, apps)
		return lists.Load() >= 2 && v >= 2
	})
	if got := leaseActions(kc); len(got) != 0 {
		t.Fatalf("the Lease was asked for before the informers synced: %v", got)
	}
	if ready.Load() || expositiontest.Value(t, mgr.metrics, metricLeader, nil) != 0 || expositiontest.Value(t, mgr.metrics, metricInfHealthy, apps) != 0 {
		t.Fatalf("ready %v, leader %v, healthy %v before the informers synced", ready.Load(), expositiontest.Value(t, mgr.metrics, metricLeader, nil), expositiontest.Value(t, mgr.metrics, metricInfHealthy, apps))
	}
	if h := expositiontest.Value(t, mgr.metrics, metricInfHealthy, map[string]string{"informer": "argocd/configmaps"}); h != 1 {
		t.Errorf("argocd-cm's informer healthy = %v, want 1", h)
	}

	forbidden.Store(false)
	eventually(t, 30*time.Second, "the replica to sync and lead", func() bool {
		return ready.Load() && expositiontest.Value(t, mgr.metrics, metricLeader, nil) == 1
	})
	if h := expositiontest.Value(t, mgr.metrics, metricInfHealthy, apps); h != 1 {
		t.Errorf("healthy %v after a list succeeded, want 1", h)
	}
	if got := fmt.Sprint(leaseActions(kc)); got == "[]" {
		t.Errorf("leading without a Lease: %s", got)
	}
}

// TestShutdownFlushesEvents: SIGTERM stops the evaluations, then sends what is queued — while the
// Lease is still held — and only then gives the Lease up; the broadcaster no longer dies with the
// run's context.
func TestShutdownFlushesEvents(t *testing.T) {
	var forbidden atomic.Bool
	var lists atomic.Int32
	mgr, kc := fakeManager(t, &forbidden, &lists)
	var mu sync.Mutex
	var written []string
	release := make(chan struct{})
	write := func(_ context.Context, ev *corev1.Event) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		written = append(written, ev.Message)
		// The Lease is still this replica's while the queue drains.
		if l, err := kc.CoordinationV1().Leases("argocd").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{}); err != nil ||
			l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "replica" {
			return fmt.Errorf("lease not held while flushing: %v %v", l, err)
		}
		return nil
	}
	mgr.events = exposition.NewEvents(write, func(context.Context, string, types.UID, string) ([]string, error) { return nil, nil },
		exposition.EventOptions{Sent: mgr.metrics.EventSent})
	ctx, cancel := context.WithCancel(t.Context())
	var ready atomic.Bool
	stopped := make(chan struct{})
	go func() { defer close(stopped); mgr.serve(ctx, &ready) }()
	eventually(t, 30*time.Second, "the replica to lead", func() bool { return expositiontest.Value(t, mgr.metrics, metricLeader, nil) == 1 })

	app := testApp()
	findings := map[string]exposition.Finding{}
	for i := range 100 {
		r := ns(fmt.Sprintf("team-%03d", i))
		findings[r.Key()] = exposition.Finding{Resource: r}
	}
	mgr.events.Observe("argocd/app", exposition.Summary{Namespace: app.Namespace, Name: app.Name, UID: app.UID})
	mgr.events.Observe("argocd/app", exposition.Summary{Namespace: app.Namespace, Name: app.Name, UID: app.UID, HighRiskPruning: findings, UnguardedHighRisk: findings})
	cancel()
	close(release)
	select {
	case <-stopped:
	case <-time.After(flushTimeout + 5*time.Second):
		t.Fatal("serve did not return")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(written) != 100 {
		t.Fatalf("%d Events written at shutdown, want 100", len(written))
	}
	for i, msg := range written {
		if want := fmt.Sprintf("Namespace/team-%03d requires pruning", i); len(msg) < len(want) || msg[:len(want)] != want {
			t.Fatalf("Event %d: %q, want it to start with %q", i, msg, want)
		}
	}
	if n := expositiontest.Value(t, mgr.metrics, metricEventsSent, map[string]string{"reason": exposition.ReasonHighRiskRequiresPruning}); n != 100 {
		t.Errorf("%s = %v, want 100", metricEventsSent, n)
	}
	l, err := kc.CoordinationV1().Leases("argocd").Get(context.Background(), DefaultLeaseName, metav1.GetOptions{})
	if err != nil || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
		t.Errorf("lease after shutdown: %+v %v; want released", l, err)
	}
}
