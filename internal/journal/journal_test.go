package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cluster"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testStore(t *testing.T) *Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "journal")
	return &Store{Dir: dir, Now: func() time.Time { return t0 }, Rand: bytes.NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})}
}

func testJournal(n int) *Journal {
	j := New("detach", "untrack", "v0.0.0-test")
	j.ArgoCD = &ArgoCDRef{Namespace: "argocd", TrackingMethod: "annotation"}
	name := j.AddCluster(cluster.Info{Name: "in-cluster", Server: "https://127.0.0.1:6443", Via: cluster.ViaKubeconfig, Context: "lab"})
	for i := range n {
		j.Entries = append(j.Entries, Entry{
			Cluster:     name,
			Application: &AppRef{Namespace: "argocd", Name: "guestbook", Instance: "guestbook"},
			Object:      ObjectRef{Version: "v1", Resource: "namespaces", Kind: "Namespace", Name: fmt.Sprintf("ns-%d", i), UID: fmt.Sprintf("uid-%d", i), ResourceVersion: "10"},
			Changes:     []Change{Removal(FieldAnnotation, "argocd.argoproj.io/tracking-id", fmt.Sprintf("guestbook:/Namespace:argocd/ns-%d", i))},
		})
	}
	return j
}

func TestCreateMarkReloadCompact(t *testing.T) {
	s := testStore(t)
	rec, err := s.Create(testJournal(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.MarkApplied(0, "11"); err != nil {
		t.Fatal(err)
	}
	if err := rec.MarkFailed(1, "forbidden", true); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sync(); err != nil {
		t.Fatal(err)
	}
	// Before Close the file is the document plus appended records, and it loads as such.
	raw, _ := os.ReadFile(rec.Path())
	if got := strings.Count(string(raw), "\n{\"entry\":"); got != 2 {
		t.Fatalf("want 2 appended records, got %d:\n%s", got, raw)
	}
	j, torn, err := s.Load(rec.Path())
	if err != nil || torn {
		t.Fatalf("load: %v (torn %v)", err, torn)
	}
	if j.Entries[0].State != StateApplied || j.Entries[0].AppliedResourceVersion != "11" ||
		j.Entries[1].State != StateFailed || len(j.Entries[1].Changes) != 0 || j.Entries[2].State != StatePlanned {
		t.Fatalf("entries after replay: %+v", j.Entries)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(rec.Path())
	if strings.Contains(string(raw), "\n{\"entry\":") {
		t.Fatalf("compacted journal still has records:\n%s", raw)
	}
	again, _, err := s.Load(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	if again.Entries[0].State != StateApplied || again.ToolVersion != "v0.0.0-test" || again.Clusters[0].Context != "lab" {
		t.Fatalf("compacted journal: %+v", again)
	}
	if !strings.Contains(filepath.Base(rec.Path()), "-detach-guestbook-") {
		t.Fatalf("journal name %s does not say command and app", rec.Path())
	}
}

// TestCloseInBackground: when CloseInBackground returns, every outcome is on disk and loads; the
// compaction into one document finishes while the caller goes on, and wait reports it.
func TestCloseInBackground(t *testing.T) {
	s := testStore(t)
	rec, err := s.Create(testJournal(2))
	if err != nil {
		t.Fatal(err)
	}
	compacting, release := make(chan struct{}), make(chan struct{})
	s.write = func(f *os.File, data []byte) error {
		close(compacting)
		<-release
		_, err := f.Write(data)
		return err
	}
	if err := rec.MarkApplied(1, "12"); err != nil {
		t.Fatal(err)
	}
	wait := rec.CloseInBackground()
	<-compacting
	// The compaction is held: the file is still the document plus the appended outcome.
	j, torn, err := s.Load(rec.Path())
	if err != nil || torn || j.Entries[1].State != StateApplied || j.Entries[1].AppliedResourceVersion != "12" {
		t.Fatalf("before the compaction: %v (torn %v) %+v", err, torn, j)
	}
	close(release)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(rec.Path())
	if strings.Contains(string(raw), "\n{\"entry\":") {
		t.Fatalf("compacted journal still has records:\n%s", raw)
	}
	if err := rec.MarkApplied(0, "13"); err == nil {
		t.Fatal("a closed journal took a record")
	}
	if err := wait(); err != nil {
		t.Fatalf("wait again: %v", err)
	}
}

// TestTornLastRecord: a process killed while appending leaves a last line without a newline; the
// entry keeps its earlier state. Any other damaged record is refused.
func TestTornLastRecord(t *testing.T) {
	s := testStore(t)
	rec, err := s.Create(testJournal(2))
	if err != nil {
		t.Fatal(err)
	}
	_ = rec.MarkApplied(0, "11")
	_ = rec.Sync()
	path := rec.Path()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"entry":1,"state":"appl`)
	_ = f.Close()
	j, torn, err := s.Load(path)
	if err != nil || !torn {
		t.Fatalf("load torn: %v, torn %v", err, torn)
	}
	if j.Entries[0].State != StateApplied || j.Entries[1].State != StatePlanned {
		t.Fatalf("entries: %+v", j.Entries)
	}

	raw, _ := os.ReadFile(path)
	damaged := strings.Replace(string(raw), `"state":"applied"`, `"state":"applied","extra":1`, 1)
	if err := os.WriteFile(path, []byte(damaged+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("an edited record must be refused, got %v", err)
	}
}

func TestLoadRefusesTruncatedAndForeign(t *testing.T) {
	s := testStore(t)
	rec, err := s.Create(testJournal(2))
	if err != nil {
		t.Fatal(err)
	}
	_ = rec.Close()
	raw, _ := os.ReadFile(rec.Path())
	cases := map[string]string{
		"truncated":     string(raw[:len(raw)/2]),
		"other kind":    strings.Replace(string(raw), `"kind":"Journal"`, `"kind":"ConfigMap"`, 1),
		"newer":         strings.Replace(string(raw), "unprune.dev/v1alpha2", "unprune.dev/v1", 1),
		"older":         strings.Replace(string(raw), "unprune.dev/v1alpha2", "unprune.dev/v1alpha1", 1),
		"bad state":     strings.Replace(string(raw), `"state":"planned"`, `"state":"done"`, 1),
		"unknown field": strings.Replace(string(raw), `"command":"detach",`, `"command":"detach","extra":1,`, 1),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(s.Dir, "x-"+strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Load(path); err == nil {
				t.Fatalf("loaded a %s journal", name)
			}
		})
	}
	_, _, err = s.Load(filepath.Join(s.Dir, "x-newer.json"))
	if !errors.Is(err, ErrNewerVersion) {
		t.Fatalf("newer: %v", err)
	}
}

// TestLoadNamesWhatIsNotAJournal: a document of another type, or no object at all, is refused as
// not a journal, with what its type fields hold.
func TestLoadNamesWhatIsNotAJournal(t *testing.T) {
	s := testStore(t)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ content, want string }{
		"array":        {`[1, 2]`, "not a JSON object"},
		"null":         {`null`, "not a JSON object"},
		"string":       {`"journal"`, "not a JSON object"},
		"no type":      {`{"entries": []}`, "no apiVersion or kind"},
		"numeric kind": {`{"apiVersion": "unprune.dev/v1alpha2", "kind": 5}`, "(kind 5)"},
		"foreign":      {`{"apiVersion": "v1", "kind": "Journal"}`, "(apiVersion v1)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(s.Dir, "x-"+strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(path, []byte(c.content+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Load(path)
			if !errors.Is(err, ErrNotJournal) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load: %v; want %v saying %q", err, ErrNotJournal, c.want)
			}
		})
	}
}

func TestLoadRefusesJournalsOthersCanWrite(t *testing.T) {
	if os.Getenv("GOOS") == "windows" {
		t.Skip("file modes")
	}
	s := testStore(t)
	rec, err := s.Create(testJournal(1))
	if err != nil {
		t.Fatal(err)
	}
	_ = rec.Close()
	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		if err := os.Chmod(rec.Path(), mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Load(rec.Path()); !errors.Is(err, ErrNotPrivate) {
			t.Fatalf("mode %o: want ErrNotPrivate, got %v", mode, err)
		}
	}
	_ = os.Chmod(rec.Path(), 0o600)
	if err := os.Chmod(s.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(rec.Path()); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("world-writable directory: want ErrNotPrivate, got %v", err)
	}
	if _, err := s.Create(testJournal(1)); !errors.Is(err, ErrNotPrivate) {
		t.Fatalf("create in a world-writable directory: want ErrNotPrivate, got %v", err)
	}
}

func TestFilesArePrivateWhateverTheUmask(t *testing.T) {
	s := testStore(t)
	rec, err := s.Create(testJournal(1))
	if err != nil {
		t.Fatal(err)
	}
	_ = rec.Close()
	for path, want := range map[string]os.FileMode{rec.Path(): FileMode, s.Dir: DirMode} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, info.Mode().Perm(), want)
		}
	}
}

