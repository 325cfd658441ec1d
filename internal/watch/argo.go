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
	sets *answers[setResult]
	// stale are the last good answers served while reading again fails, in every cache.
	stale *staleAnswers
}

type setResult struct {
	content map[string]any
}

var _ audit.SetReader = (*cachingArgoCD)(nil)

func newCachingArgoCD(inner cluster.ArgoCD, size int, ttl time.Duration, now func() time.Time) *cachingArgoCD {
	stale := newStaleAnswers()
	return &cachingArgoCD{ArgoCD: inner, size: size, ttl: ttl, now: now, caches: map[string]*cachedObjects{},
		sets: newAnswers[setResult]("sets", size/10+1, ttl, now, stale), stale: stale}
}

// oldestStale is when the oldest last good answer still served in place of a failing read was
// read; zero when every answer is fresh.
func (a *cachingArgoCD) oldestStale() time.Time { return a.stale.oldest() }

// Destination returns the app's destination with its cache; destinations are few (one per cluster).
func (a *cachingArgoCD) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	objects, err := a.ArgoCD.Destination(ctx, app)
	if err != nil {
		// Not reached is not "nothing there": every row of the app is unknown.
		unreadOf(ctx).failedDestination()
		return nil, err
	}
	key := objects.Info().Name + "|" + objects.Info().Server
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.caches[key]
	if ok && c.inner != objects {
		// New clients for the cluster (its Secret's config changed): answers read with other
		// credentials are not this client's.
		a.drop(key, c)
		ok = false
	}
	if !ok {
		c = newCachedObjects(objects, a.size, a.ttl, a.now, a.stale)
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

// drop forgets a destination's cache and the stale answers it served. The caller holds mu.
func (a *cachingArgoCD) drop(key string, c *cachedObjects) {
	delete(a.caches, key)
	a.stale.doneUnder(c.Info().Name + "|" + c.Info().Server + "|")
}

// retain drops the caches of the destinations whose clients are not current any more (their
// cluster Secret changed or went), with their clients.
func (a *cachingArgoCD) retain(current func(cluster.Objects) bool) {
	a.mu.Lock()
	held := map[string]*cachedObjects{}
	for k, c := range a.caches {
		if c.Info().Server != argocd.InClusterServer {
			held[k] = c
		}
	}
	a.mu.Unlock()
	for k, c := range held {
		if current(c.inner) {
			continue
		}
		a.mu.Lock()
		if a.caches[k] == c {
			a.drop(k, c)
		}
		a.mu.Unlock()
	}
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
	r, ok := a.sets.cached(key)
	if !ok {
		content, err := reader.GetApplicationSet(ctx, namespace, name)
		if ctx.Err() != nil {
			return content, err
		}
		r = a.sets.record(key, setResult{content: content}, err)
	}
	return r.value.content, r.err
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
	c, ok := a.sets.cached("\x00cmd-params")
	if !ok {
		params, err := r.CmdParams(ctx)
		if ctx.Err() != nil {
			return params, err
		}
		c = a.sets.record("\x00cmd-params", setResult{content: map[string]any{"data": params}}, err)
	}
	params, _ := c.value.content["data"].(map[string]string)
	return params, c.err
}
