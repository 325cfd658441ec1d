package watch

import (
	"context"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// cachingArgoCD is the installation as audit sees it during a watch: the same backend, with each
// destination's live reads going through one cache that outlives a single evaluation.
type cachingArgoCD struct {
	cluster.ArgoCD
	size int
	ttl  time.Duration
	now  func() time.Time

	mu     sync.Mutex
	caches map[string]*cachedObjects
}

func newCachingArgoCD(inner cluster.ArgoCD, size int, ttl time.Duration, now func() time.Time) *cachingArgoCD {
	return &cachingArgoCD{ArgoCD: inner, size: size, ttl: ttl, now: now, caches: map[string]*cachedObjects{}}
}

// Destination returns the app's destination with its cache; destinations are few (one per cluster).
func (a *cachingArgoCD) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	objects, err := a.ArgoCD.Destination(ctx, app)
	if err != nil {
		return nil, err
	}
	key := objects.Info().Name + "|" + objects.Info().Server
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.caches[key]
	if !ok {
		c = newCachedObjects(objects, a.size, a.ttl, a.now)
		a.caches[key] = c
	}
	return c, nil
}

// Refresh is refused: the watch writes nothing to Applications.
func (a *cachingArgoCD) Refresh(context.Context, argocd.Application, bool) error { return errReadOnly }
