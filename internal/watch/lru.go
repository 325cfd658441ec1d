package watch

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded, time-limited cache of live reads. Bounded: at 2,000 apps × 50 rows the watch
// must not keep every object it ever read. Time-limited: a guard added to a live object (a label, an
// annotation) is seen within the TTL even though the watch does not watch every kind.
type lru[V any] struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	now     func() time.Time
	order   *list.List // front is the most recently used
	entries map[string]*list.Element
}

type lruEntry[V any] struct {
	key     string
	value   V
	expires time.Time
}

func newLRU[V any](max int, ttl time.Duration, now func() time.Time) *lru[V] {
	if max <= 0 {
		max = 1
	}
	if now == nil {
		now = time.Now
	}
	return &lru[V]{max: max, ttl: ttl, now: now, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the value of key when present and not expired.
func (c *lru[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.entries, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// put stores value under key, evicting the least recently used entries beyond the bound.
func (c *lru[V]) put(key string, value V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.now().Add(c.ttl)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.value, e.expires = value, expires
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, value: value, expires: expires})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*lruEntry[V]).key)
	}
}

// remove drops key.
func (c *lru[V]) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.Remove(el)
		delete(c.entries, key)
	}
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
