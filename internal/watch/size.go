package watch

import (
	"maps"
	"slices"
	"unique"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// The live caches are bounded by bytes as well as by count: the count alone let 100,000 objects
// take anything from 60 MiB (a ConfigMap with one annotation) to gigabytes (kubectl's last-applied
// copy of a large object in each). The bytes are an estimate of what an entry keeps reachable —
// its strings and maps, and the cache's own bookkeeping — not a measurement: close enough for a
// bound, cheap enough to take at every store.

// Estimated bytes of Go's bookkeeping, on amd64: an entry of the cache (its list element, map
// slot, expiry and answer), what a liveMeta adds to it (held in the entry), a cluster.Object, a map
// header, a map slot of a string key and a string or interface value (a map of up to 8 entries
// takes a whole group of 8), a string header.
// BenchmarkLiveCacheEntry compares the estimate with the heap an entry holds.
const (
	entryOverhead  = 256
	metaOverhead   = 80
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

// liveMeta is a live object's metadata as the metadata cache keeps it, in about half the heap of
// the cluster.Object it was read as (BenchmarkLiveCacheEntry): no Ref, which the cache's key and
// the read's own ref carry; labels and annotations as one slice of keys and values, where two Go
// maps take a group of eight slots each even for one entry, with the keys interned (a few keys —
// the tracking annotation, the instance label — recur on every object); and nothing no judgement reads —
// managedFields, and kubectl's last-applied copy of the whole object (Argo CD ignores it for
// ownership, and it is often most of an object's metadata).
type liveMeta struct {
	uid, resourceVersion string
	// pairs are the labels' keys and values, then the annotations'; labels is how many of its
	// strings are the labels'.
	pairs  []string
	labels int
	owners []string
	// content is the whole object, kept when the backend read it in full.
	content  map[string]any
	deleting bool
	// present: the read found the object; a zero liveMeta answers that it is not there.
	present bool
}

// compactRead is what the metadata cache keeps of a read; the object read is not changed.
func compactRead(res cluster.ReadResult) liveMeta {
	o := res.Object
	if o == nil {
		return liveMeta{}
	}
	pairs := make([]string, 0, 2*(len(o.Labels)+len(o.Annotations)))
	for _, k := range slices.Sorted(maps.Keys(o.Labels)) {
		pairs = append(pairs, unique.Make(k).Value(), o.Labels[k])
	}
	labels := len(pairs)
	for _, k := range slices.Sorted(maps.Keys(o.Annotations)) {
		if k != argocd.AnnotationLastAppliedConfiguration {
			pairs = append(pairs, unique.Make(k).Value(), o.Annotations[k])
		}
	}
	return liveMeta{uid: o.UID, resourceVersion: o.ResourceVersion, pairs: pairs, labels: labels, owners: o.Owners,
		content: o.Content, deleting: o.Deleting, present: true}
}

// object is the cached metadata as the object ref names, with maps of its own for the caller.
func (m liveMeta) object(ref cluster.Ref) *cluster.Object {
	if !m.present {
		return nil
	}
	return &cluster.Object{Ref: ref, UID: m.uid, ResourceVersion: m.resourceVersion, Labels: pairsMap(m.pairs[:m.labels]),
		Annotations: pairsMap(m.pairs[m.labels:]), Owners: slices.Clone(m.owners), Content: m.content, Deleting: m.deleting}
}

// pairsMap is keys and values as a map; nil when there are none, as a decoded object has.
func pairsMap(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// metaBytes is a metadata cache entry's.
func metaBytes(key string, a answer[liveMeta]) int64 {
	m := a.value
	n := int64(entryOverhead + metaOverhead + len(key) + len(m.uid) + len(m.resourceVersion))
	n += int64(len(m.pairs)) * stringOverhead
	for _, s := range m.pairs {
		n += int64(len(s))
	}
	for _, s := range m.owners {
		n += stringOverhead + int64(len(s))
	}
	if m.content != nil {
		n += contentBytes(m.content)
	}
	return n
}
