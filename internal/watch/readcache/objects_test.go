package readcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cluster"
)

// listingObjects is a destination whose namespaces hold ConfigMaps, counting LISTs and bulk reads.
type listingObjects struct {
	byNamespace map[string][]*cluster.Object
	lists       atomic.Int32
	reads       atomic.Int32
	// listed is closed once, after the first LIST started, so that concurrent readers pile up.
	slow chan struct{}
}

func configMapRef(namespace, name string) cluster.Ref {
	return cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: namespace, Name: name, Namespaced: true}
}

func newListingObjects(namespaces, perNamespace int) *listingObjects {
	o := &listingObjects{byNamespace: map[string][]*cluster.Object{}}
	for n := range namespaces {
		ns := fmt.Sprintf("ns-%d", n)
		for i := range perNamespace {
			o.byNamespace[ns] = append(o.byNamespace[ns], &cluster.Object{Ref: configMapRef(ns, fmt.Sprintf("cm-%04d", i)), UID: fmt.Sprintf("%s-%d", ns, i)})
		}
	}
	return o
}

func (o *listingObjects) Info() cluster.Info { return cluster.Info{Name: "in-cluster"} }
func (o *listingObjects) Resolve(context.Context, string, string, string, string, string) (cluster.Ref, error) {
	return cluster.Ref{}, fmt.Errorf("not used")
}
func (o *listingObjects) Get(context.Context, cluster.Ref) (*cluster.Object, error) {
	return nil, fmt.Errorf("not used")
}
func (o *listingObjects) Patch(context.Context, cluster.Ref, []byte, bool) (*cluster.Object, error) {
	return nil, errReadOnly
}

func (o *listingObjects) Read(_ context.Context, refs []cluster.Ref) []cluster.ReadResult {
	o.reads.Add(1)
	out := make([]cluster.ReadResult, len(refs))
	for i, r := range refs {
		out[i].Err = fmt.Errorf("%s not found", r.Name)
		for _, obj := range o.byNamespace[r.Namespace] {
			if obj.Ref.Name == r.Name {
				out[i] = cluster.ReadResult{Object: obj}
			}
		}
	}
	return out
}

func (o *listingObjects) ListAll(_ context.Context, like cluster.Ref, fn func(*cluster.Object)) error {
	o.lists.Add(1)
	if o.slow != nil {
		<-o.slow
	}
	for _, obj := range o.byNamespace[like.Namespace] {
		fn(obj)
	}
	return nil
}

// newTestObjects is a destination's cache as an ArgoCD with options o makes it, with stale answers
// and a table of keys of its own.
func newTestObjects(inner cluster.Objects, o Options) *cachedObjects {
	return newCachedObjects(inner, o, newStaleAnswers(), newMetaKeys())
}

// appRefs are the rows of one app: count ConfigMaps of namespace from first on.
func appRefs(namespace string, first, count int) []cluster.Ref {
	var refs []cluster.Ref
	for i := first; i < first+count; i++ {
		refs = append(refs, configMapRef(namespace, fmt.Sprintf("cm-%04d", i)))
	}
	return refs
}

// TestAppsOfANamespaceShareOneList: at 2,000 apps × 50 rows in 40 namespaces, each app's evaluation
// used to list its namespace again; now the first lists it into the cache, the others hit it, until
// the TTL passes.
func TestAppsOfANamespaceShareOneList(t *testing.T) {
	inner := newListingObjects(2, 500)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := newTestObjects(inner, Options{Size: 10000, TTL: 30 * time.Second, Now: func() time.Time { return now }})
	for app := range 10 {
		for k, res := range c.Read(context.Background(), appRefs("ns-0", app*50, 50)) {
			if res.Err != nil || res.Object.Ref.Name != fmt.Sprintf("cm-%04d", app*50+k) {
				t.Fatalf("app %d row %d: %+v", app, k, res)
			}
		}
	}
	if l, r := inner.lists.Load(), inner.reads.Load(); l != 1 || r != 0 {
		t.Errorf("10 apps of one namespace: %d LISTs and %d bulk reads, want 1 LIST", l, r)
	}
	c.Read(context.Background(), appRefs("ns-1", 0, 50))
	if l := inner.lists.Load(); l != 2 {
		t.Errorf("another namespace: %d LISTs in all, want 2", l)
	}
	now = now.Add(31 * time.Second)
	c.Read(context.Background(), appRefs("ns-0", 0, 50))
	if l := inner.lists.Load(); l != 3 {
		t.Errorf("after the TTL: %d LISTs in all, want the namespace listed again (3)", l)
	}
}

