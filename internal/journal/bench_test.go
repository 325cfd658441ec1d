package journal

import (
	"testing"
	"time"
)

// BenchmarkCreateLoadClose: the journal of a 1,000-object run written, every outcome marked,
// compacted, and loaded again (as undo does).
func BenchmarkCreateLoadClose(b *testing.B) {
	for range b.N {
		s := &Store{Dir: b.TempDir(), Now: time.Now, FlushInterval: time.Millisecond}
		rec, err := s.Create(testJournal(1000))
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			_ = rec.MarkApplied(i, "2")
		}
		if err := rec.Close(); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Load(rec.Path()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad: undo's first step, loading the compacted journal of a 10,000-object run.
func BenchmarkLoad(b *testing.B) {
	s := &Store{Dir: b.TempDir(), Now: time.Now, FlushInterval: time.Millisecond}
	rec, err := s.Create(testJournal(10000))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		_ = rec.MarkApplied(i, "2")
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.Load(rec.Path()); err != nil {
			b.Fatal(err)
		}
	}
}
