package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/verify"
)

// deafController is an Argo CD whose controller took a refresh request without the comparison it
// asks for and acts on nothing until the request is renewed: the annotation stays pending.
type deafController struct {
	*clustertest.ArgoCD
	mu       sync.Mutex
	renewed  int
	compared time.Time
}

func (d *deafController) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	app, err := d.ArgoCD.GetApplication(ctx, namespace, name)
	d.mu.Lock()
	defer d.mu.Unlock()
	app.Refresh, app.ReconciledAt = "normal", time.Time{}
	if d.renewed > 0 {
		app.Refresh, app.ReconciledAt = "", d.compared
	}
	return app, err
}

func (d *deafController) Refresh(_ context.Context, _ argocd.Application, _ bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.renewed++
	return nil
}

// TestComparedRenewsAStaleRequest: a refresh request that stays pending with no comparison after
// the last change is asked again once it has been pending for verify.StaleRequest — not before — and the
// comparison it then gets counts.
func TestComparedRenewsAStaleRequest(t *testing.T) {
	w := newWorld(t, "team-a")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	now := start
	d := &deafController{ArgoCD: w.argo, compared: start.Add(time.Minute)}
	e := w.engine()
	e.ArgoCD = d
	e.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	app, fresh, err := e.compared(context.Background(), AppName{Namespace: "argocd", Name: "guestbook"}, start, start.Add(2*time.Minute))
	if err != nil || !fresh || app.ReconciledAt != d.compared {
		t.Fatalf("compared: fresh %v, reconciled %v, err %v", fresh, app.ReconciledAt, err)
	}
	if d.renewed != 1 {
		t.Fatalf("the request was renewed %d times, want once", d.renewed)
	}
	if waited := now.Sub(start); waited < verify.StaleRequest || waited > verify.StaleRequest+5*time.Second {
		t.Fatalf("renewed after %s, want after %s pending", waited, verify.StaleRequest)
	}
}
