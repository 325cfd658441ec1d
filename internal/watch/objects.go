package watch

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/unprune/unprune/internal/cluster"
)

// errReadOnly is what a write through the watch's objects returns: the watch never changes a live
// object, and its ServiceAccount may not either.
var errReadOnly = errors.New("unprune watch is read-only: use unprune detach or unprune guard to change objects")

// cachedObjects reads one destination's live objects through bounded, time-limited caches, so that
// re-evaluating an app on every status change does not read its objects again each time. It
// implements the reads audit needs (metadata, counts, the guard policy) and refuses every write.
type cachedObjects struct {
	inner    cluster.Objects
	meta     *lru[cluster.ReadResult]
	full     *lru[cluster.ReadResult]
	counts   *lru[countResult]
	policies *lru[policyResult]
	// listed are the LISTs (resource and namespace) whose objects the cache holds, for the TTL.
	listed *lru[struct{}]
	lists  singleflight.Group
	// local answers reads of what the watch's informers hold (nil: nothing).
	local func(cluster.Ref) (*cluster.Object, bool)
}

type countResult struct {
	total   int64
	skipped int
	err     error
}

type policyResult struct {
	obj map[string]any
	err error
}

func newCachedObjects(inner cluster.Objects, size int, ttl time.Duration, now func() time.Time) *cachedObjects {
	return &cachedObjects{
		inner:  inner,
		meta:   newLRU[cluster.ReadResult](size, ttl, now),
		full:   newLRU[cluster.ReadResult](size/10+1, ttl, now),
		counts: newLRU[countResult](size/10+1, ttl, now),
		// Two objects (the policy and its binding) per destination.
		policies: newLRU[policyResult](16, ttl, now),
		listed:   newLRU[struct{}](size/10+1, ttl, now),
	}
}

var (
	_ cluster.Objects      = (*cachedObjects)(nil)
	_ cluster.Counter      = (*cachedObjects)(nil)
	_ cluster.PolicyReader = (*cachedObjects)(nil)
)

func (c *cachedObjects) Info() cluster.Info { return c.inner.Info() }

func (c *cachedObjects) Resolve(ctx context.Context, group, kind, version, namespace, name string) (cluster.Ref, error) {
	// The backend caches its REST mappings itself.
	return c.inner.Resolve(ctx, group, kind, version, namespace, name)
}

// listFrom is how many objects of one resource and namespace an evaluation must miss before the
// cache lists them all (as the kube backend lists rather than gets from three objects on).
const listFrom = 3

// Read answers from the cache what it holds. Where an evaluation misses several objects of one
// resource in one namespace, it lists that resource there once and caches every object listed: the
// apps deploying to a namespace then share one LIST per TTL instead of each listing it again. The
// rest is read in one bulk read. Errors are cached too: an object that is gone, or a kind the
// ServiceAccount may not read, is not asked again on every status change.
func (c *cachedObjects) Read(ctx context.Context, refs []cluster.Ref) []cluster.ReadResult {
	out := make([]cluster.ReadResult, len(refs))
	misses := map[string][]int{}
	var order []string
	for i, r := range refs {
		if res, ok := c.meta.get(r.Key()); ok {
			out[i] = res
			continue
		}
		k := listKey(r)
		if misses[k] == nil {
			order = append(order, k)
		}
		misses[k] = append(misses[k], i)
	}
	var rest []int
	for _, k := range order {
		idx := misses[k]
		if len(idx) >= listFrom && c.fill(ctx, k, refs[idx[0]]) {
			// What the listing did not hold (created since, or evicted) is read below.
			for _, i := range idx {
				if res, ok := c.meta.get(refs[i].Key()); ok {
					out[i] = res
				} else {
					rest = append(rest, i)
				}
			}
			continue
		}
		rest = append(rest, idx...)
	}
	if len(rest) == 0 {
		return out
	}
	missing := make([]cluster.Ref, len(rest))
	for k, i := range rest {
		missing[k] = refs[i]
	}
	for k, res := range c.inner.Read(ctx, missing) {
		out[rest[k]] = res
		if ctx.Err() == nil {
			c.meta.put(missing[k].Key(), res)
		}
	}
	return out
}

