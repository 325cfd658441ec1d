package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedDocsAreCurrent regenerates the command reference and compares it with the committed
// docs/commands: a flag, a command or a help text changed without `make docs` fails here.
func TestCommittedDocsAreCurrent(t *testing.T) {
	const committed = "../../docs/commands"
	fresh := t.TempDir()
	if err := generate(fresh); err != nil {
		t.Fatal(err)
	}
	want := pages(t, fresh)
	got := pages(t, committed)
	if len(want) == 0 {
		t.Fatal("the generator wrote no pages")
	}
	stale := false
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("docs/commands/%s is missing", name)
			stale = true
		case !bytes.Equal(g, w):
			t.Errorf("docs/commands/%s differs from what the command tree generates", name)
			stale = true
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/commands/%s documents no command of the tree", name)
			stale = true
		}
	}
	if stale {
		t.Error("docs/commands is out of date: run `make docs` and commit the result")
	}
}

func pages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}
