package readcache

import (
	"fmt"
	"testing"
	"time"
)

func TestLRUBoundAndTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := newLRU[int](2, time.Minute, func() time.Time { return now })
	c.put("a", 1)
	c.put("b", 2)
	c.get("a") // a is now the most recently used
	c.put("c", 3)
	if _, ok := c.get("b"); ok || c.len() != 2 {
		t.Fatalf("b should have been evicted (len %d)", c.len())
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatal("a should be kept")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get("a"); ok {
		t.Fatal("a should have expired")
	}
}

// TestLRUBoundByBytes: entries are evicted least recently used first once their bytes exceed the
// bound, whatever their count; a replaced or removed entry gives its bytes back; one entry larger
// than the bound is kept alone rather than refused.
func TestLRUBoundByBytes(t *testing.T) {
	var evicted []string
	c := newLRU[string](100, time.Minute, nil)
	c.evicted = func(k string) { evicted = append(evicted, k) }
	c.limitBytes(10, func(_ string, v string) int64 { return int64(len(v)) })
	c.put("a", "xxxx")
	c.put("b", "xxxx")
	c.get("a")
	c.put("c", "xxxx") // 12 bytes: b, the least recently used, goes
	if fmt.Sprint(evicted) != "[b]" || c.size() != 8 || c.len() != 2 {
		t.Fatalf("evicted %v, %d bytes in %d entries", evicted, c.size(), c.len())
	}
	c.put("a", "x") // replaced: 5 bytes
	c.remove("c")
	if c.size() != 1 || c.len() != 1 {
		t.Fatalf("%d bytes in %d entries after a replacement and a removal", c.size(), c.len())
	}
	c.put("big", "xxxxxxxxxxxxxxxx")
	if _, ok := c.get("big"); !ok || c.len() != 1 || c.size() != 16 {
		t.Fatalf("an entry above the bound: kept %v, %d entries, %d bytes", ok, c.len(), c.size())
	}
}
