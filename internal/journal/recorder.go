package journal

import (
	"fmt"
	"sigs.k8s.io/yaml"
	"sync"
)

// Recorder makes a journal file follow a run whose patches happen
// concurrently. Every Mark* call updates the entry under a mutex and returns
// once a file containing that update has been atomically saved; marks made
// while another save is in flight are written together by the next save.
//
// Once a Journal is handed to a Recorder, use it only through the Recorder
// (Snapshot returns a copy).
type Recorder struct {
	store *Store
	path  string

	mu  sync.Mutex // guards j and gen
	j   *Journal
	gen uint64 // incremented by every update

	saveMu sync.Mutex // serialises saves; guards saved
	saved  uint64     // generation last written successfully
}

// NewRecorder returns a Recorder saving j to path (typically the path
// returned by Store.Create) through s.
func (s *Store) NewRecorder(path string, j *Journal) *Recorder {
	return &Recorder{store: s, path: path, j: j}
}

// Begin creates j in the store (see Store.Create) and returns a Recorder for it.
func (s *Store) Begin(j *Journal) (*Recorder, error) {
	path, err := s.Create(j)
	if err != nil {
		return nil, err
	}
	return s.NewRecorder(path, j), nil
}

// Path returns the journal file's path.
func (r *Recorder) Path() string { return r.path }

// Snapshot returns a deep copy of the journal as recorded so far.
func (r *Recorder) Snapshot() *Journal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.j.Clone()
}

// MarkApplied marks entry i applied (see Journal.MarkApplied) and saves.
func (r *Recorder) MarkApplied(i int, resourceVersion string) error {
	return r.Update(func(j *Journal) error {
		return j.MarkApplied(i, resourceVersion, r.store.now())
	})
}

// MarkFailed marks entry i failed with cause (see Journal.MarkFailed) and saves.
func (r *Recorder) MarkFailed(i int, cause error) error {
	return r.Update(func(j *Journal) error {
		return j.MarkFailed(i, cause, r.store.now())
	})
}

// MarkUndone marks entry i undone (see Journal.MarkUndone) and saves.
func (r *Recorder) MarkUndone(i int) error {
	return r.Update(func(j *Journal) error {
		return j.MarkUndone(i, r.store.now())
	})
}

// Update runs fn on the journal under the Recorder's lock and then saves the
// file. If fn returns an error nothing is saved (fn should leave the journal
// unchanged in that case). If the save fails the in-memory journal keeps the
// update and a later successful save writes it.
func (r *Recorder) Update(fn func(*Journal) error) error {
	r.mu.Lock()
	if err := fn(r.j); err != nil {
		r.mu.Unlock()
		return err
	}
	r.gen++
	mine := r.gen
	r.mu.Unlock()
	return r.flush(mine)
}

// Flush saves the journal as it is now.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	g := r.gen
	r.mu.Unlock()
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	return r.saveLocked(g, true)
}

// flush makes sure generation want (or a later one) is on disk.
func (r *Recorder) flush(want uint64) error {
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	return r.saveLocked(want, false)
}

func (r *Recorder) saveLocked(want uint64, force bool) error {
	if !force && r.saved >= want {
		return nil // a save that started after our update already wrote it
	}
	r.mu.Lock()
	gen := r.gen
	verr := r.j.Validate()
	var data []byte
	var eerr error
	if verr == nil {
		data, eerr = yaml.Marshal(r.j)
	}
	r.mu.Unlock()
	switch {
	case verr != nil:
		return fmt.Errorf("write journal %s: invalid journal: %w", r.path, verr)
	case eerr != nil:
		return fmt.Errorf("write journal %s: encode: %w", r.path, eerr)
	}
	if err := r.store.writeAtomic(r.path, data, true); err != nil {
		return err
	}
	r.saved = gen
	return nil
}