// listKey names the LIST that holds r: its resource in its namespace.
func listKey(r cluster.Ref) string {
	return r.Group + "/" + r.Version + "/" + r.Resource + "/" + r.Namespace
}

// fill lists like's resource in its namespace into the cache, unless that was done within the TTL;
// concurrent evaluations wanting the same LIST wait for one. It reports whether the cache holds the
// listing; when the backend cannot list, or the LIST fails (a kind the ServiceAccount may not list),
// the caller reads object by object.
func (c *cachedObjects) fill(ctx context.Context, key string, like cluster.Ref) bool {
	lister, ok := c.inner.(cluster.Lister)
	if !ok {
		return false
	}
	if _, ok := c.listed.get(key); ok {
		return true
	}
	_, err, _ := c.lists.Do(key, func() (any, error) {
		if _, ok := c.listed.get(key); ok {
			return nil, nil
		}
		err := lister.ListAll(ctx, like, func(obj *cluster.Object) {
			c.meta.put(obj.Ref.Key(), cluster.ReadResult{Object: obj})
		})
		if err == nil {
			c.listed.put(key, struct{}{})
		}
		return nil, err
	})
	return err == nil
}

func (c *cachedObjects) Get(ctx context.Context, ref cluster.Ref) (*cluster.Object, error) {
	if c.local != nil {
		if obj, ok := c.local(ref); ok {
			return obj, nil
		}
	}
	if res, ok := c.full.get(ref.Key()); ok {
		return res.Object, res.Err
	}
	obj, err := c.inner.Get(ctx, ref)
	if ctx.Err() == nil {
		c.full.put(ref.Key(), cluster.ReadResult{Object: obj, Err: err})
	}
	return obj, err
}

// forget drops what the cache holds of an object (by cluster.Ref.Key), so that the next read asks
// the API server.
func (c *cachedObjects) forget(key string) {
	c.meta.remove(key)
	c.full.remove(key)
}

func (c *cachedObjects) Patch(context.Context, cluster.Ref, []byte, bool) (*cluster.Object, error) {
	return nil, errReadOnly
}

func (c *cachedObjects) CountInNamespace(ctx context.Context, namespace string) (int64, int, error) {
	counter, ok := c.inner.(cluster.Counter)
	if !ok {
		return 0, 0, errors.New("this backend cannot count objects")
	}
	key := "ns/" + namespace
	if r, ok := c.counts.get(key); ok {
		return r.total, r.skipped, r.err
	}
	total, skipped, err := counter.CountInNamespace(ctx, namespace)
	if ctx.Err() == nil {
		c.counts.put(key, countResult{total: total, skipped: skipped, err: err})
	}
	return total, skipped, err
}

func (c *cachedObjects) CountCustomResources(ctx context.Context, crd *cluster.Object) (int64, error) {
	counter, ok := c.inner.(cluster.Counter)
	if !ok {
		return 0, errors.New("this backend cannot count objects")
	}
	key := "crd/" + crd.Ref.Name
	if r, ok := c.counts.get(key); ok {
		return r.total, r.err
	}
	total, err := counter.CountCustomResources(ctx, crd)
	if ctx.Err() == nil {
		c.counts.put(key, countResult{total: total, err: err})
	}
	return total, err
}

func (c *cachedObjects) GetClusterObject(ctx context.Context, group, version, resource, name string) (map[string]any, error) {
	reader, ok := c.inner.(cluster.PolicyReader)
	if !ok {
		return nil, errors.New("this backend cannot read admission policies")
	}
	key := group + "/" + version + "/" + resource + "/" + name
	if r, ok := c.policies.get(key); ok {
		return r.obj, r.err
	}
	obj, err := reader.GetClusterObject(ctx, group, version, resource, name)
	if ctx.Err() == nil {
		c.policies.put(key, policyResult{obj: obj, err: err})
	}
	return obj, err
}
