package watch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cluster"
)

// cachingArgoCD is the installation as audit sees it during a watch: the same backend, with each
// destination's live reads going through one cache that outlives a single evaluation, and the
// Applications the informers hold read from them rather than from the API server.
type cachingArgoCD struct {
	cluster.ArgoCD
	size int
	ttl  time.Duration
	now  func() time.Time
	// informed finds an Application in the informers' stores, always as recent as the watch knows
	// it: a cached copy could say a finalizer is still there after the informer saw it go.
	informed func(namespace, name string) (*cluster.Object, bool)

	mu     sync.Mutex
	caches map[string]*cachedObjects
	// sets are the ApplicationSets read, for the TTL: every app a set generates names it, at each of
	// its status changes.
	sets *lru[setResult]
}

type setResult struct {
	content map[string]any
	err     error
}

var _ audit.SetReader = (*cachingArgoCD)(nil)

func newCachingArgoCD(inner cluster.ArgoCD, size int, ttl time.Duration, now func() time.Time) *cachingArgoCD {
	return &cachingArgoCD{ArgoCD: inner, size: size, ttl: ttl, now: now, caches: map[string]*cachedObjects{}, sets: newLRU[setResult](size/10+1, ttl, now)}
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
		if objects.Info().Server == argocd.InClusterServer && a.informed != nil {
			// The informers watch the cluster Argo CD runs in: its Applications come from them.
			c.local = func(ref cluster.Ref) (*cluster.Object, bool) {
				if ref.Group != "argoproj.io" || ref.Kind != "Application" {
					return nil, false
				}
				return a.informed(ref.Namespace, ref.Name)
			}
		}
		a.caches[key] = c
	}
	return c, nil
}

// forget drops an object of the cluster Argo CD runs in from its cache: the watch saw it change.
func (a *cachingArgoCD) forget(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.caches {
		if c.Info().Server == argocd.InClusterServer {
			c.forget(key)
		}
	}
}

// GetApplication answers from the informers when they hold the app (a parent app, looked up for
// each of its children), else asks the backend.
func (a *cachingArgoCD) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	if a.informed != nil {
		if obj, ok := a.informed(namespace, name); ok {
			return applicationOf(obj.Content)
		}
	}
	return a.ArgoCD.GetApplication(ctx, namespace, name)
}

// GetApplicationSet reads an ApplicationSet, to know whether its policy deletes the apps it owns,
// through a cache with the live objects' TTL. ApplicationSets are not watched (they change rarely):
// a changed policy shows at the next evaluation of each app after the TTL.
func (a *cachingArgoCD) GetApplicationSet(ctx context.Context, namespace, name string) (map[string]any, error) {
	reader, ok := a.ArgoCD.(audit.SetReader)
	if !ok {
		return nil, fmt.Errorf("this backend cannot read ApplicationSet %s/%s", namespace, name)
	}
	key := namespace + "/" + name
	if r, ok := a.sets.get(key); ok {
		return r.content, r.err
	}
	content, err := reader.GetApplicationSet(ctx, namespace, name)
	if ctx.Err() == nil {
		a.sets.put(key, setResult{content: content, err: err})
	}
	return content, err
}

// Refresh is refused: the watch writes nothing to Applications.
func (a *cachingArgoCD) Refresh(context.Context, argocd.Application, bool) error { return errReadOnly }

// CmdParams reads argocd-cmd-params-cm (the ApplicationSet controller's own policy decides whether a
// set deletes its apps), cached like the sets.
func (a *cachingArgoCD) CmdParams(ctx context.Context) (map[string]string, error) {
	r, ok := a.ArgoCD.(interface {
		CmdParams(context.Context) (map[string]string, error)
	})
	if !ok {
		return nil, fmt.Errorf("this backend cannot read argocd-cmd-params-cm")
	}
	if c, ok := a.sets.get("\x00cmd-params"); ok {
		params, _ := c.content["data"].(map[string]string)
		return params, c.err
	}
	params, err := r.CmdParams(ctx)
	if ctx.Err() == nil {
		a.sets.put("\x00cmd-params", setResult{content: map[string]any{"data": params}, err: err})
	}
	return params, err
}