// TestConcurrentMarks: every mark made from many goroutines ends in the file, and Replan is on disk
// when it returns.
func TestConcurrentMarks(t *testing.T) {
	s := testStore(t)
	s.FlushInterval = time.Millisecond
	const n = 500
	rec, err := s.Create(testJournal(n))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%50 == 0 {
				if err := rec.Replan(i, "12", []Change{Removal(FieldLabel, "app.kubernetes.io/instance", "guestbook")}); err != nil {
					t.Error(err)
				}
				j, _, err := s.Load(rec.Path())
				if err != nil || j.Entries[i].Object.ResourceVersion != "12" {
					t.Errorf("replan of %d not on disk when Replan returned: %v", i, err)
				}
			}
			if err := rec.MarkApplied(i, "13"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	j, _, err := s.Load(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	if c := j.Counts(); c[StateApplied] != n {
		t.Fatalf("counts %v, want %d applied", c, n)
	}
}

func TestMarkTransitions(t *testing.T) {
	j := testJournal(1)
	j.ID = "x"
	j.Entries[0].State = StatePlanned
	if err := j.MarkUndone(0, t0); err != nil {
		t.Fatalf("planned -> undone: %v", err)
	}
	if err := j.MarkApplied(0, "1", t0); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("undone -> applied: %v", err)
	}
	if err := j.Replan(0, "1", nil, t0); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("undone -> replan: %v", err)
	}
}

