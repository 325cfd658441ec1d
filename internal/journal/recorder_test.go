package journal

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func bigJournal(n int) *Journal {
	j := New("detach", "untrack")
	j.Application = &AppRef{Namespace: "argocd", Name: "big"}
	for i := range n {
		j.Entries = append(j.Entries, NewEntry(testObject(fmt.Sprintf("obj-%03d", i)),
			Removal(FieldLabel, "app.kubernetes.io/instance", "big"),
			Removal(FieldAnnotation, "argocd.argoproj.io/tracking-id", fmt.Sprintf("big:apps/Deployment:default/obj-%03d", i)),
		))
	}
	return j
}

func TestRecorderConcurrentMarks(t *testing.T) {
	const n = 150
	dir := t.TempDir()
	s := testStore(t, dir, t0)
	var writes atomic.Int64
	s.write = func(f *os.File, data []byte) error {
		writes.Add(1)
		_, err := f.Write(data)
		return err
	}
	r, err := s.Begin(bigJournal(n))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%7 == 0 {
				err = r.MarkFailed(i, fmt.Errorf("patch obj-%03d: conflict", i))
			} else {
				err = r.MarkApplied(i, fmt.Sprint(1000+i))
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got, err := s.Load(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Entries {
		switch {
		case i%7 == 0:
			if e.State != StateFailed || e.Error != fmt.Sprintf("patch obj-%03d: conflict", i) {
				t.Errorf("entry %d = %s %q, want failed", i, e.State, e.Error)
			}
		case e.State != StateApplied || e.AppliedResourceVersion != fmt.Sprint(1000+i):
			t.Errorf("entry %d = %s %q, want applied", i, e.State, e.AppliedResourceVersion)
		}
	}
	if snap := r.Snapshot(); !reflect.DeepEqual(snap, got) {
		t.Error("file and Snapshot differ")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v", names)
	}
	t.Logf("%d marks, %d file writes", n, writes.Load()-1)

	// Undo everything concurrently too.
	var wg2 sync.WaitGroup
	for i := range n {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			if err := r.MarkUndone(i); err != nil {
				t.Error(err)
			}
		}()
	}
	wg2.Wait()
	got, err = s.Load(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Counts(); c[StateUndone] != n {
		t.Errorf("after undo: %v", c)
	}
}

func TestRecorderSaveFailureIsRetried(t *testing.T) {
	s := testStore(t, t.TempDir(), t0)
	r, err := s.Begin(validJournal())
	if err != nil {
		t.Fatal(err)
	}
	s.write = func(*os.File, []byte) error { return errors.New("disk full") }
	if err := r.MarkApplied(0, "5"); err == nil || !strings.Contains(err.Error(), "write journal "+r.Path()) {
		t.Fatalf("MarkApplied with failing disk = %v", err)
	}
	if j, err := s.Load(r.Path()); err != nil || j.Entries[0].State != StatePlanned {
		t.Fatalf("file after failed save: %v", err)
	}
	s.write = nil
	if err := r.MarkApplied(1, "6"); err != nil {
		t.Fatal(err)
	}
	j, err := s.Load(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if j.Entries[0].State != StateApplied || j.Entries[1].State != StateApplied {
		t.Errorf("states after recovery: %s %s", j.Entries[0].State, j.Entries[1].State)
	}

	// An invalid transition is reported and nothing is written.
	s.write = func(*os.File, []byte) error { t.Error("saved after a rejected transition"); return nil }
	if err := r.MarkApplied(0, "7"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("MarkApplied twice = %v", err)
	}
	if err := r.MarkFailed(99, nil); err == nil {
		t.Error("MarkFailed out of range succeeded")
	}
	s.write = nil
	if err := r.Flush(); err != nil {
		t.Error(err)
	}
}

func TestRecorderUsesClock(t *testing.T) {
	now := t0
	s := NewStore(t.TempDir(), func() time.Time { return now })
	r, err := s.Begin(validJournal())
	if err != nil {
		t.Fatal(err)
	}
	now = t0.Add(time.Minute)
	if err := r.MarkUndone(1); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Entries[1].UpdatedAt; !got.Equal(now) {
		t.Errorf("updatedAt = %v, want %v", got, now)
	}
}
