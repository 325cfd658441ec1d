package journal

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sigs.k8s.io/yaml"
	"sort"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 3, 15, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func testStore(t *testing.T, dir string, now time.Time, random ...byte) *Store {
	t.Helper()
	s := NewStore(dir, fixedClock(now))
	if len(random) > 0 {
		s.Rand = bytes.NewReader(random)
	}
	return s
}

func newJournal() *Journal {
	j := validJournal()
	j.ID = ""
	j.CreatedAt = time.Time{}
	for i := range j.Entries {
		j.Entries[i].State = ""
	}
	return j
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	sort.Strings(names)
	return names
}

func TestCreateLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "unprune", "journal")
	s := testStore(t, dir, t0, 0xab, 0xcd)
	j := newJournal()
	path, err := s.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	wantID := "20261130T031500Z-detach-guestbook-abcd"
	if j.ID != wantID || path != filepath.Join(dir, wantID+".yaml") {
		t.Fatalf("Create assigned id %q path %q, want %q", j.ID, path, wantID)
	}
	if !j.CreatedAt.Equal(t0) {
		t.Errorf("createdAt = %v", j.CreatedAt)
	}
	for i, e := range j.Entries {
		if e.State != StatePlanned || !e.UpdatedAt.Equal(t0) {
			t.Errorf("entry %d: state %q updatedAt %v, want planned at %v", i, e.State, e.UpdatedAt, t0)
		}
	}
	got, err := s.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("Load after Create:\n got %+v\nwant %+v", got, j)
	}

	// Update and Save (atomic replace), then load again.
	if err := j.MarkApplied(0, "101", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkFailed(1, errors.New("forbidden"), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(path, j); err != nil {
		t.Fatal(err)
	}
	got, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("Load after Save:\n got %+v\nwant %+v", got, j)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the journal", names)
	}
}

func TestCreateIDs(t *testing.T) {
	tests := []struct {
		name    string
		command string
		app     *AppRef
		want    string
	}{
		{"with application", "detach", &AppRef{Name: "guestbook"}, "20261130T031500Z-detach-guestbook-0102"},
		{"without application", "guard", nil, "20261130T031500Z-guard-0102"},
		{"odd characters are slugged", "Detach", &AppRef{Name: "My App/../x"}, "20261130T031500Z-detach-my-app-..-x-0102"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testStore(t, t.TempDir(), t0.Add(123*time.Millisecond), 1, 2)
			j := New(tt.command, "")
			j.Application = tt.app
			path, err := s.Create(j)
			if err != nil {
				t.Fatal(err)
			}
			if j.ID != tt.want || filepath.Base(path) != tt.want+".yaml" {
				t.Errorf("id %q path %q, want %q", j.ID, path, tt.want)
			}
		})
	}
}

func TestCreateRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	s := testStore(t, dir, t0)
	j := validJournal()
	path, err := s.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	j2 := validJournal()
	j2.Command = "guard"
	_, err = s.Create(j2)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Create = %v, want fs.ErrExist naming %s", err, path)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("existing journal was modified")
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v", names)
	}
}

func TestCreateRetriesGeneratedIDCollision(t *testing.T) {
	dir := t.TempDir()
	s := testStore(t, dir, t0, 0xab, 0xcd, 0xab, 0xcd, 0x12, 0x34)
	p1, err := s.Create(newJournal())
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal()
	p2, err := s.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 || j.ID != "20261130T031500Z-detach-guestbook-1234" {
		t.Errorf("paths %s %s, id %s", p1, p2, j.ID)
	}
}

func TestCreateRejectsInvalid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j")
	s := testStore(t, dir, t0)
	j := newJournal()
	j.Entries[0].Changes[0].Field = "spec"
	if _, err := s.Create(j); err == nil || !strings.Contains(err.Error(), "invalid journal") {
		t.Fatalf("Create = %v, want invalid journal", err)
	}
	if j.ID != "" {
		t.Errorf("failed Create left generated id %q", j.ID)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("directory holds %v", names)
	}
	if err := s.Save(filepath.Join(dir, "x.yaml"), j); err == nil {
		t.Error("Save accepted an invalid journal")
	}
}

