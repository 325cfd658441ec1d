package verify

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

// deaf is an Argo CD whose controller holds a refresh request it does not act on until it is
// renewed; then it compares, and team-a is gone.
type deaf struct {
	cluster.ArgoCD
	mu      sync.Mutex
	renewed int
}

func (d *deaf) GetApplication(_ context.Context, namespace, name string) (argocd.Application, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	app := argocd.Application{Namespace: namespace, Name: name, Refresh: "normal", Resources: []argocd.Resource{teamA}}
	if d.renewed > 0 {
		app.Refresh, app.ReconciledAt, app.Resources = "", patched.Add(time.Minute), nil
	}
	return app, nil
}

func (d *deaf) Refresh(context.Context, argocd.Application, bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.renewed++
	return nil
}

// TestWaitRenewsAStaleRequest: a request pending with no comparison after the change is asked
// again once it has been pending StaleRequest, and the comparison that follows verifies.
func TestWaitRenewsAStaleRequest(t *testing.T) {
	d := &deaf{ArgoCD: clustertest.NewArgoCD("argocd", clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer), argocd.Settings{})}
	now := patched
	clock := func() time.Time { now = now.Add(time.Second); return now }
	o, err := Wait(context.Background(), d, argocd.Application{Namespace: "argocd", Name: "guestbook"}, []argocd.Resource{teamA}, Gone, patched,
		Options{Timeout: 2 * time.Minute, Poll: time.Millisecond, Now: clock})
	if err != nil || !o.Verified || d.renewed != 1 {
		t.Fatalf("verified %v, renewed %d, err %v", o.Verified, d.renewed, err)
	}
	if waited := now.Sub(patched); waited < StaleRequest || waited > StaleRequest+5*time.Second {
		t.Fatalf("verified after %s, want the request renewed after %s", waited, StaleRequest)
	}
}
