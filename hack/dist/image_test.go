package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinImage: -pin-image rewrites only the tag of deploy/base's image, -check-image passes for
// that release and fails for another, naming the command that fixes it; a tag that is not a
// release's is refused.
func TestPinImage(t *testing.T) {
	root := t.TempDir()
	kust := filepath.Join(root, imageKustomization)
	orig, err := os.ReadFile(filepath.Join(repoRoot, imageKustomization))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(kust), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, b := range map[string][]byte{kust: orig, filepath.Join(root, ".goreleaser.yaml"): cfg} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dist := func(args ...string) error {
		var stdout, stderr bytes.Buffer
		return run(append([]string{"-config", filepath.Join(root, ".goreleaser.yaml")}, args...), &stdout, &stderr)
	}
	was, err := ImageTag(kust)
	if err != nil {
		t.Fatal(err)
	}
	if err := dist("-pin-image", "-version", "v9.8.7-rc.1"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(orig), "newTag: "+was+"\n", "newTag: v9.8.7-rc.1\n", 1); string(got) != want {
		t.Errorf("pinned file:\n%s\nwant only the tag changed:\n%s", got, want)
	}
	if err := dist("-check-image", "-version", "v9.8.7-rc.1"); err != nil {
		t.Errorf("check of the pinned release: %v", err)
	}
	if err := dist("-check-image", "-version", "v9.8.8"); err == nil || !strings.Contains(err.Error(), "-pin-image -version v9.8.8") {
		t.Errorf("check of another release: %v; want a failure naming the fix", err)
	}
	for _, bad := range []string{"latest", "9.8.7", "v9.8", ""} {
		if err := dist("-pin-image", "-version", bad); err == nil {
			t.Errorf("-pin-image -version %q: accepted", bad)
		}
	}
}
