package watch

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded, time-limited cache of live reads. Bounded: at 2,000 apps × 50 rows the watch
// must not keep every object it ever read. Time-limited: a guard added to a live object (a label, an
// annotation) is seen within the TTL even though the watch does not watch every kind. An expired
// entry is not answered by get but stays until the bound evicts it: it is the last good answer to
// fall back on when reading again fails (peek).
type lru[V any] struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	now     func() time.Time
	order   *list.List // front is the most recently used
	entries map[string]*list.Element
	// evicted, when set, hears of every entry the bound evicts.
	evicted func(key string)
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
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.value, true
}

// peek returns the value of key, expired or not.
func (c *lru[V]) peek(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	return el.Value.(*lruEntry[V]).value, true
}

// put stores value under key for the TTL, evicting the least recently used entries beyond the
// bound.
func (c *lru[V]) put(key string, value V) { c.putFor(key, value, c.ttl) }

// putFor stores value under key, answered by get for d.
func (c *lru[V]) putFor(key string, value V, d time.Duration) {
	c.mu.Lock()
	expires := c.now().Add(d)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.value, e.expires = value, expires
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return
	}
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, value: value, expires: expires})
	var gone []string
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		k := last.Value.(*lruEntry[V]).key
		delete(c.entries, k)
		gone = append(gone, k)
	}
	c.mu.Unlock()
	if c.evicted != nil {
		for _, k := range gone {
			c.evicted(k)
		}
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
