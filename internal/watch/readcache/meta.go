package readcache

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// The metadata cache holds every live object the watched apps list — 100,000 at 2,000 apps × 50
// rows — for the TTL and, past it, as the last good answer to fall back on. Kept as the
// cluster.Object it was read as, one such object took about 1 KB: a Ref of six strings, two Go
// maps of a whole group of eight slots even for one annotation, its own copy of every key. A
// liveMeta keeps the same metadata in one string of bytes (compact.go), with the keys interned, and
// builds the object back for each read (BenchmarkLiveCacheEntry).

// liveMeta is a live object's metadata as the metadata cache keeps it: everything a judgement
// reads except the Ref, which the cache's key and the read's own ref carry, and what no judgement
// reads — managedFields, and kubectl's last-applied copy of the whole object (Argo CD ignores it
// for ownership, and it is often most of an object's metadata).
type liveMeta struct {
	// data is the metadata encoded (compactRead); empty: the read found no object.
	data string
	// content is the whole object, kept when the backend read it in full.
	content map[string]any
}

// The encoding: a flags byte; the UID, as 16 bytes when it is a canonical UUID, else as a string;
// the resourceVersion; the counts of labels, annotations and owners; the labels' then the
// annotations' keys (interned in the ArgoCD's table, newMetaKeys) and values; the owners
// (compact.go).
const (
	metaPresent = 1 << iota
	metaDeleting
	metaUUID
)

// compactRead is what the metadata cache keeps of a read, its keys interned in keys; the object
// read is not changed.
func compactRead(keys *internTable, res cluster.ReadResult) liveMeta {
	o := res.Object
	if o == nil {
		return liveMeta{}
	}
	flags := byte(metaPresent)
	if o.Deleting {
		flags |= metaDeleting
	}
	uuid, isUUID := parseUUID(o.UID)
	if isUUID {
		flags |= metaUUID
	}
	b := make([]byte, 0, 64)
	b = append(b, flags)
	if isUUID {
		b = append(b, uuid[:]...)
	} else {
		b = appendString(b, o.UID)
	}
	b = appendString(b, o.ResourceVersion)
	_, lastApplied := o.Annotations[argocd.AnnotationLastAppliedConfiguration]
	annotations := len(o.Annotations)
	if lastApplied {
		annotations--
	}
	b = binary.AppendUvarint(b, uint64(len(o.Labels)))
	b = binary.AppendUvarint(b, uint64(annotations))
	b = binary.AppendUvarint(b, uint64(len(o.Owners)))
	b = appendPairs(keys, b, o.Labels, "")
	b = appendPairs(keys, b, o.Annotations, argocd.AnnotationLastAppliedConfiguration)
	for _, owner := range o.Owners {
		b = appendString(b, owner)
	}
	return liveMeta{data: string(b), content: o.Content}
}

// appendPairs writes m's keys (interned in keys) and values, but for the key skip.
func appendPairs(keys *internTable, b []byte, m map[string]string, skip string) []byte {
	for k, v := range m {
		if k != skip || skip == "" {
			b = appendString(keys.append(b, k), v)
		}
	}
	return b
}

// object is the cached metadata as the object ref names, with maps of its own for the caller; keys
// is the table compactRead interned its keys in.
func (m liveMeta) object(keys *internTable, ref cluster.Ref) *cluster.Object {
	if m.data == "" {
		return nil
	}
	d := decoder{s: m.data}
	flags := d.byte()
	o := &cluster.Object{Ref: ref, Deleting: flags&metaDeleting != 0, Content: m.content}
	if flags&metaUUID != 0 {
		o.UID = formatUUID(d.fixed(16))
	} else {
		o.UID = d.string()
	}
	o.ResourceVersion = d.string()
	labels, annotations, owners := d.count(), d.count(), d.count()
	o.Labels, o.Annotations = pairs(&d, keys, labels), pairs(&d, keys, annotations)
	if owners > 0 {
		o.Owners = make([]string, owners)
		for i := range o.Owners {
			o.Owners[i] = d.string()
		}
	}
	return o
}

// metaBytes is a metadata cache entry's estimated bytes: the entry, its key, its data.
func metaBytes(key string, a answer[liveMeta]) int64 {
	n := int64(metaEntryOverhead + len(key) + len(a.value.data))
	if a.value.content != nil {
		n += contentBytes(a.value.content)
	}
	return n
}

// pairs reads n keys (interned in keys) and values as a map; nil when there are none, as a decoded
// object has.
func pairs(d *decoder, keys *internTable, n int) map[string]string {
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.interned(keys)
		m[k] = d.string()
	}
	return m
}

// metaEntryOverhead is a metadata cache entry's bookkeeping, on amd64: the entry with its links,
// key, answer and expiry (112 bytes), the map's slot, and the allocations' rounding.
const metaEntryOverhead = 160

// newMetaKeys is a table for the label and annotation keys of the cached metadata: a few keys —
// the tracking annotation, the instance label, the sync options — recur on every object. An ArgoCD
// has one, which every destination's cache shares.
func newMetaKeys() *internTable { return newInternTable(1 << 14) }

// parseUUID reads a UUID in the canonical form the API server gives every object
// (8-4-4-4-12 lowercase hex digits): only a UID that formatUUID writes back the same is one.
func parseUUID(s string) (out [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return out, false
	}
	digits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(out[:], []byte(digits)); err != nil || strings.ToLower(digits) != digits {
		return out, false
	}
	return out, true
}

func formatUUID(raw string) string {
	h := hex.EncodeToString([]byte(raw))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
