package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinImage: -pin-image rewrites only the tag of the image in deploy/base and in the UI
// extension's backend (whose tag names the bundle too), -check-image passes for that release and
// fails for another — or when one of them was left behind — naming the command that fixes it; a
// tag that is not a release's is refused.
func TestPinImage(t *testing.T) {
	root := t.TempDir()
	cfg, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{filepath.Join(root, ".goreleaser.yaml"): cfg}
	for _, k := range imageKustomizations {
		orig, err := os.ReadFile(filepath.Join(repoRoot, k))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join(root, k)] = orig
	}
	for path, b := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dist := func(args ...string) error {
		var stdout, stderr bytes.Buffer
		return run(append([]string{"-config", filepath.Join(root, ".goreleaser.yaml")}, args...), &stdout, &stderr)
	}
	was := map[string]string{}
	for _, k := range imageKustomizations {
		if was[k], err = ImageTag(filepath.Join(root, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := dist("-pin-image", "-version", "v9.8.7-rc.1"); err != nil {
		t.Fatal(err)
	}
	for _, k := range imageKustomizations {
		kust := filepath.Join(root, k)
		got, err := os.ReadFile(kust)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Replace(string(files[kust]), "newTag: "+was[k]+"\n", "newTag: v9.8.7-rc.1\n", 1); string(got) != want {
			t.Errorf("pinned %s:\n%s\nwant only the tag changed:\n%s", k, got, want)
		}
	}
	if err := dist("-check-image", "-version", "v9.8.7-rc.1"); err != nil {
		t.Errorf("check of the pinned release: %v", err)
	}
	// One kustomization left behind fails the release.
	last := filepath.Join(root, imageKustomizations[len(imageKustomizations)-1])
	if err := PinImage(last, "v9.8.6"); err != nil {
		t.Fatal(err)
	}
	if err := dist("-check-image", "-version", "v9.8.7-rc.1"); err == nil || !strings.Contains(err.Error(), "-pin-image -version v9.8.7-rc.1") {
		t.Errorf("check with %s behind: %v; want a failure naming the fix", last, err)
	}
	if err := PinImage(last, "v9.8.7-rc.1"); err != nil {
		t.Fatal(err)
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
