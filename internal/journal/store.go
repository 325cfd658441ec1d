package journal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// File and directory modes, applied explicitly (not left to the umask).
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// Ext is the file name extension of journal files.
const Ext = ".yaml"

// idTimeLayout is the timestamp that starts every journal ID.
const idTimeLayout = "20060102T150405Z"

// Errors returned (wrapped) by Load, List and Latest; test with errors.Is.
var (
	ErrNotJournal         = errors.New("not an unprune journal")
	ErrNewerVersion       = errors.New("newer than this unprune understands")
	ErrUnsupportedVersion = errors.New("not supported by this unprune")
	ErrNoJournals         = errors.New("no journals")
)

// DefaultDir returns the journal directory: $XDG_STATE_HOME/unprune/journal,
// or ~/.local/state/unprune/journal when XDG_STATE_HOME is unset, empty or
// relative (the XDG spec says relative paths are to be ignored). getenv is
// typically os.Getenv and home os.UserHomeDir.
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

// Store reads and writes journal files in a directory. The zero value of Now
// and Rand means time.Now and crypto/rand.
type Store struct {
	Dir  string
	Now  func() time.Time
	Rand io.Reader

	// write writes data to the temp file; tests replace it to inject failures.
	write func(f *os.File, data []byte) error
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
	return filepath.Join(s.Dir, id+Ext)
}

// Create writes j as a new file in the store directory and returns its path.
// It sets apiVersion and kind if empty, assigns an ID and createdAt if empty,
// marks entries without a state as planned (stamping updatedAt), validates
// j, creates the directory (0700) if needed, and refuses to overwrite an
// existing file (the error wraps fs.ErrExist).
func (s *Store) Create(j *Journal) (string, error) {
	if j == nil {
		return "", errors.New("create journal: journal is nil")
	}
	now := s.now()
	if j.APIVersion == "" {
		j.APIVersion = APIVersion
	}
	if j.Kind == "" {
		j.Kind = Kind
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = now
	}
	for i := range j.Entries {
		e := &j.Entries[i]
		if e.State == "" {
			e.State = StatePlanned
		}
		if e.UpdatedAt.IsZero() {
			e.UpdatedAt = j.CreatedAt
		}
	}
	generated := j.ID == ""
	if err := s.ensureDir(); err != nil {
		return "", err
	}
	for attempt := 0; ; attempt++ {
		if generated {
			id, err := s.newID(j)
			if err != nil {
				return "", fmt.Errorf("create journal: %w", err)
			}
			j.ID = id
		}
		path, err := s.create(j)
		if err == nil {
			return path, nil
		}
		if !generated || !errors.Is(err, fs.ErrExist) || attempt >= 8 {
			if generated {
				j.ID = "" // so that a retry generates a fresh one
			}
			return "", err
		}
	}
}

func (s *Store) create(j *Journal) (string, error) {
	if err := j.Validate(); err != nil {
		return "", fmt.Errorf("create journal: invalid journal: %w", err)
	}
	data, err := yaml.Marshal(j)
	if err != nil {
		return "", fmt.Errorf("create journal %s: encode: %w", j.ID, err)
	}
	path := s.Path(j.ID)
	return path, s.writeAtomic(path, data, false)
}

func (s *Store) ensureDir() error {
	if s.Dir == "" {
		return errors.New("journal directory is not set")
	}
	_, err := os.Stat(s.Dir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal directory %s: %w", s.Dir, err)
	}
	if err := os.MkdirAll(s.Dir, DirMode); err != nil {
		return fmt.Errorf("create journal directory %s: %w", s.Dir, err)
	}
	if err := os.Chmod(s.Dir, DirMode); err != nil {
		return fmt.Errorf("create journal directory %s: %w", s.Dir, err)
	}
	return nil
}

var slugInvalid = regexp.MustCompile(`[^a-z0-9.]+`)

func slug(s string) string {
	s = slugInvalid.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-.")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-.")
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
	if j.Application != nil {
		if a := slug(j.Application.Name); a != "" {
			parts = append(parts, a)
		}
	}
	parts = append(parts, hex.EncodeToString(b[:]))
	return strings.Join(parts, "-"), nil
}

// Save validates j and atomically replaces the file at path with it.
func (s *Store) Save(path string, j *Journal) error {
	if err := j.Validate(); err != nil {
		return fmt.Errorf("write journal %s: invalid journal: %w", path, err)
	}
	data, err := yaml.Marshal(j)
	if err != nil {
		return fmt.Errorf("write journal %s: encode: %w", path, err)
	}
	return s.writeAtomic(path, data, true)
}

