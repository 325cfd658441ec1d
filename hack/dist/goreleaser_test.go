package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	repoRoot   = "../.."
	configFile = repoRoot + "/.goreleaser.yaml"
)

var sampleRelease = Release{Tag: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567",
	CommitTime: time.Date(2021, 2, 3, 4, 5, 6, 0, time.UTC)}

func loadConfig(t *testing.T) *Config {
	t.Helper()
	c, err := LoadConfig(configFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGoreleaserBuildsEveryCommand: one build per cmd/* main package, each for the six platforms,
// static (CGO off) and with -trimpath.
func TestGoreleaserBuildsEveryCommand(t *testing.T) {
	c := loadConfig(t)
	var mains []string
	dirs, err := os.ReadDir(filepath.Join(repoRoot, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && packageName(t, filepath.Join(repoRoot, "cmd", d.Name())) == "main" {
			mains = append(mains, d.Name())
		}
	}
	var ids []string
	for _, b := range c.Builds {
		ids = append(ids, b.ID)
		if b.Main != "./cmd/"+b.ID || b.Binary != b.ID {
			t.Errorf("build %s: main %s, binary %s; want ./cmd/%[1]s and %[1]s", b.ID, b.Main, b.Binary)
		}
		var got []string
		for _, p := range b.Platforms() {
			got = append(got, p.String())
		}
		sort.Strings(got)
		want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("build %s: platforms %v, want %v", b.ID, got, want)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") {
			t.Errorf("build %s: env %v lacks CGO_ENABLED=0 (the binaries must run on any libc)", b.ID, b.Env)
		}
		if !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %s: flags %v lack -trimpath", b.ID, b.Flags)
		}
	}
	sort.Strings(ids)
	sort.Strings(mains)
	if !reflect.DeepEqual(ids, mains) {
		t.Errorf("goreleaser builds %v, but cmd/ has the commands %v", ids, mains)
	}
}

// TestGoreleaserLdflagsTargetExistingVariables: every -X names a package-level string variable
// that exists (the linker ignores a -X whose target is gone), and version, commit and buildDate of
// internal/version are all set.
func TestGoreleaserLdflagsTargetExistingVariables(t *testing.T) {
	c := loadConfig(t)
	module := modulePath(t)
	for _, b := range c.Builds {
		ldflags, err := c.Ldflags(b, sampleRelease, Platform{OS: "linux", Arch: "amd64"})
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]string{}
		fields := strings.Fields(ldflags)
		for i := 0; i < len(fields); i++ {
			if fields[i] != "-X" || i+1 == len(fields) {
				continue
			}
			i++
			target, value, ok := strings.Cut(fields[i], "=")
			dot := strings.LastIndex(target, ".")
			if !ok || dot < 0 {
				t.Errorf("build %s: -X %s: want importpath.name=value", b.ID, fields[i])
				continue
			}
			pkg, name := target[:dot], target[dot+1:]
			rel, inModule := strings.CutPrefix(pkg, module+"/")
			if !inModule {
				t.Errorf("build %s: -X %s: not a package of %s", b.ID, target, module)
				continue
			}
			if !hasStringVar(t, filepath.Join(repoRoot, filepath.FromSlash(rel)), name) {
				t.Errorf("build %s: -X %s: %s has no package-level string variable %s", b.ID, target, pkg, name)
			}
			set[target] = value
		}
		v := module + "/internal/version."
		want := map[string]string{v + "version": "v1.2.3", v + "commit": sampleRelease.Commit, v + "buildDate": "2021-02-03T04:05:06Z"}
		if !reflect.DeepEqual(set, want) {
			t.Errorf("build %s: ldflags set %v, want %v", b.ID, set, want)
		}
	}
}

// TestGoreleaserArchives: one archive per platform holding the three binaries, the license and
// kubectl's completion script, tar.gz but zip on Windows, with sha256 checksums.
func TestGoreleaserArchives(t *testing.T) {
	c := loadConfig(t)
	if len(c.Archives) != 1 {
		t.Fatalf("%d archives; the krew manifest and the docs assume one per platform", len(c.Archives))
	}
	a := c.Archives[0]
	builds, err := a.Builds(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(builds) != len(c.Builds) {
		t.Errorf("archive %s packs %d of the %d builds", a.ID, len(builds), len(c.Builds))
	}
	for p, want := range map[Platform]string{{"linux", "amd64"}: "unprune_1.2.3_linux_amd64.tar.gz",
		{"darwin", "arm64"}: "unprune_1.2.3_darwin_arm64.tar.gz", {"windows", "amd64"}: "unprune_1.2.3_windows_amd64.zip"} {
		if got, err := c.ArchiveName(a, sampleRelease, p); err != nil || got != want {
			t.Errorf("archive name for %s: %q (%v), want %q", p, got, err, want)
		}
	}
	files := map[string]ArchiveFile{}
	for _, f := range a.Files {
		dst, err := f.Destination()
		if err != nil {
			t.Fatal(err)
		}
		files[dst] = f
		if _, err := os.Stat(filepath.Join(repoRoot, f.Src)); err != nil {
			t.Errorf("archive file: %v", err)
		}
	}
	if _, ok := files["LICENSE"]; !ok {
		t.Errorf("the archives lack LICENSE (krew's index requires one): %v", a.Files)
	}
	script, ok := files["kubectl_complete-unprune"]
	if !ok {
		t.Fatalf("the archives lack kubectl_complete-unprune at their root: %v", a.Files)
	}
	st, err := os.Stat(filepath.Join(repoRoot, script.Src))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 == 0 || (script.Info.Mode != 0 && script.Info.Mode&0o111 == 0) {
		t.Errorf("%s is not executable (mode %v, archive mode %o)", script.Src, st.Mode(), script.Info.Mode)
	}
	if name, err := c.ChecksumName(sampleRelease); err != nil || name != "checksums.txt" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksums %q (%v) with %q; want checksums.txt with sha256", name, err, c.Checksum.Algorithm)
	}
}

// TestKrewTemplateNamesTheArchives renders plugins/unprune.yaml with made-up checksums: each
// platform's uri is its archive's release URL and its sha256 that archive's checksum. test/krew
// validates the result with krew itself.
func TestKrewTemplateNamesTheArchives(t *testing.T) {
	c := loadConfig(t)
	sums := map[string]string{}
	for _, p := range c.Platforms() {
		name, err := c.ArchiveName(c.Archives[0], sampleRelease, p)
		if err != nil {
			t.Fatal(err)
		}
		sums[name] = strings.Repeat(string("0123456789abcdef"[len(sums)]), 64)
	}
	out, err := RenderKrew(filepath.Join(repoRoot, "plugins/unprune.yaml"), c, sampleRelease, sums)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string }
				URI      string
				Sha256   string
				Bin      string
			}
		}
	}
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatalf("rendered manifest: %v\n%s", err, out)
	}
	if m.Spec.Version != "v1.2.3" || len(m.Spec.Platforms) != len(c.Platforms()) {
		t.Fatalf("version %q with %d platforms; want v1.2.3 with %d\n%s", m.Spec.Version, len(m.Spec.Platforms), len(c.Platforms()), out)
	}
	for _, p := range m.Spec.Platforms {
		pl := Platform{OS: p.Selector.MatchLabels["os"], Arch: p.Selector.MatchLabels["arch"]}
		name, _ := c.ArchiveName(c.Archives[0], sampleRelease, pl)
		if p.URI != "https://github.com/unprune/unprune/releases/download/v1.2.3/"+name || p.Sha256 != sums[name] {
			t.Errorf("%s: uri %s sha256 %s; want archive %s with %s", pl, p.URI, p.Sha256, name, sums[name])
		}
		if want := (Build{Binary: krewBinary}).BinaryName(pl); p.Bin != want {
			t.Errorf("%s: bin %s, want %s", pl, p.Bin, want)
		}
	}
	if strings.Contains(string(out), "{{") || !strings.HasPrefix(string(out), "# krew manifest of kubectl-unprune v1.2.3") {
		t.Errorf("rendered manifest keeps template text or lost its header:\n%s", out)
	}
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// goFiles parses a directory's non-test Go files.
func goFiles(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func packageName(t *testing.T, dir string) string {
	for _, f := range goFiles(t, dir) {
		return f.Name.Name
	}
	return ""
}

// hasStringVar reports whether the package in dir declares `var name string` or `var name = "…"`
// at package level: what -X can set.
func hasStringVar(t *testing.T, dir, name string) bool {
	for _, f := range goFiles(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != name {
						continue
					}
					if id, ok := vs.Type.(*ast.Ident); ok {
						return id.Name == "string"
					}
					if vs.Type == nil && i < len(vs.Values) {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						return ok && lit.Kind == token.STRING
					}
				}
			}
		}
	}
	return false
}