// TestAtomicity checks that a failed write leaves the previous file intact
// and no temporary files behind.
func TestAtomicity(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Store, path string) (target string)
	}{
		{
			name: "writer fails half way",
			setup: func(t *testing.T, s *Store, path string) string {
				s.write = func(f *os.File, data []byte) error {
					if _, err := f.Write(data[:len(data)/2]); err != nil {
						return err
					}
					return errors.New("no space left on device")
				}
				return path
			},
		},
		{
			name: "rename fails (target is a directory)",
			setup: func(t *testing.T, s *Store, path string) string {
				target := filepath.Join(filepath.Dir(path), "busy.yaml")
				if err := os.MkdirAll(filepath.Join(target, "x"), 0o700); err != nil {
					t.Fatal(err)
				}
				return target
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := testStore(t, dir, t0)
			j := validJournal()
			path, err := s.Create(j)
			if err != nil {
				t.Fatal(err)
			}
			good, _ := os.ReadFile(path)
			target := tt.setup(t, s, path)
			namesBefore := dirNames(t, dir)
			if err := j.MarkApplied(0, "101", t0); err != nil {
				t.Fatal(err)
			}
			err = s.Save(target, j)
			if err == nil || !strings.Contains(err.Error(), "write journal "+target) {
				t.Fatalf("Save = %v, want a write journal error", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, good) {
				t.Errorf("previous journal changed:\n%s", got)
			}
			if loaded, err := s.Load(path); err != nil || loaded.Entries[0].State != StatePlanned {
				t.Errorf("previous journal no longer loads as before: %v", err)
			}
			if names := dirNames(t, dir); !reflect.DeepEqual(names, namesBefore) {
				t.Errorf("directory holds %v, want %v (temp file left behind?)", names, namesBefore)
			}
		})
	}

	t.Run("failed Create leaves nothing", func(t *testing.T) {
		dir := t.TempDir()
		s := testStore(t, dir, t0)
		s.write = func(*os.File, []byte) error { return errors.New("boom") }
		if _, err := s.Create(validJournal()); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("Create = %v", err)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Errorf("directory holds %v", names)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	valid, err := yaml.Marshal(validJournal())
	if err != nil {
		t.Fatal(err)
	}
	doc := string(valid)
	tests := []struct {
		name    string
		content string
		is      error
		want    []string
	}{
		{"unknown top-level field", doc + "extra: 1\n", nil, []string{"parse journal", `unknown field "extra"`}},
		{"unknown entry field", strings.Replace(doc, "  state: planned\n", "  state: planned\n  patched: true\n", 1), nil, []string{`unknown field "patched"`}},
		{"duplicate field", doc + "command: guard\n", nil, []string{"parse journal", "command"}},
		{"wrong type", strings.Replace(doc, "  state: planned\n", "  state: [1]\n", 1), nil, []string{"parse journal"}},
		{"wrong kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", ErrNotJournal, []string{"is not an unprune journal (kind Deployment)"}},
		{"journal of another group", strings.Replace(doc, "apiVersion: unprune.dev/v1alpha1", "apiVersion: example.com/v1alpha1", 1), ErrNotJournal, []string{"(apiVersion example.com/v1alpha1)"}},
		{"no apiVersion", strings.Replace(doc, "apiVersion: unprune.dev/v1alpha1\n", "", 1), ErrNotJournal, []string{"(apiVersion missing)"}},
		{"future apiVersion", strings.Replace(doc, "unprune.dev/v1alpha1", "unprune.dev/v9", 1), ErrNewerVersion, []string{"apiVersion unprune.dev/v9 is newer than this unprune understands", "upgrade unprune"}},
		{"future beta", strings.Replace(doc, "unprune.dev/v1alpha1", "unprune.dev/v1beta1", 1), ErrNewerVersion, nil},
		{"future alpha", strings.Replace(doc, "unprune.dev/v1alpha1", "unprune.dev/v1alpha2", 1), ErrNewerVersion, nil},
		{"unparseable apiVersion", strings.Replace(doc, "unprune.dev/v1alpha1", "unprune.dev/latest", 1), ErrUnsupportedVersion, []string{"unprune.dev/latest is not supported"}},
		{"empty file", "", ErrNotJournal, []string{"(empty document)"}},
		{"mapping without apiVersion or kind", "foo: bar\n", ErrNotJournal, []string{"(no apiVersion or kind)"}},
		{"garbage bytes", "\x00\xff\xfe garbage {{{", ErrNotJournal, []string{"invalid YAML"}},
		{"not a mapping", "- a\n- b\n", ErrNotJournal, []string{"(not a YAML mapping)"}},
		{"plain text", "hello world\n", ErrNotJournal, []string{"(not a YAML mapping)"}},
		{"kind is not a string", "apiVersion: unprune.dev/v1alpha1\nkind: [Journal]\n", ErrNotJournal, []string{"(kind [Journal])"}},
		{"JSON is fine too but checked", `{"apiVersion":"unprune.dev/v1alpha1","kind":"Journal","id":"x","command":"detach","entries":[{"object":{"version":"v1","resource":"configmaps","name":"c"},"changes":[],"state":"planned"}]}`,
			nil, []string{"invalid journal", "object uid is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			j, err := NewStore(filepath.Dir(path), nil).Load(path)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", j)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Load = %v, want errors.Is %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Load = %v, want it to name %s", err, path)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestCompareVersions(t *testing.T) {
	ordered := []string{"bogus", "v1alpha1", "v1alpha2", "v1beta1", "v1", "v2alpha1", "v2", "v10"}
	for i := range ordered {
		for k := range ordered {
			want := 0
			if i < k {
				want = -1
			} else if i > k {
				want = 1
			}
			if got := compareVersions(ordered[i], ordered[k]); got != want {
				t.Errorf("compareVersions(%s, %s) = %d, want %d", ordered[i], ordered[k], got, want)
			}
		}
	}
}

func TestListAndLatest(t *testing.T) {
	dir := t.TempDir()
	s := testStore(t, dir, t0)
	if list, err := NewStore(filepath.Join(dir, "missing"), nil).List(); err != nil || len(list) != 0 {
		t.Errorf("List of a missing directory = %v, %v", list, err)
	}
	if _, _, err := s.Latest(); !errors.Is(err, ErrNoJournals) {
		t.Errorf("Latest of an empty directory = %v, want ErrNoJournals", err)
	}

	create := func(at time.Time, command, random string) string {
		t.Helper()
		s := testStore(t, dir, at, random[0], random[1])
		j := New(command, "")
		j.Entries = []Entry{NewEntry(testObject("a"), Removal(FieldLabel, "k", "v"))}
		if _, err := s.Create(j); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	// Created out of order; two in the same second.
	mid := create(t0.Add(time.Hour), "detach", "\x00\x01")
	old := create(t0, "guard", "\x00\x02")
	newest := create(t0.Add(2*time.Hour), "detach", "\x00\x03")
	tieA := create(t0.Add(90*time.Minute), "detach", "\x00\x0a")
	tieB := create(t0.Add(90*time.Minute), "detach", "\x00\x0b")
	// Not journals: temp files, other files, directories.
	for _, name := range []string{".x.yaml.tmp-123", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sum := range list {
		ids = append(ids, sum.ID)
		if sum.Err != nil {
			t.Errorf("%s: %v", sum.Path, sum.Err)
		}
	}
	want := []string{newest, tieB, tieA, mid, old}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("List order = %v, want %v", ids, want)
	}
	if sum := list[0]; sum.Command != "detach" || sum.Entries != 1 || sum.Planned != 1 || sum.Path != s.Path(newest) {
		t.Errorf("summary = %+v", sum)
	}

	path, j, err := s.Latest()
	if err != nil || j.ID != newest || path != s.Path(newest) {
		t.Errorf("Latest = %s, %v, %v", path, j, err)
	}

	// A corrupt journal newer than all others: listed with its error, and
	// Latest refuses rather than falling back to an older journal.
	broken := "20261130T060000Z-detach-x-ffff"
	if err := os.WriteFile(s.Path(broken), []byte("kind: Journal\napiVersion: unprune.dev/v1alpha1\nentries: {{"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err = s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 6 || list[0].ID != broken || list[0].Err == nil || !list[0].CreatedAt.Equal(t0.Add(165*time.Minute)) {
		t.Errorf("List with a broken file: first = %+v", list[0])
	}
	if _, _, err := s.Latest(); err == nil || !strings.Contains(err.Error(), broken) {
		t.Errorf("Latest with a broken newest file = %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := func(h string, err error) func() (string, error) { return func() (string, error) { return h, err } }
	tests := []struct {
		name    string
		getenv  func(string) string
		home    func() (string, error)
		want    string
		wantErr string
	}{
		{"XDG_STATE_HOME set", env(map[string]string{"XDG_STATE_HOME": "/xdg/state"}), home("/home/u", nil), "/xdg/state/unprune/journal", ""},
		{"XDG_STATE_HOME set, home unknown", env(map[string]string{"XDG_STATE_HOME": "/xdg/state"}), home("", errors.New("no home")), "/xdg/state/unprune/journal", ""},
		{"XDG_STATE_HOME unset", env(nil), home("/home/u", nil), "/home/u/.local/state/unprune/journal", ""},
		{"XDG_STATE_HOME empty", env(map[string]string{"XDG_STATE_HOME": ""}), home("/home/u", nil), "/home/u/.local/state/unprune/journal", ""},
		{"XDG_STATE_HOME relative is ignored", env(map[string]string{"XDG_STATE_HOME": "state"}), home("/home/u", nil), "/home/u/.local/state/unprune/journal", ""},
		{"no getenv", nil, home("/home/u", nil), "/home/u/.local/state/unprune/journal", ""},
		{"home fails", env(nil), home("", errors.New("$HOME is not defined")), "", "$HOME is not defined"},
		{"home empty", env(nil), home("", nil), "", "home directory is empty"},
		{"no home lookup", env(nil), nil, "", "no home directory lookup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultDir(tt.getenv, tt.home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DefaultDir = %q, %v, want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != filepath.FromSlash(tt.want) {
				t.Errorf("DefaultDir = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}
