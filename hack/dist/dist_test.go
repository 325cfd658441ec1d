package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDistBuildsThisPlatform runs `make dist`'s program for the platform the test runs on, with a
// given version, commit and date, and proves what the release would ship: the archive holds the
// three binaries, the license and the completion script with their modes; the checksums file
// matches; each binary reports the version, commit and date the ldflags set, and names itself as
// its host command shows it.
func TestDistBuildsThisPlatform(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	p := Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if p.OS == "windows" {
		t.Skip("the archive checks read tar.gz")
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run([]string{"-config", configFile, "-out", out, "-platforms", p.String(), "-version", "v9.8.7-rc.1",
		"-commit", "fedcba9876543210fedcba9876543210fedcba98", "-commit-time", "2021-02-03T04:05:06Z"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("dist: %v\n%s", err, stderr.String())
	}
	name := "unprune_9.8.7-rc.1_" + p.OS + "_" + p.Arch + ".tar.gz"
	archive := filepath.Join(out, name)
	if want := archive + "\n" + filepath.Join(out, "checksums.txt") + "\n"; stdout.String() != want {
		t.Errorf("dist printed %q, want %q", stdout.String(), want)
	}

	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums, err := ReadChecksums(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{name: hex.EncodeToString(sum[:])}; !reflect.DeepEqual(sums, want) {
		t.Errorf("checksums.txt %v, want %v", sums, want)
	}

	entries := readTarGz(t, data)
	wantModes := map[string]int64{"unprune": 0o755, "kubectl-unprune": 0o755, "argocd-unprune": 0o755,
		"LICENSE": 0o644, "kubectl_complete-unprune": 0o755}
	gotModes := map[string]int64{}
	for n, e := range entries {
		gotModes[n] = e.mode
		if e.mtime != "2021-02-03T04:05:06Z" {
			t.Errorf("%s: mtime %s, want the commit's", n, e.mtime)
		}
	}
	if !reflect.DeepEqual(gotModes, wantModes) {
		t.Errorf("archive entries %v, want %v", gotModes, wantModes)
	}
	for _, f := range []string{"LICENSE", "plugins/kubectl_complete-unprune"} {
		src, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(entries[filepath.Base(f)].data, src) {
			t.Errorf("the archive's %s differs from %s", filepath.Base(f), f)
		}
	}

	dir := t.TempDir()
	for bin, display := range map[string]string{"unprune": "unprune", "kubectl-unprune": "kubectl unprune", "argocd-unprune": "argocd unprune"} {
		path := filepath.Join(dir, bin)
		if err := os.WriteFile(path, entries[bin].data, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := exec.Command(path, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("%s version: %v", bin, err)
		}
		var doc struct {
			Client struct{ Version, Commit, BuildDate, Platform string }
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s version -o json: %v\n%s", bin, err, b)
		}
		c := doc.Client
		if c.Version != "v9.8.7-rc.1" || c.Commit != "fedcba9876543210fedcba9876543210fedcba98" ||
			c.BuildDate != "2021-02-03T04:05:06Z" || c.Platform != p.String() {
			t.Errorf("%s version: %+v; the ldflags did not reach internal/version", bin, c)
		}
		help, err := exec.Command(path, "version", "--help").Output()
		if err != nil {
			t.Fatalf("%s version --help: %v", bin, err)
		}
		if !strings.Contains(string(help), "\n  "+display+" version ") {
			t.Errorf("%s does not name itself %q:\n%s", bin, display, help)
		}
	}
}

type tarEntry struct {
	mode  int64
	mtime string
	data  []byte
}

func readTarGz(t *testing.T, data []byte) map[string]tarEntry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarEntry{mode: h.Mode, mtime: h.ModTime.UTC().Format("2006-01-02T15:04:05Z"), data: b}
	}
}
