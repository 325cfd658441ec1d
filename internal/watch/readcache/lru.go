package readcache

import (
	"sync"
	"time"
)

// lru is a bounded, time-limited cache of live reads. Bounded: at 2,000 apps × 50 rows the watch
// must not keep every object it ever read; by count, and by bytes where a cost is set (an object's
// labels and annotations can weigh a hundred times another's). Time-limited: a guard added to a live object (a label, an
// annotation) is seen within the TTL even though the watch does not watch every kind. An expired
// entry is not answered by get but stays until the bound evicts it: it is the last good answer to
// fall back on when reading again fails (peek).
type lru[V any] struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	now func() time.Time
	// root links the entries in a ring: root.next is the most recently used. The links live in the
	// entries themselves (container/list would add an element and a boxed pointer to each of the
	// 100,000 entries a busy watch keeps).
	root    lruEntry[V]
	entries map[string]*lruEntry[V]
	// evicted, when set, hears of every entry the bound evicts.
	evicted func(key string)
	// cost, when set, estimates an entry's bytes; the entries' total stays within maxBytes.
	cost     func(key string, value V) int64
	maxBytes int64
	bytes    int64
}

type lruEntry[V any] struct {
	prev, next *lruEntry[V]
	key        string
	value      V
	// expires is in Unix nanoseconds: a third of a time.Time.
	expires int64
	cost    int64
}

// limitBytes bounds the entries' estimated bytes as well as their count.
func (c *lru[V]) limitBytes(max int64, cost func(key string, value V) int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes, c.cost = max, cost
}

func (c *lru[V]) costOf(key string, value V) int64 {
	if c.cost == nil {
		return 0
	}
	return c.cost(key, value)
}

// over reports the bound exceeded, keeping at least the entry just stored.
func (c *lru[V]) over() bool {
	return len(c.entries) > c.max || (c.cost != nil && c.bytes > c.maxBytes && len(c.entries) > 1)
}

func newLRU[V any](max int, ttl time.Duration, now func() time.Time) *lru[V] {
	if max <= 0 {
		max = 1
	}
	if now == nil {
		now = time.Now
	}
	c := &lru[V]{max: max, ttl: ttl, now: now, entries: map[string]*lruEntry[V]{}}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

func (c *lru[V]) unlink(e *lruEntry[V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *lru[V]) pushFront(e *lruEntry[V]) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}

func (c *lru[V]) toFront(e *lruEntry[V]) {
	if c.root.next != e {
		c.unlink(e)
		c.pushFront(e)
	}
}

// get returns the value of key when present and not expired.
func (c *lru[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	e, ok := c.entries[key]
	if !ok || c.now().UnixNano() >= e.expires {
		return zero, false
	}
	c.toFront(e)
	return e.value, true
}

// peek returns the value of key, expired or not.
func (c *lru[V]) peek(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	e, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	return e.value, true
}

// put stores value under key for the TTL, evicting the least recently used entries beyond the
// bound.
func (c *lru[V]) put(key string, value V) { c.putFor(key, value, c.ttl) }

// putFor stores value under key, answered by get for d.
func (c *lru[V]) putFor(key string, value V, d time.Duration) {
	c.mu.Lock()
	expires := c.now().Add(d).UnixNano()
	cost := c.costOf(key, value)
	if e, ok := c.entries[key]; ok {
		c.bytes += cost - e.cost
		e.value, e.expires, e.cost = value, expires, cost
		c.toFront(e)
	} else {
		e := &lruEntry[V]{key: key, value: value, expires: expires, cost: cost}
		c.entries[key] = e
		c.pushFront(e)
		c.bytes += cost
	}
	var gone []string
	for c.over() {
		last := c.root.prev
		c.unlink(last)
		delete(c.entries, last.key)
		c.bytes -= last.cost
		gone = append(gone, last.key)
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
	if e, ok := c.entries[key]; ok {
		c.unlink(e)
		delete(c.entries, key)
		c.bytes -= e.cost
	}
}

func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// size is the entries' estimated bytes.
func (c *lru[V]) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