// TestWhatTheListingLacksIsReadAndFewMissesAreNotListed: an object the listing did not hold (created
// since) is read on its own and a missing one stays an error; one or two misses are read, not listed.
func TestWhatTheListingLacksIsReadAndFewMissesAreNotListed(t *testing.T) {
	inner := newListingObjects(1, 10)
	c := newTestObjects(inner, Options{Size: 1000, TTL: time.Minute})
	refs := append(appRefs("ns-0", 0, 3), configMapRef("ns-0", "gone"))
	res := c.Read(context.Background(), refs)
	if res[3].Err == nil || res[0].Err != nil || inner.lists.Load() != 1 || inner.reads.Load() != 1 {
		t.Errorf("results %+v, %d LISTs, %d reads: want 3 from the LIST and the gone one read (not found)", res, inner.lists.Load(), inner.reads.Load())
	}
	inner2 := newListingObjects(1, 10)
	c2 := newTestObjects(inner2, Options{Size: 1000, TTL: time.Minute})
	c2.Read(context.Background(), appRefs("ns-0", 0, 2))
	if inner2.lists.Load() != 0 || inner2.reads.Load() != 1 {
		t.Errorf("two misses: %d LISTs, %d reads; want them read", inner2.lists.Load(), inner2.reads.Load())
	}
}

// TestConcurrentEvaluationsWaitForOneList: the watch's workers evaluate apps of one namespace at
// once on start; they share the LIST.
func TestConcurrentEvaluationsWaitForOneList(t *testing.T) {
	inner := newListingObjects(1, 400)
	inner.slow = make(chan struct{})
	c := newTestObjects(inner, Options{Size: 1000, TTL: time.Minute})
	var wg sync.WaitGroup
	for app := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, res := range c.Read(context.Background(), appRefs("ns-0", app*50, 50)) {
				if res.Err != nil {
					t.Error(res.Err)
				}
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inner.lists.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(inner.slow)
	wg.Wait()
	if l, r := inner.lists.Load(), inner.reads.Load(); l != 1 || r != 0 {
		t.Errorf("%d LISTs, %d bulk reads for 8 concurrent apps of one namespace, want 1 LIST", l, r)
	}
}

// TestCachedOnlyNeverReads: the deletion budget's webhook answers from what the live cache read
// within its TTL and never reads the cluster, not even to refresh an older answer.
func TestCachedOnlyNeverReads(t *testing.T) {
	inner := newListingObjects(1, 10)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := newTestObjects(inner, Options{Size: 100, TTL: 30 * time.Second, Now: func() time.Time { return now }})
	c.Read(context.Background(), appRefs("ns-0", 0, 5))
	lists, reads := inner.lists.Load(), inner.reads.Load()
	only, ok := CachedOnly(c)
	if !ok {
		t.Fatal("a destination's cache is not cached only")
	}
	check := func(when string, wantCached int) {
		t.Helper()
		got := 0
		for i, res := range only.Read(context.Background(), appRefs("ns-0", 0, 10)) {
			switch {
			case res.Err == nil && res.Object != nil && res.Object.Ref.Name == fmt.Sprintf("cm-%04d", i):
				got++
			case !errors.Is(res.Err, errNotCached):
				t.Fatalf("%s: row %d: %+v", when, i, res)
			}
		}
		if got != wantCached {
			t.Errorf("%s: %d rows answered from the cache, want %d", when, got, wantCached)
		}
		if inner.lists.Load() != lists || inner.reads.Load() != reads {
			t.Errorf("%s: the cluster was read (%d LISTs, %d reads; %d, %d before)", when, inner.lists.Load(), inner.reads.Load(), lists, reads)
		}
	}
	// The LIST of the first read put all 10 in the cache.
	check("within the TTL", 10)
	now = now.Add(time.Minute)
	check("after the TTL", 0)
}

// TestForgetReadsAgain: an object the watch saw change is read from the API server at the next
// evaluation, however fresh the cache's copy.
func TestForgetReadsAgain(t *testing.T) {
	inner := newListingObjects(1, 1)
	c := newTestObjects(inner, Options{Size: 100, TTL: time.Hour})
	refs := []cluster.Ref{configMapRef("ns-0", "cm-0")}
	c.Read(t.Context(), refs)
	c.Read(t.Context(), refs)
	if got := inner.reads.Load(); got != 1 {
		t.Fatalf("%d reads before forget; want 1 (the second from the cache)", got)
	}
	c.forget(refs[0].Key())
	c.Read(t.Context(), refs)
	if got := inner.reads.Load(); got != 2 {
		t.Errorf("%d reads after forget; want 2", got)
	}
}
