package krew

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"
)

const (
	repoRoot = "../.."
	tag      = "v1.2.3"
)

// TestManifestPassesKrewValidation renders plugins/unprune.yaml for every platform of
// .goreleaser.yaml (made-up checksums) and runs krew's own validate-krew-manifest on it, the check
// krew's index runs on a submitted manifest: krew's types, ValidatePlugin (apiVersion, kind, name,
// semver version, sha256, selectors, files) and selectors matching krew's platforms without overlap.
func TestManifestPassesKrewValidation(t *testing.T) {
	dir := t.TempDir()
	sums := map[string]string{}
	var names []string
	for i, line := range strings.Split(strings.TrimSpace(dist(t, "-list", "-version", tag)), "\n") {
		platform, name, _ := strings.Cut(line, " ")
		sums[name] = fmt.Sprintf("%064x", i+1)
		names = append(names, platform)
	}
	manifest := renderManifest(t, dir, sums)

	validator := goBuild(t, "sigs.k8s.io/krew/cmd/validate-krew-manifest", "validate-krew-manifest")
	out, err := exec.Command(validator, "-manifest", manifest, "-skip-install").CombinedOutput()
	if err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}

	p := readPlugin(t, manifest)
	if p.Spec.Version != tag || p.Spec.Homepage == "" || p.Spec.Description == "" {
		t.Errorf("spec: version %q homepage %q description %q", p.Spec.Version, p.Spec.Homepage, p.Spec.Description)
	}
	var got []string
	for _, pl := range p.Spec.Platforms {
		goos, goarch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		got = append(got, goos+"/"+goarch)
		bin, files := "kubectl-unprune", []string{"kubectl-unprune", "kubectl_complete-unprune", "LICENSE"}
		if goos == "windows" {
			// kubectl on Windows finds no extensionless completion script, so krew installs none.
			bin, files = "kubectl-unprune.exe", []string{"kubectl-unprune.exe", "LICENSE"}
		}
		var from []string
		for _, f := range pl.Files {
			from = append(from, f.From)
			if f.To != "." {
				t.Errorf("%s: file %s goes to %s, want the plugin's root", goos, f.From, f.To)
			}
		}
		if pl.Bin != bin || !slices.Equal(from, files) {
			t.Errorf("%s/%s: bin %s, files %v; want %s, %v", goos, goarch, pl.Bin, from, bin, files)
		}
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("manifest platforms %v, .goreleaser.yaml's %v", got, names)
	}
	if want := "store/unprune/" + tag + "/kubectl_complete-unprune"; !strings.Contains(p.Spec.Caveats, want) {
		t.Errorf("the caveats do not say where krew puts the completion script (%s):\n%s", want, p.Spec.Caveats)
	}
}

// TestKrewInstallsTheArchive builds this platform's release archive as `make dist` does, and
// installs it with krew from the rendered manifest (krew checks the archive against its sha256):
// kubectl-unprune lands on krew's PATH and reports the release's version, the completion script
// and the license land where the caveats say, and the script, linked as they say, answers with
// the plugin's completions.
func TestKrewInstallsTheArchive(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the completion script is POSIX sh")
	}
	out := t.TempDir()
	host := runtime.GOOS + "/" + runtime.GOARCH
	printed := dist(t, "-out", out, "-platforms", host, "-version", tag)
	lines := strings.Fields(printed)
	archive := lines[0]
	realSums := readSums(t, filepath.Join(out, "checksums.txt"))
	sums := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(dist(t, "-list", "-version", tag)), "\n") {
		_, name, _ := strings.Cut(line, " ")
		sums[name] = fmt.Sprintf("%064x", i+1)
	}
	for name, sum := range realSums {
		sums[name] = sum
	}
	manifest := renderManifest(t, out, sums)

	krew := goBuild(t, "sigs.k8s.io/krew/cmd/krew", "kubectl-krew")
	root := t.TempDir()
	cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archive)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("krew install: %v\n%s", err, b)
	}

	bin := filepath.Join(root, "bin")
	b, err := exec.Command(filepath.Join(bin, "kubectl-unprune"), "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("installed kubectl-unprune: %v", err)
	}
	var doc struct{ Client struct{ Version string } }
	if err := json.Unmarshal(b, &doc); err != nil || doc.Client.Version != tag {
		t.Errorf("installed kubectl-unprune version: %s (%v), want %s", b, err, tag)
	}
	store := filepath.Join(root, "store", "unprune", tag)
	for _, f := range []string{"LICENSE", "kubectl_complete-unprune"} {
		if _, err := os.Stat(filepath.Join(store, f)); err != nil {
			t.Errorf("krew did not install %s: %v", f, err)
		}
	}

	// The caveats' ln -s, then kubectl's call for `kubectl unprune <TAB>`.
	if err := os.Symlink(filepath.Join(store, "kubectl_complete-unprune"), filepath.Join(bin, "kubectl_complete-unprune")); err != nil {
		t.Fatal(err)
	}
	complete := exec.Command(filepath.Join(bin, "kubectl_complete-unprune"), "")
	complete.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+"/usr/bin:/bin")
	var stdout, stderr bytes.Buffer
	complete.Stdout, complete.Stderr = &stdout, &stderr
	if err := complete.Run(); err != nil {
		t.Fatalf("kubectl_complete-unprune: %v\n%s", err, stderr.String())
	}
	words := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var cmds []string
	for _, w := range words {
		name, _, _ := strings.Cut(w, "\t")
		cmds = append(cmds, name)
	}
	for _, want := range []string{"scan", "detach", "undo", "audit", "guard", "version"} {
		if !slices.Contains(cmds, want) {
			t.Errorf("completion of `kubectl unprune ` lacks %s:\n%s", want, stdout.String())
		}
	}
	if last := words[len(words)-1]; !strings.HasPrefix(last, ":") {
		t.Errorf("completion output does not end with cobra's directive line: %q", last)
	}
}

// dist runs the repository's hack/dist (of the tool's own module) and returns its standard output.
func dist(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"run", "./hack/dist"}, args...)...)
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run ./hack/dist %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// renderManifest writes checksums and renders the krew manifest from them into dir.
func renderManifest(t *testing.T, dir string, sums map[string]string) string {
	t.Helper()
	var b strings.Builder
	for name, sum := range sums {
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	file := filepath.Join(dir, "all-checksums.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	dist(t, "-krew-only", "-checksums", file, "-version", tag, "-out", abs)
	return filepath.Join(abs, "unprune.yaml")
}

// goBuild builds a command of this module's requirements (the krew version go.mod pins).
func goBuild(t *testing.T, pkg, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// readPlugin decodes a manifest strictly into krew's own type.
func readPlugin(t *testing.T, file string) index.Plugin {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var p index.Plugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p
}

func readSums(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			sums[f[1]] = f[0]
		}
	}
	if len(sums) == 0 {
		t.Fatalf("%s lists no archive", file)
	}
	return sums
}
