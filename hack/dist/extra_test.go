package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeBundle writes an extension bundle as extension/build.mjs does into dir: the tar with the
// installer's layout and the js's banner naming version, and its checksum file.
func writeBundle(t *testing.T, dir, jsPath, version string) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	js := "// unprune's Argo CD UI extension " + version + " (Apache-2.0). It uses the UI's own React (window.React).\n(() => {})();\n"
	for _, h := range []*tar.Header{{Name: "resources/", Typeflag: tar.TypeDir, Mode: 0o755}, {Name: "resources/unprune/", Typeflag: tar.TypeDir, Mode: 0o755}} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: jsPath, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(js))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(js)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, extensionTar), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	if err := os.WriteFile(filepath.Join(dir, extensionChecksum), []byte(hex.EncodeToString(sum[:])+"  "+extensionTar+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckExtension: a bundle ships only when argocd-extension-installer would install it for this
// release — the js where argocd-server reads extensions, stamped with the tag, and a checksum file
// that agrees with the tar.
func TestCheckExtension(t *testing.T) {
	ok := t.TempDir()
	writeBundle(t, ok, extensionJS, "v9.8.7")
	if err := CheckExtension(ok, "v9.8.7"); err != nil {
		t.Errorf("the release's bundle: %v", err)
	}
	if err := CheckExtension(ok, "v9.8.8"); err == nil || !strings.Contains(err.Error(), "make extension VERSION=v9.8.8") {
		t.Errorf("another release's bundle: %v", err)
	}
	elsewhere := t.TempDir()
	writeBundle(t, elsewhere, "resources/extension-unprune.js", "v9.8.7")
	if err := CheckExtension(elsewhere, "v9.8.7"); err == nil || !strings.Contains(err.Error(), "holds no "+extensionJS) {
		t.Errorf("a bundle outside resources/unprune/: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ok, extensionChecksum), []byte(strings.Repeat("0", 64)+"  "+extensionTar+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckExtension(ok, "v9.8.7"); err == nil || !strings.Contains(err.Error(), "installer would refuse it") {
		t.Errorf("a checksum file that disagrees: %v", err)
	}
}

// TestDistCopiesTheExtension: with -extra-files, dist puts the release's extra files beside the
// archives and lists checksum.extra_files in checksums.txt, as goreleaser uploads and sums them; a
// bundle that was not built is an error that says how to build it.
func TestDistCopiesTheExtension(t *testing.T) {
	c, err := LoadConfig(configFile)
	if err != nil {
		t.Fatal(err)
	}
	root, out := t.TempDir(), t.TempDir()
	d := &Dist{Config: c, Root: root, Out: out, Release: Release{Tag: "v9.8.7"}, Log: &bytes.Buffer{}, ExtraFiles: true}
	if _, _, err := d.Run(nil); err == nil || !strings.Contains(err.Error(), "make extension VERSION=") {
		t.Fatalf("without the bundle: %v", err)
	}
	writeBundle(t, filepath.Join(root, "extension", "dist"), extensionJS, "v9.8.7")
	d.Extras = nil
	_, sumsFile, err := d.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(out, extensionTar), filepath.Join(out, extensionChecksum)}
	if !slices.Equal(d.Extras, want) {
		t.Errorf("extras %v, want %v", d.Extras, want)
	}
	for _, f := range want {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	sums, err := ReadChecksums(sumsFile)
	if err != nil {
		t.Fatal(err)
	}
	tarSum, err := sha256File(filepath.Join(out, extensionTar))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[extensionTar] != tarSum {
		t.Errorf("checksums.txt %v: want the bundle's sha256 %s", sums, tarSum)
	}
}

// TestReleaseShipsTheExtension: goreleaser builds the bundle with the tag before the release, and
// uploads the tar and its checksum file under the names the component downloads and
// extension/build.mjs writes.
func TestReleaseShipsTheExtension(t *testing.T) {
	c, err := LoadConfig(configFile)
	if err != nil {
		t.Fatal(err)
	}
	var upload, summed []string
	for _, f := range c.Release.ExtraFiles {
		upload = append(upload, f.Glob)
	}
	for _, f := range c.Checksum.ExtraFiles {
		summed = append(summed, f.Glob)
	}
	if want := []string{"./extension/dist/" + extensionTar, "./extension/dist/" + extensionChecksum}; !slices.Equal(upload, want) {
		t.Errorf("release.extra_files %v, want %v", upload, want)
	}
	if want := []string{"./extension/dist/" + extensionTar}; !slices.Equal(summed, want) {
		t.Errorf("checksum.extra_files %v, want %v", summed, want)
	}
	raw, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	hooks := string(raw)
	build, check := strings.Index(hooks, "- make extension VERSION={{ .Tag }}\n"), strings.Index(hooks, "- go run ./hack/dist -check-extension -version {{ .Tag }}\n")
	if build < 0 || check < build {
		t.Error("the release does not build the bundle with its tag, then check it (before: hooks: make extension VERSION={{ .Tag }}, go run ./hack/dist -check-extension -version {{ .Tag }})")
	}
	for file, names := range map[string][]string{
		"extension/build.mjs":                               {"'" + extensionTar + "'", "'" + extensionChecksum + "'", "'resources/unprune/extension-unprune.js'", "unprune's Argo CD UI extension ${v} ("},
		"deploy/components/ui-extension/argocd-server.yaml": {"/" + extensionTar + "\n", "/" + extensionChecksum + "\n", extensionJS},
	} {
		b, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.Contains(string(b), n) {
				t.Errorf("%s does not name %s", file, n)
			}
		}
	}
}
