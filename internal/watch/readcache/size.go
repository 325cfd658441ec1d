package readcache

import (
	"github.com/unprune/unprune/internal/cluster"
)

// The live caches are bounded by bytes as well as by count: the count alone let 100,000 objects
// take anything from 60 MiB (a ConfigMap with one annotation) to gigabytes (kubectl's last-applied
// copy of a large object in each). The bytes are an estimate of what an entry keeps reachable —
// its strings and maps, and the cache's own bookkeeping — not a measurement: close enough for a
// bound, cheap enough to take at every store.

// Estimated bytes of Go's bookkeeping, on amd64: an entry of the cache (its list element, map
// slot, expiry and answer), a cluster.Object, a map header, a map slot of a string key and a string
// or interface value (a map of up to 8 entries takes a whole group of 8), a string header.
// BenchmarkLiveCacheEntry compares the estimate with the heap an entry holds.
const (
	entryOverhead  = 256
	objectOverhead = 224
	mapOverhead    = 56
	slotOverhead   = 32
	stringOverhead = 16
)

// mapBytes is a map of n entries' own: its header and slots, a group of 8 at least, 7/8 full at
// most.
func mapBytes(n int) int64 {
	slots := max(8, n*8/7+1)
	return mapOverhead + int64(slots)*slotOverhead
}

func stringsBytes(m map[string]string) int64 {
	if m == nil {
		return 0
	}
	n := mapBytes(len(m))
	for k, v := range m {
		n += int64(len(k) + len(v))
	}
	return n
}

// contentBytes estimates a decoded JSON object's.
func contentBytes(v any) int64 {
	switch t := v.(type) {
	case map[string]any:
		n := mapBytes(len(t))
		for k, x := range t {
			n += int64(len(k)) + contentBytes(x)
		}
		return n
	case []any:
		n := int64(24)
		for _, x := range t {
			n += 16 + contentBytes(x)
		}
		return n
	case string:
		return stringOverhead + int64(len(t))
	}
	return 8
}

// objectBytes estimates what a cached live object keeps.
func objectBytes(o *cluster.Object) int64 {
	if o == nil {
		return 0
	}
	n := int64(objectOverhead + len(o.UID) + len(o.ResourceVersion) + len(o.Ref.Name) + len(o.Ref.Namespace))
	n += stringsBytes(o.Labels) + stringsBytes(o.Annotations)
	for _, s := range o.Owners {
		n += stringOverhead + int64(len(s))
	}
	for _, f := range o.ManagedFields {
		n += 128 + int64(len(f.FieldsV1))
	}
	if o.Content != nil {
		n += contentBytes(o.Content)
	}
	return n
}

// readBytes is a cache entry's for a read.
func readBytes(key string, a answer[cluster.ReadResult]) int64 {
	return entryOverhead + int64(len(key)) + objectBytes(a.value.Object)
}
