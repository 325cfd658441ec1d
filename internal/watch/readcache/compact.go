package readcache

import (
	"encoding/binary"
	"strings"
	"sync"
)

// The watch keeps two things per object of every watched app — a status row per resource, the
// live object's metadata — so at 2,000 apps × 50 rows it keeps 100,000 of each. Go's generic shapes
// for them (a struct of seven string headers per row, a cluster.Object with two maps per live
// object) cost several times their content; both are kept encoded in one string of bytes instead,
// their repeated strings numbered in an intern table, and decoded for each read.

// internTable numbers the strings many encoded objects repeat (label and annotation keys; a row's
// group, version, kind, namespace, status and health). A string is written as its number plus one,
// or, once the table holds max strings, as 0 and the string itself: nothing stops a cluster from
// having strings no other object repeats.
type internTable struct {
	mu    sync.RWMutex
	index map[string]uint64
	all   []string
	max   int
}

func newInternTable(max int) *internTable {
	return &internTable{index: map[string]uint64{}, max: max}
}

func (t *internTable) append(b []byte, s string) []byte {
	t.mu.RLock()
	i, ok := t.index[s]
	t.mu.RUnlock()
	if !ok {
		t.mu.Lock()
		if i, ok = t.index[s]; !ok && len(t.all) < t.max {
			s = strings.Clone(s)
			i, ok = uint64(len(t.all)), true
			t.index[s] = i
			t.all = append(t.all, s)
		}
		t.mu.Unlock()
	}
	if !ok {
		return appendString(append(b, 0), s)
	}
	return binary.AppendUvarint(b, i+1)
}

// appendString writes s as its length, a uvarint, then its bytes.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads what the encoders wrote; the data is the watch's own, so it is well formed.
type decoder struct {
	s string
	i int
}

func (d *decoder) more() bool { return d.i < len(d.s) }

func (d *decoder) byte() byte {
	c := d.s[d.i]
	d.i++
	return c
}

// count reads a uvarint (binary.AppendUvarint).
func (d *decoder) count() int {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := d.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int(v)
		}
	}
}

func (d *decoder) fixed(n int) string {
	s := d.s[d.i : d.i+n]
	d.i += n
	return s
}

// string reads what appendString wrote, as a string of its own (not one holding the whole data).
func (d *decoder) string() string { return strings.Clone(d.fixed(d.count())) }

// interned reads what t.append wrote.
func (d *decoder) interned(t *internTable) string {
	i := d.count()
	if i == 0 {
		return d.string()
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.all[i-1]
}
