package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// blackHoleArgo is an installation whose destination clusters other than its own never answer
// while hold is set: reaching one waits until the evaluation gives up (or hold is released).
type blackHoleArgo struct {
	*clustertest.ArgoCD
	hold    chan struct{}
	waiting atomic.Int32
}

func (a *blackHoleArgo) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	if !app.Destination.InCluster() {
		a.waiting.Add(1)
		defer a.waiting.Add(-1)
		select {
		case <-a.hold:
		case <-ctx.Done():
		}
		return nil, errors.New("the destination did not answer")
	}
	return a.ArgoCD.Destination(ctx, app)
}

func applicationObject(name string, dest argocd.Destination) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": "uid-" + name},
		"spec":     map[string]any{"project": "default", "destination": map[string]any{"server": dest.Server, "name": dest.Name, "namespace": "team"}},
		"status": map[string]any{"resources": []any{map[string]any{
			"version": "v1", "kind": "Namespace", "name": "ns-" + name, "requiresPruning": true}}},
	}}
	return u
}

// TestBlackHoledDestinationDelaysNoOtherApp: with one worker, the apps of a destination that never
// answers hold only their own lane: an app of the cluster Argo CD runs in, created after they
// started waiting, is evaluated at once, and so is an app of another remote destination.
func TestBlackHoledDestinationDelaysNoOtherApp(t *testing.T) {
	var forbidden atomic.Bool
	var lists atomic.Int32
	mgr, _ := fakeManager(t, &forbidden, &lists)
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(nil, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	inner := &blackHoleArgo{ArgoCD: clustertest.NewArgoCD("argocd", c, s), hold: make(chan struct{})}
	mgr.argo = readcache.New(inner, readcache.Options{Size: 10, TTL: time.Minute, Informed: mgr.informedApplication})
	ctx, cancel := context.WithCancel(t.Context())
	var ready atomic.Bool
	var done sync.WaitGroup
	done.Add(1)
	go func() { defer done.Done(); mgr.serve(ctx, &ready) }()
	defer func() { cancel(); close(inner.hold); done.Wait() }()

	apps := mgr.dyn.Resource(kube.GVRApplication).Namespace("argocd")
	create := func(name string, dest argocd.Destination) {
		t.Helper()
		if _, err := apps.Create(ctx, applicationObject(name, dest), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		create(fmt.Sprintf("far-%d", i), argocd.Destination{Server: "https://127.0.0.1:1"})
	}
	eventually(t, 10*time.Second, "the black-holed destination's apps waiting", func() bool { return inner.waiting.Load() >= 1 })
	create("near", argocd.Destination{Server: argocd.InClusterServer})
	eventually(t, 5*time.Second, "the in-cluster app evaluated while the other destination holds its apps", func() bool {
		_, ok := expositiontest.Find(t, mgr.metrics, metricPruning, map[string]string{"application": "near", "risk": "high"})
		return ok
	})
	create("elsewhere", argocd.Destination{Name: "other"})
	eventually(t, 5*time.Second, "another destination's app reached its own lane", func() bool { return inner.waiting.Load() >= 2 })
	if _, ok := expositiontest.Find(t, mgr.metrics, metricPruning, map[string]string{"application": "far-0"}); ok {
		t.Errorf("an app whose destination never answered has series already")
	}
}

func TestLaneOf(t *testing.T) {
	for _, c := range []struct {
		dest argocd.Destination
		want string
	}{
		{argocd.Destination{Server: argocd.InClusterServer}, inClusterLane},
		{argocd.Destination{Name: argocd.InClusterName}, inClusterLane},
		{argocd.Destination{Server: "https://far.example:6443/"}, "server https://far.example:6443"},
		{argocd.Destination{Name: "far"}, "name far"},
	} {
		if got := laneOf(applicationObject("x", c.dest)); got != c.want {
			t.Errorf("laneOf(%+v) = %q, want %q", c.dest, got, c.want)
		}
	}
	if laneOf(nil) != inClusterLane {
		t.Errorf("a deleted app is evaluated (its series dropped) in the watch's own queue")
	}
}
