package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Ext is the file name extension of journal files.
const Ext = ".json"

// idTimeLayout is the timestamp that starts every journal ID.
const idTimeLayout = "20060102T150405Z"

// DefaultDir returns the journal directory: $XDG_STATE_HOME/unprune/journal, or
// ~/.local/state/unprune/journal when XDG_STATE_HOME is unset, empty or relative (the XDG spec
// says relative paths are to be ignored).
func DefaultDir(getenv func(string) string, home func() (string, error)) (string, error) {
	if getenv != nil {
		if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			return filepath.Join(x, "unprune", "journal"), nil
		}
	}
	if home == nil {
		return "", errors.New("journal directory: XDG_STATE_HOME is not set and no home directory lookup")
	}
	h, err := home()
	if err != nil {
		return "", fmt.Errorf("journal directory: XDG_STATE_HOME is not set and the home directory is unknown: %w", err)
	}
	if h == "" {
		return "", errors.New("journal directory: XDG_STATE_HOME is not set and the home directory is empty")
	}
	return filepath.Join(h, ".local", "state", "unprune", "journal"), nil
}

// Store reads and writes journal files in a directory. The zero value of Now and Rand means
// time.Now and crypto/rand.
type Store struct {
	Dir  string
	Now  func() time.Time
	Rand io.Reader
	// FlushInterval bounds how long an outcome waits before it is written and fsynced with others;
	// 0 means 20ms.
	FlushInterval time.Duration

	// Backing, when set, keeps the journals instead of files in Dir (see Backing).
	Backing Backing

	// write writes data to a temp file; tests replace it to inject failures.
	write func(f *os.File, data []byte) error
}

// NewBackedStore returns a Store keeping its journals in b, with clock now (nil: time.Now).
func NewBackedStore(b Backing, now func() time.Time) *Store {
	return &Store{Dir: b.Where(), Backing: b, Now: now}
}

// NewStore returns a Store for dir with clock now (nil: time.Now).
func NewStore(dir string, now func() time.Time) *Store {
	return &Store{Dir: dir, Now: now}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Path returns the file path of the journal with the given ID.
func (s *Store) Path(id string) string {
	if s.Backing != nil {
		return s.Backing.Path(id)
	}
	return filepath.Join(s.Dir, id+Ext)
}

// Create writes j as a new file, every entry planned, fsynced before it returns, and returns a
// Recorder that appends the outcomes. It assigns an ID and createdAt if empty, validates j, creates
// the directory (0700) if needed, and refuses to overwrite an existing file.
func (s *Store) Create(j *Journal) (*Recorder, error) {
	if j == nil {
		return nil, errors.New("create journal: journal is nil")
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = s.now()
	}
	for i := range j.Entries {
		if j.Entries[i].State == "" {
			j.Entries[i].State = StatePlanned
		}
		if j.Entries[i].UpdatedAt.IsZero() {
			j.Entries[i].UpdatedAt = j.CreatedAt
		}
	}
	if s.Backing == nil {
		if err := ensureDir(s.Dir); err != nil {
			return nil, err
		}
	}
	generated := j.ID == ""
	for attempt := 0; ; attempt++ {
		if generated {
			id, err := s.newID(j)
			if err != nil {
				return nil, fmt.Errorf("create journal: %w", err)
			}
			j.ID = id
		}
		path, err := s.create(j)
		if err == nil {
			return newRecorder(s, path, j)
		}
		if !generated || !errors.Is(err, fs.ErrExist) || attempt >= 8 {
			if generated {
				j.ID = ""
			}
			return nil, err
		}
	}
}

func (s *Store) create(j *Journal) (string, error) {
	if err := j.Validate(); err != nil {
		return "", fmt.Errorf("create journal: invalid journal: %w", err)
	}
	data, err := encodeJournal(j)
	if err != nil {
		return "", fmt.Errorf("create journal %s: encode: %w", j.ID, err)
	}
	path := s.Path(j.ID)
	if s.Backing != nil {
		return path, s.Backing.Create(context.Background(), path, data)
	}
	return path, writeAtomic(path, data, false, s.write)
}

var slugInvalid = regexp.MustCompile(`[^a-z0-9.]+`)

func slug(s string) string {
	s = slugInvalid.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-.")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-.")
	}
	return s
}

// newID returns <UTC timestamp>-<command>[-<application>]-<4 hex digits>.
func (s *Store) newID(j *Journal) (string, error) {
	var b [2]byte
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("journal id: random suffix: %w", err)
	}
	parts := []string{j.CreatedAt.UTC().Format(idTimeLayout)}
	if c := slug(j.Command); c != "" {
		parts = append(parts, c)
	}
	if apps := j.Applications(); len(apps) == 1 {
		if a := slug(apps[0].Name); a != "" {
			parts = append(parts, a)
		}
	} else if len(apps) > 1 {
		parts = append(parts, fmt.Sprintf("%dapps", len(apps)))
	}
	parts = append(parts, hex.EncodeToString(b[:]))
	return strings.Join(parts, "-"), nil
}

// Load reads the journal at path after checking that nobody else could have written it or its
// directory. torn reports a last record cut short by a crash (dropped).
func (s *Store) Load(path string) (j *Journal, torn bool, err error) {
	if s.Backing != nil {
		j, torn, _, err = s.loadBacked(path)
		return j, torn, err
	}
	if err := checkPrivate(filepath.Dir(path), true); err != nil {
		return nil, false, err
	}
	if err := checkPrivate(path, false); err != nil {
		return nil, false, fmt.Errorf("%w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read journal %s: %w", path, err)
	}
	return decode(path, data)
}

