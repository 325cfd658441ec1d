package readcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cluster"
)

// ArgoCD is the installation as audit sees it during a watch: the same backend, with each
// destination's live reads going through one cache that outlives a single evaluation, and the
// Applications the informers hold read from them rather than from the API server.
type ArgoCD struct {
	// ArgoCD is the backend the cache reads through.
	cluster.ArgoCD
	opts Options

	mu     sync.Mutex
	caches map[string]*cachedObjects
	// sets are the ApplicationSets read, for the TTL: every app a set generates names it, at each of
	// its status changes.
	sets *answers[setResult]
	// stale are the last good answers served while reading again fails, in every cache.
	stale *staleAnswers
	// keys are the label and annotation keys of the metadata every destination's cache holds.
	keys *internTable
}

// Options bound the caches of an ArgoCD and say where the Applications the informers hold are.
type Options struct {
	// Size bounds each destination's metadata cache, in objects; its full reads, counts and LISTs,
	// and the ApplicationSets read, are bounded by a tenth of it.
	Size int
	// TTL is how long an answer is used without reading again; past it, it stays the last good
	// answer to fall back on while reading again fails.
	TTL time.Duration
	// MaxBytes bounds each destination's metadata cache by estimated bytes as well, and its full
	// reads by a tenth of it; 0 bounds them by count alone.
	MaxBytes int64
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Informed, when set, finds an Application in the informers' stores, always as recent as the
	// watch knows it: a cached copy could say a finalizer is still there after the informer saw it
	// go.
	Informed func(namespace, name string) (*cluster.Object, bool)
}

type setResult struct {
	content map[string]any
}

var _ audit.SetReader = (*ArgoCD)(nil)

// New returns inner read through caches bounded and timed by o.
func New(inner cluster.ArgoCD, o Options) *ArgoCD {
	stale := newStaleAnswers()
	return &ArgoCD{ArgoCD: inner, opts: o, caches: map[string]*cachedObjects{},
		sets: newAnswers[setResult]("sets", o.Size/10+1, o.TTL, o.Now, stale), stale: stale, keys: newMetaKeys()}
}

// OldestStale is when the oldest last good answer still served in place of a failing read was
// read; zero when every answer is fresh.
func (a *ArgoCD) OldestStale() time.Time { return a.stale.oldest() }

// Destination returns the app's destination with its cache; destinations are few (one per cluster).
func (a *ArgoCD) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	objects, err := a.ArgoCD.Destination(ctx, app)
	if err != nil {
		// Not reached is not "nothing there": every row of the app is unknown.
		recordOf(ctx).failedDestination()
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
		c = newCachedObjects(objects, a.opts, a.stale, a.keys)
		if objects.Info().Server == argocd.InClusterServer && a.opts.Informed != nil {
			// The informers watch the cluster Argo CD runs in: its Applications come from them.
			c.local = func(ref cluster.Ref) (*cluster.Object, bool) {
				if ref.Group != "argoproj.io" || ref.Kind != "Application" {
					return nil, false
				}
				return a.opts.Informed(ref.Namespace, ref.Name)
			}
		}
		a.caches[key] = c
	}
	return c, nil
}

// drop forgets a destination's cache and the stale answers it served. The caller holds mu.
func (a *ArgoCD) drop(key string, c *cachedObjects) {
	delete(a.caches, key)
	a.stale.doneUnder(c.Info().Name + "|" + c.Info().Server + "|")
}

// Retain drops the caches of the destinations whose clients are not current any more (their
// cluster Secret changed or went), with their clients. The cluster Argo CD runs in keeps its cache.
func (a *ArgoCD) Retain(current func(cluster.Objects) bool) {
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

// Forget drops an object (by cluster.Ref.Key) of the cluster Argo CD runs in from its cache, so
// that the next read asks the API server: the watch saw it change.
func (a *ArgoCD) Forget(key string) {
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
func (a *ArgoCD) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	if a.opts.Informed != nil {
		if obj, ok := a.opts.Informed(namespace, name); ok {
			return applicationOf(obj.Content)
		}
	}
	return a.ArgoCD.GetApplication(ctx, namespace, name)
}

// GetApplicationSet reads an ApplicationSet, to know whether its policy deletes the apps it owns,
// through a cache with the live objects' TTL. ApplicationSets are not watched (they change rarely):
// a changed policy shows at the next evaluation of each app after the TTL.
func (a *ArgoCD) GetApplicationSet(ctx context.Context, namespace, name string) (map[string]any, error) {
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
func (a *ArgoCD) Refresh(context.Context, argocd.Application, bool) error { return errReadOnly }

// CmdParams reads argocd-cmd-params-cm (the ApplicationSet controller's own policy decides whether a
// set deletes its apps), cached like the sets.
func (a *ArgoCD) CmdParams(ctx context.Context) (map[string]string, error) {
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