// TestEmbeddedChangeKeepsNoValues: a last-applied rewrite is recorded as keys and digests only.
func TestEmbeddedChangeKeepsNoValues(t *testing.T) {
	const secret = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"
	before := `{"apiVersion":"v1","data":{"password":"` + secret + `"},"kind":"Secret","metadata":{"labels":{"app.kubernetes.io/instance":"guestbook"},"name":"db"}}` + "\n"
	after := `{"apiVersion":"v1","data":{"password":"` + secret + `"},"kind":"Secret","metadata":{"name":"db"}}` + "\n"
	c := EmbeddedRewrite("kubectl.kubernetes.io/last-applied-configuration", before, after,
		[]EmbeddedKey{{Field: FieldLabel, Key: "app.kubernetes.io/instance", Value: "guestbook"}})
	if v, has := c.Value(); !has || v != after {
		t.Fatal("the planning run must keep the value to patch with")
	}
	if !c.Expects(after, true) || c.Expects(before, true) || !c.Found(before, true) {
		t.Fatal("digest checks")
	}
	s := testStore(t)
	j := testJournal(1)
	j.Entries[0].Changes = append(j.Entries[0].Changes, c)
	rec, err := s.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	_ = rec.Replan(0, "12", []Change{c})
	_ = rec.Close()
	raw, _ := os.ReadFile(rec.Path())
	if strings.Contains(string(raw), secret) || strings.Contains(string(raw), "password") {
		t.Fatalf("the journal holds the Secret's data:\n%s", raw)
	}
	loaded, _, err := s.Load(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	inv := loaded.Entries[0].Changes[0].Inverse()
	if _, has := inv.Value(); has && inv.Embedded != nil && inv.Embedded.after != "" {
		t.Fatal("a loaded embedded change cannot know its values")
	}
	if _, err := inv.Embedded.WithValues(after, before); err != nil {
		t.Fatalf("inverse digests: %v", err)
	}
	if !strings.Contains(c.String(), "remove label app.kubernetes.io/instance") || strings.Contains(c.String(), secret) {
		t.Fatalf("String(): %s", c.String())
	}
}

func TestListAndLatest(t *testing.T) {
	s := testStore(t)
	if _, err := s.Latest(); !errors.Is(err, ErrNoJournals) {
		t.Fatalf("empty: %v", err)
	}
	var paths []string
	for i := range 3 {
		now := t0.Add(time.Duration(i) * time.Minute)
		s.Now = func() time.Time { return now }
		rec, err := s.Create(testJournal(2))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			_ = rec.MarkApplied(0, "2")
		}
		_ = rec.Close()
		paths = append(paths, rec.Path())
	}
	list, err := s.List()
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %v %v", list, err)
	}
	if list[0].Path != paths[2] || list[1].Applied != 1 || list[1].Planned != 1 || list[2].Planned != 2 {
		t.Fatalf("list: %+v", list)
	}
	latest, err := s.Latest()
	if err != nil || latest != paths[2] {
		t.Fatalf("latest %s %v", latest, err)
	}
}

func TestDefaultDir(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	home := func() (string, error) { return "/home/u", nil }
	for _, tt := range []struct{ xdg, want string }{
		{"/state", "/state/unprune/journal"},
		{"", "/home/u/.local/state/unprune/journal"},
		{"relative", "/home/u/.local/state/unprune/journal"},
	} {
		got, err := DefaultDir(env(tt.xdg), home)
		if err != nil || got != tt.want {
			t.Errorf("XDG_STATE_HOME=%q: %q %v, want %q", tt.xdg, got, err, tt.want)
		}
	}
}