// Open loads the journal at path and returns a Recorder to append to it (undo).
func (s *Store) Open(path string) (*Recorder, error) {
	if s.Backing != nil {
		j, _, canonical, err := s.loadBacked(path)
		if err != nil {
			return nil, err
		}
		return newRecorder(s, canonical, j)
	}
	j, _, err := s.Load(path)
	if err != nil {
		return nil, err
	}
	return newRecorder(s, path, j)
}

// Summary describes one journal file, for `unprune undo --list`.
type Summary struct {
	Path         string
	ID           string
	CreatedAt    time.Time
	ToolVersion  string
	Command      string
	Strategy     string
	Clusters     []string
	Applications []AppRef
	// Entries is the number of entries; Planned..Undone count them by state.
	Entries, Planned, Applied, Failed, Skipped, Undone int
	// Torn reports a last record cut short by a crash.
	Torn bool
	// Err is set when the file could not be loaded; then only Path, ID (from the file name) and
	// CreatedAt (from the ID, if it parses) are filled in.
	Err error
}

// List returns a summary of every journal in the directory, newest first (by createdAt, then ID).
// Files that fail to load are included with Err set. A missing directory means no journals.
func (s *Store) List() ([]Summary, error) {
	var out []Summary
	err := s.each(func(path string, j *Journal, torn bool, err error) {
		if err != nil {
			id := strings.TrimSuffix(filepath.Base(path), Ext)
			sum := Summary{Path: path, ID: id, Err: err}
			if len(id) >= len(idTimeLayout) {
				if t, perr := time.Parse(idTimeLayout, id[:len(idTimeLayout)]); perr == nil {
					sum.CreatedAt = t
				}
			}
			out = append(out, sum)
			return
		}
		out = append(out, summarize(path, j, torn))
	})
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].CreatedAt.Equal(out[b].CreatedAt) {
			return out[a].CreatedAt.After(out[b].CreatedAt)
		}
		return out[a].ID > out[b].ID
	})
	return out, err
}

// each loads every journal file of the directory, in directory order. A missing directory means no
// journals.
func (s *Store) each(fn func(path string, j *Journal, torn bool, err error)) error {
	if bulk, ok := s.Backing.(BulkReader); ok {
		all, err := bulk.ReadAll(context.Background())
		if err != nil {
			return fmt.Errorf("list journals in %s: %w", s.Dir, err)
		}
		for _, st := range all {
			j, torn, err := decode(st.Path, st.Data)
			fn(st.Path, j, torn, err)
		}
		return nil
	}
	if s.Backing != nil {
		paths, err := s.Backing.List(context.Background())
		if err != nil {
			return fmt.Errorf("list journals in %s: %w", s.Dir, err)
		}
		for _, path := range paths {
			j, torn, _, err := s.loadBacked(path)
			fn(path, j, torn, err)
		}
		return nil
	}
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("list journals in %s: %w", s.Dir, err)
	}
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, Ext) {
			continue
		}
		path := filepath.Join(s.Dir, name)
		j, torn, err := s.Load(path)
		fn(path, j, torn, err)
	}
	return nil
}

func summarize(path string, j *Journal, torn bool) Summary {
	c := j.Counts()
	sum := Summary{
		Path: path, ID: j.ID, CreatedAt: j.CreatedAt, ToolVersion: j.ToolVersion,
		Command: j.Command, Strategy: j.Strategy, Applications: j.Applications(), Torn: torn,
		Entries: len(j.Entries), Planned: c[StatePlanned], Applied: c[StateApplied], Failed: c[StateFailed], Skipped: c[StateSkipped], Undone: c[StateUndone],
	}
	for _, cl := range j.Clusters {
		sum.Clusters = append(sum.Clusters, cl.Name)
	}
	return sum
}

// Latest returns the path of the newest journal in the directory. If the newest file cannot be
// loaded its error is returned rather than silently falling back to an older journal. With no
// journals the error wraps ErrNoJournals.
func (s *Store) Latest() (string, error) {
	list, err := s.List()
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("%w in %s", ErrNoJournals, s.Dir)
	}
	if list[0].Err != nil {
		return "", fmt.Errorf("newest journal %s cannot be read: %w", list[0].Path, list[0].Err)
	}
	return list[0].Path, nil
}

// Release is where a journal recorded the release of one object.
type Release struct {
	Path string
	At   time.Time
	// Sent is false when the entry is still planned: the run was killed after the journal was
	// written, before it could mark the patch — which may or may not have been sent.
	Sent bool
}

// Releases finds, for the given object UIDs, the newest entry of a detach journal whose patch
// was applied or planned (a run killed before it could mark it), so that a rerun can say who
// released an object Argo CD still lists. Journals that cannot be read are passed over: this is
// an explanation, never a permission.
func (s *Store) Releases(uids map[string]bool) map[string]Release {
	out := map[string]Release{}
	if len(uids) == 0 {
		return out
	}
	_ = s.each(func(path string, j *Journal, _ bool, err error) {
		if err != nil || j.Command != "detach" {
			return
		}
		for _, e := range j.Entries {
			if !uids[e.Object.UID] || e.State != StateApplied && e.State != StatePlanned {
				continue
			}
			at := e.UpdatedAt
			if at.IsZero() {
				at = j.CreatedAt
			}
			if prev, seen := out[e.Object.UID]; !seen || at.After(prev.At) {
				out[e.Object.UID] = Release{Path: path, At: at, Sent: e.State == StateApplied}
			}
		}
	})
	return out
}

// loadBacked reads a journal from the Backing; canonical is its path however it was named.
func (s *Store) loadBacked(path string) (j *Journal, torn bool, canonical string, err error) {
	data, canonical, err := s.Backing.Read(context.Background(), path)
	if err != nil {
		return nil, false, "", fmt.Errorf("read journal %s: %w", path, err)
	}
	j, torn, err = decode(canonical, data)
	return j, torn, canonical, err
}
