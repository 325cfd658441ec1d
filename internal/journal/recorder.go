package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Recorder follows a run whose patches happen concurrently: it keeps the journal in memory and
// appends each outcome to the file as a one-line record. Outcomes are group-committed — written and
// fsynced together every FlushInterval — so that recording costs no more than a few fsyncs a second
// whatever the patch rate. A re-plan is written and fsynced before Replan returns, because the
// patch that follows it must never be on the cluster without its changes in the journal. Close
// writes what is left and compacts the file into one document.
//
// Once a Journal is handed to a Recorder, use it only through the Recorder (Snapshot returns a copy).
type Recorder struct {
	store *Store
	path  string
	file  *os.File

	mu  sync.Mutex // guards j, buf, err, closed
	j   *Journal
	buf []byte
	err error // the first failure to write; every later Sync and Close returns it

	writeMu sync.Mutex // serialises writes to file
	stop    chan struct{}
	stopped chan struct{}
	closed  bool
}

func newRecorder(s *Store, path string, j *Journal) (*Recorder, error) {
	r := &Recorder{store: s, path: path, j: j, stop: make(chan struct{}), stopped: make(chan struct{})}
	if s.Backing == nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
		r.file = f
	}
	interval := s.FlushInterval
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	go r.flushEvery(interval)
	return r, nil
}

func (r *Recorder) flushEvery(interval time.Duration) {
	defer close(r.stopped)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
			_ = r.Sync()
		}
	}
}

// Path returns the journal file's path.
func (r *Recorder) Path() string { return r.path }

// Snapshot returns a deep copy of the journal as recorded so far.
func (r *Recorder) Snapshot() *Journal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.Clone()
}

// MarkApplied records that entry i was patched (see Journal.MarkApplied).
func (r *Recorder) MarkApplied(i int, resourceVersion string) error {
	return r.record(mark{Entry: i, State: StateApplied, ResourceVersion: resourceVersion})
}

// MarkFailed records that entry i was not patched (see Journal.MarkFailed).
func (r *Recorder) MarkFailed(i int, cause string, clearChanges bool) error {
	return r.record(mark{Entry: i, State: StateFailed, Error: cause, ClearChanges: clearChanges})
}

// MarkSkipped records that nothing was changed for entry i.
func (r *Recorder) MarkSkipped(i int, why string) error {
	return r.record(mark{Entry: i, State: StateSkipped, Error: why})
}

// MarkUndone records that entry i was restored.
func (r *Recorder) MarkUndone(i int) error {
	return r.record(mark{Entry: i, State: StateUndone})
}

// Replan records the changes entry i will be patched with after a conflict, durably, before the
// caller sends that patch.
func (r *Recorder) Replan(i int, resourceVersion string, changes []Change) error {
	if err := r.record(mark{Entry: i, Replan: true, ResourceVersion: resourceVersion, Changes: changes}); err != nil {
		return err
	}
	return r.Sync()
}

func (r *Recorder) record(m mark) error {
	m.At = r.store.now()
	line, err := m.encode()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("journal is closed")
	}
	if err := m.apply(r.j); err != nil {
		return err
	}
	r.buf = append(r.buf, line...)
	return r.err
}

// Sync writes and fsyncs every record made so far.
func (r *Recorder) Sync() error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	buf := r.buf
	r.buf = nil
	failed := r.err
	r.mu.Unlock()
	if failed != nil || len(buf) == 0 {
		return failed
	}
	var err error
	if b := r.store.Backing; b != nil {
		err = b.Append(context.Background(), r.path, buf)
	} else if _, err = r.file.Write(buf); err == nil {
		err = r.file.Sync()
	}
	if err != nil {
		err = fmt.Errorf("write journal %s: %w", r.path, err)
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return err
}

// Err returns the first failure to write the journal, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close writes what is left and compacts the file into one document with every outcome in its
// entries. After a failure to write, the file keeps what it has and Close returns that failure.
func (r *Recorder) Close() error {
	return r.CloseInBackground()()
}

// CloseInBackground is Close in two halves: what is left is written and fsynced before it returns,
// so the file says everything that happened; the compaction into one document runs while the
// caller goes on (printing a report, waiting for Argo CD), and wait returns Close's outcome once it
// is done. A file left uncompacted (the process ended first) loads as it is.
func (r *Recorder) CloseInBackground() (wait func() error) {
	r.mu.Lock()
	if r.closed {
		err := r.err
		r.mu.Unlock()
		return func() error { return err }
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.stopped
	err := r.Sync()
	if r.file == nil {
		// Backed: nothing to close.
	} else if cerr := r.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close journal %s: %w", r.path, cerr)
	}
	if err != nil {
		return func() error { return err }
	}
	done := make(chan error, 1)
	go func() { done <- r.compact() }()
	return sync.OnceValue(func() error { return <-done })
}

// compact rewrites the file as one document with every outcome in its entries.
func (r *Recorder) compact() error {
	r.mu.Lock()
	verr := r.j.Validate()
	data, eerr := encodeJournal(r.j)
	r.mu.Unlock()
	switch {
	case verr != nil:
		return fmt.Errorf("compact journal %s: %w", r.path, verr)
	case eerr != nil:
		return fmt.Errorf("compact journal %s: %w", r.path, eerr)
	}
	if b := r.store.Backing; b != nil {
		if err := b.Replace(context.Background(), r.path, data); err != nil {
			return fmt.Errorf("compact journal %s: %w", r.path, err)
		}
		return nil
	}
	return writeAtomic(r.path, data, true, r.store.write)
}
