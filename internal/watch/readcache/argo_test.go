package readcache

import (
	"context"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

// TestNewClientsDropTheirDestinationsCache: new clients for a destination (its Secret's config
// changed) get a new cache, and the stale answers the old one served are forgotten; Retain drops
// the cache of clients no longer current (their Secret removed), never the cluster Argo CD runs in.
func TestNewClientsDropTheirDestinationsCache(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(nil, &v)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	// The one remote destination, reached by clients that the test replaces, as a rotated cluster
	// Secret replaces them.
	inner := clustertest.NewArgoCD("argocd", home, s)
	inner.Remote["far"] = clustertest.NewCluster("far", "https://127.0.0.2:6443")
	a := New(inner, Options{Size: 10, TTL: time.Minute})
	app := argocd.Application{Name: "app", Destination: argocd.Destination{Name: "far"}}
	ctx := context.Background()

	c1, err := a.Destination(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	a.stale.serve("far|https://127.0.0.2:6443|meta|/v1/namespaces//x", time.Unix(1, 0))
	if again, _ := a.Destination(ctx, app); again != c1 {
		t.Fatalf("the same clients must keep their cache")
	}
	inner.Remote["far"] = clustertest.NewCluster("far", "https://127.0.0.2:6443")
	c2, _ := a.Destination(ctx, app)
	if c2 == c1 || c2.(*cachedObjects).inner != inner.Remote["far"] {
		t.Fatalf("new clients kept the old cache")
	}
	if !a.OldestStale().IsZero() {
		t.Errorf("the old cache's stale answers are still counted")
	}
	a.caches["in-cluster|"+argocd.InClusterServer] = newCachedObjects(home, a.opts, a.stale, a.keys)
	a.Retain(func(o cluster.Objects) bool { return false })
	if _, ok := a.caches["far|https://127.0.0.2:6443"]; ok {
		t.Errorf("a destination whose clients are not current kept its cache")
	}
	if _, ok := a.caches["in-cluster|"+argocd.InClusterServer]; !ok {
		t.Errorf("the cluster Argo CD runs in lost its cache")
	}
}

// countingSets is a backend whose ApplicationSet reads are counted.
type countingSets struct {
	cluster.ArgoCD
	reads int
}

func (c *countingSets) GetApplicationSet(context.Context, string, string) (map[string]any, error) {
	c.reads++
	return map[string]any{"spec": map[string]any{}}, nil
}

// TestApplicationSetsAreReadOncePerTTL: the apps a set generates name it at every status change;
// the set is read once per TTL, not once per evaluation.
func TestApplicationSetsAreReadOncePerTTL(t *testing.T) {
	now := time.Unix(0, 0)
	inner := &countingSets{}
	a := New(inner, Options{Size: 100, TTL: time.Minute, Now: func() time.Time { return now }})
	for range 50 {
		if _, err := a.GetApplicationSet(context.Background(), "argocd", "teams"); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.GetApplicationSet(context.Background(), "argocd", "teams"); err != nil {
		t.Fatal(err)
	}
	if inner.reads != 2 {
		t.Errorf("%d reads for 51 evaluations across one TTL; want 2", inner.reads)
	}
}