// writeAtomic writes data to a temp file next to path, fsyncs it, moves it to
// path (replacing an existing file only if replace) and fsyncs the directory.
// On failure the temp file is removed and path is untouched.
func (s *Store) writeAtomic(path string, data []byte, replace bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write journal %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = os.Remove(tmp)
			err = fmt.Errorf("write journal %s: %w", path, err)
		}
	}()
	if err = f.Chmod(FileMode); err != nil {
		return err
	}
	write := s.write
	if write == nil {
		write = func(f *os.File, data []byte) error { _, err := f.Write(data); return err }
	}
	if err = write(f, data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = linkNoReplace(tmp, path)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

// linkNoReplace moves tmp to path unless path exists. A hard link fails
// atomically if path exists; where links are unsupported fall back to a
// check-then-rename.
func linkNoReplace(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		// The journal is in place; a leftover dot-file is ignored by List.
		_ = os.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w (refusing to overwrite)", fs.ErrExist)
	}
	if _, serr := os.Lstat(path); serr == nil {
		return fmt.Errorf("%w (refusing to overwrite)", fs.ErrExist)
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there; rename is durable enough
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// Load reads the journal at path. Decoding is strict: unknown or duplicate
// fields are errors, as are another kind, another API group, an apiVersion
// other than this package's (newer ones ask to upgrade unprune) and a
// document that fails Validate.
func (s *Store) Load(path string) (*Journal, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	return decode(path, data)
}

// Load reads the journal at path; see Store.Load.
func Load(path string) (*Journal, error) { return (&Store{}).Load(path) }

func decode(path string, data []byte) (*Journal, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s is %w: invalid YAML: %w", path, ErrNotJournal, err)
	}
	var top any
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s is %w: %w", path, ErrNotJournal, err)
	}
	if top == nil {
		return nil, fmt.Errorf("%s is %w (empty document)", path, ErrNotJournal)
	}
	m, ok := top.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %w (not a YAML mapping)", path, ErrNotJournal)
	}
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	switch {
	case m["kind"] == nil && m["apiVersion"] == nil:
		return nil, fmt.Errorf("%s is %w (no apiVersion or kind)", path, ErrNotJournal)
	case kind != Kind:
		return nil, fmt.Errorf("%s is %w (kind %s)", path, ErrNotJournal, show(m["kind"]))
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != Group {
		return nil, fmt.Errorf("%s is %w (apiVersion %s)", path, ErrNotJournal, show(m["apiVersion"]))
	}
	if version != Version {
		if compareVersions(version, Version) > 0 {
			return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s); upgrade unprune",
				path, apiVersion, ErrNewerVersion, APIVersion)
		}
		return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s)", path, apiVersion, ErrUnsupportedVersion, APIVersion)
	}
	var j Journal
	if err := yaml.UnmarshalStrict(data, &j); err != nil {
		return nil, fmt.Errorf("parse journal %s: %w", path, err)
	}
	if err := j.Validate(); err != nil {
		return nil, fmt.Errorf("invalid journal %s: %w", path, err)
	}
	return &j, nil
}

func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "missing"
	case string:
		if v == "" {
			return `""`
		}
		return v
	default:
		return fmt.Sprintf("%v", v)
	}
}

var versionRE = regexp.MustCompile(`^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$`)

// compareVersions orders Kubernetes-style versions (v1alpha1 < v1beta1 < v1 <
// v2alpha1 < v2). Unparseable versions sort before everything.
func compareVersions(a, b string) int {
	key := func(v string) [3]int {
		m := versionRE.FindStringSubmatch(v)
		if m == nil {
			return [3]int{-1, 0, 0}
		}
		major, _ := strconv.Atoi(m[1])
		stage := 2 // GA
		switch m[2] {
		case "alpha":
			stage = 0
		case "beta":
			stage = 1
		}
		minor, _ := strconv.Atoi(m[3])
		return [3]int{major, stage, minor}
	}
	ka, kb := key(a), key(b)
	for i := range ka {
		if ka[i] != kb[i] {
			if ka[i] < kb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Summary describes one journal file, for `unprune undo --list`.
type Summary struct {
	Path        string
	ID          string
	CreatedAt   time.Time
	Command     string
	Strategy    string
	Cluster     string
	Context     string
	Application *AppRef
	// Entries is the number of entries; Planned..Undone count them by state.
	Entries, Planned, Applied, Failed, Undone int
	// Err is set when the file could not be loaded; then only Path, ID (from
	// the file name) and CreatedAt (from the ID, if it parses) are filled in.
	Err error
}

// List returns a summary of every journal in the directory, newest first
// (by createdAt, then ID). Files that fail to load are included with Err
// set rather than failing the listing. A missing directory means no journals.
func (s *Store) List() ([]Summary, error) {
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list journals in %s: %w", s.Dir, err)
	}
	var out []Summary
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, Ext) {
			continue
		}
		path := filepath.Join(s.Dir, name)
		j, err := s.Load(path)
		if err != nil {
			id := strings.TrimSuffix(name, Ext)
			sum := Summary{Path: path, ID: id, Err: err}
			if len(id) >= len(idTimeLayout) {
				if t, perr := time.Parse(idTimeLayout, id[:len(idTimeLayout)]); perr == nil {
					sum.CreatedAt = t
				}
			}
			out = append(out, sum)
			continue
		}
		out = append(out, summarize(path, j))
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].CreatedAt.Equal(out[b].CreatedAt) {
			return out[a].CreatedAt.After(out[b].CreatedAt)
		}
		return out[a].ID > out[b].ID
	})
	return out, nil
}

func summarize(path string, j *Journal) Summary {
	c := j.Counts()
	var app *AppRef
	if j.Application != nil {
		a := *j.Application
		app = &a
	}
	return Summary{
		Path: path, ID: j.ID, CreatedAt: j.CreatedAt,
		Command: j.Command, Strategy: j.Strategy, Cluster: j.Cluster, Context: j.Context,
		Application: app,
		Entries:     len(j.Entries),
		Planned:     c[StatePlanned], Applied: c[StateApplied], Failed: c[StateFailed], Undone: c[StateUndone],
	}
}

// Latest loads the newest journal in the directory. If the newest file
// cannot be loaded its error is returned rather than silently falling back
// to an older journal. With no journals the error wraps ErrNoJournals.
func (s *Store) Latest() (string, *Journal, error) {
	list, err := s.List()
	if err != nil {
		return "", nil, err
	}
	if len(list) == 0 {
		return "", nil, fmt.Errorf("%w in %s", ErrNoJournals, s.Dir)
	}
	if list[0].Err != nil {
		return "", nil, fmt.Errorf("newest journal %s cannot be read: %w", list[0].Path, list[0].Err)
	}
	j, err := s.Load(list[0].Path)
	if err != nil {
		return "", nil, err
	}
	return list[0].Path, j, nil
}
