package watch

import (
	"context"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

// swappingArgo is an installation whose one remote destination is reached by clients that a test
// replaces, as a rotated cluster Secret replaces them.
type swappingArgo struct {
	*clustertest.ArgoCD
	dest cluster.Objects
}

func (a *swappingArgo) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return a.dest, nil
}

// TestNewClientsDropTheirDestinationsCache: new clients for a destination (its Secret's config
// changed) get a new cache, and the stale answers the old one served are forgotten; retain drops
// the cache of clients no longer current (their Secret removed), never the cluster Argo CD runs in.
func TestNewClientsDropTheirDestinationsCache(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(nil, &v)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	first := clustertest.NewCluster("far", "https://127.0.0.2:6443")
	inner := &swappingArgo{ArgoCD: clustertest.NewArgoCD("argocd", home, s), dest: first}
	a := newCachingArgoCD(inner, 10, time.Minute, nil)
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
	inner.dest = clustertest.NewCluster("far", "https://127.0.0.2:6443")
	c2, _ := a.Destination(ctx, app)
	if c2 == c1 || c2.(*cachedObjects).inner != inner.dest {
		t.Fatalf("new clients kept the old cache")
	}
	if !a.oldestStale().IsZero() {
		t.Errorf("the old cache's stale answers are still counted")
	}
	a.caches["in-cluster|"+argocd.InClusterServer] = newCachedObjects(home, 10, time.Minute, nil, a.stale)
	a.retain(func(o cluster.Objects) bool { return false })
	if _, ok := a.caches["far|https://127.0.0.2:6443"]; ok {
		t.Errorf("a destination whose clients are not current kept its cache")
	}
	if _, ok := a.caches["in-cluster|"+argocd.InClusterServer]; !ok {
		t.Errorf("the cluster Argo CD runs in lost its cache")
	}
}
