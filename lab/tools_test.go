package lab

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRepoServerToolsOfEveryRelease: every Argo CD release the lab runs names one helm and one
// kustomize, each a component with a module requiring the version the component's name states, and a
// recipe in build.sh; and the Makefile builds the releases the lab runs.
func TestRepoServerToolsOfEveryRelease(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "lab", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]string{"helm-v3": "helm.sh/helm/v3", "helm-v4": "helm.sh/helm/v4", "kustomize-v5": "sigs.k8s.io/kustomize/kustomize/v5"}
	for _, v := range ArgoCDVersions {
		tools, err := RepoServerTools(root, v)
		if err != nil {
			t.Errorf("Argo CD %s: %v", v, err)
			continue
		}
		for _, c := range tools {
			family, version, _ := strings.Cut(c, "-")
			major, _, _ := strings.Cut(version, ".")
			mod := modules[family+"-"+major]
			gomod, err := os.ReadFile(filepath.Join(root, "lab", "modules", c, "go.mod"))
			if err != nil {
				t.Errorf("Argo CD %s's %s: %v", v, c, err)
				continue
			}
			if !regexp.MustCompile(`(?m)^(require |\t)` + regexp.QuoteMeta(mod+" "+version) + `( // indirect)?$`).Match(gomod) {
				t.Errorf("lab/modules/%s/go.mod does not require %s %s", c, mod, version)
			}
			recipe := "recipe_" + strings.NewReplacer("-", "_", ".", "_").Replace(c) + "() {\n"
			if !strings.Contains(string(script), "\n"+recipe) {
				t.Errorf("lab/build.sh has no %q for Argo CD %s", strings.TrimSpace(recipe), v)
			}
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LAB_ARGOCD_VERSIONS := (.*)$`).FindSubmatch(makefile)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), CIArgoCDVersions) {
		t.Errorf("the Makefile's LAB_ARGOCD_VERSIONS line is %q, want the releases CI runs, %v", m, CIArgoCDVersions)
	}
	m = regexp.MustCompile(`(?m)^LAB_ARGOCD_MATRIX := (.*)$`).FindSubmatch(makefile)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), ArgoCDVersions) {
		t.Errorf("the Makefile's LAB_ARGOCD_MATRIX line is %q, want every release the lab builds, %v", m, ArgoCDVersions)
	}
	for _, v := range ArgoCDVersions {
		if !slices.Contains(CIArgoCDVersions, v) && !slices.Contains(MatrixOnlyArgoCDVersions, v) {
			t.Errorf("Argo CD %s is neither CI's nor the matrix's", v)
		}
	}
}

func TestRepoServerToolsRefusesBadLists(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"two helms", "helm-v3.16.3\nhelm-v3.17.1\nkustomize-v5.4.3\n", "names 2 helm and 1 kustomize components; it must name one of each"},
		{"no kustomize", "# only helm\nhelm-v3.16.3\n", "names 1 helm and 0 kustomize components; it must name one of each"},
		{"another tool", "helm-v3.16.3\nkustomize-v5.4.3\njsonnet-v0.20.0\n", `"jsonnet-v0.20.0" is neither a helm-v… nor a kustomize-v… component`},
		{"missing file", "", "the helm and kustomize of Argo CD v9.9.9: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "lab", "modules", "argocd-v9.9.9")
			if tc.content != "" {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "repo-server-tools"), []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tools, err := RepoServerTools(root, "v9.9.9")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RepoServerTools = %v, %v; want an error containing %q", tools, err, tc.want)
			}
		})
	}
}

// TestArgoCDComponentsWithoutRepoServerTools: an installation without its repo-server's tools
// (make demo's) builds its release alone; every other builds the release's helm and kustomize too.
func TestArgoCDComponentsWithoutRepoServerTools(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	components, tools, err := argocdComponents(root, ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1"})
	if err != nil {
		t.Fatal(err)
	}
	release, err := RepoServerTools(root, "v3.6.1")
	if err != nil || len(release) != 2 {
		t.Fatalf("Argo CD v3.6.1's repo-server tools: %v, %v", release, err)
	}
	if want := append([]string{"argocd-v3.6.1"}, release...); !slices.Equal(components, want) || !slices.Equal(tools, release) {
		t.Errorf("with its tools: components %v, tools %v; want %v and %v", components, tools, want, release)
	}
	components, tools, err = argocdComponents(root, ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1", NoRepoServerTools: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(components, []string{"argocd-v3.6.1"}) || len(tools) != 0 {
		t.Errorf("without its tools: components %v, tools %v; want [argocd-v3.6.1] and none", components, tools)
	}
}

// TestOwnUIOfEveryRelease: each release the lab builds with its own UI names one argo-ui commit
// (which lab/build.sh checks against the release's pin, or the pin it stands in for), has a recipe,
// and is the Makefile's
// LAB_OWN_UI_VERSIONS, which `make test` builds for the browser tests.
func TestOwnUIOfEveryRelease(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "lab", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	own := OwnUIVersions(root)
	if len(own) == 0 {
		t.Fatal("the lab builds no release with its own UI")
	}
	for _, v := range own {
		b, err := os.ReadFile(filepath.Join(root, "lab", "modules", "argocd-"+v, "argo-ui"))
		if err != nil {
			t.Fatal(err)
		}
		var commits []string
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				commits = append(commits, line)
			}
		}
		// The commit built with, then, where it is not the release's own pin, "instead-of <pin>".
		if len(commits) == 0 || len(commits) > 2 || !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(commits[0]) ||
			len(commits) == 2 && !regexp.MustCompile(`^instead-of [0-9a-f]{40}$`).MatchString(commits[1]) {
			t.Errorf("lab/modules/argocd-%s/argo-ui names %q; want one argo-ui commit, and \"instead-of <the release's pin>\" where that differs", v, commits)
		}
		recipe := "recipe_argocd_ui_" + strings.NewReplacer(".", "_").Replace(v) + "() {\n"
		if !strings.Contains(string(script), "\n"+recipe) {
			t.Errorf("lab/build.sh has no %q", strings.TrimSpace(recipe))
		}
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	exact := ExactUIVersions(root)
	if len(exact) == 0 {
		t.Errorf("no release of %v is built with the argo-ui it pins: the browser tests would have no proof", own)
	}
	m := regexp.MustCompile(`(?m)^LAB_OWN_UI_VERSIONS := (.*)$`).FindSubmatch(makefile)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), exact) {
		t.Errorf("the Makefile's LAB_OWN_UI_VERSIONS line is %q, want the releases built with the argo-ui they pin, %v", m, exact)
	}
}

// sandbox copies build.sh and one component's module into a repository of its own under a temporary
// folder, whose ../shared is then missing until the test makes it; it returns the repository root.
func sandbox(t *testing.T, comp string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	for _, f := range []string{"lab/build.sh", "lab/modules/" + comp + "/go.mod", "lab/modules/" + comp + "/go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

func runBuild(t *testing.T, repo string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(repo, "lab", "build.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "UNPRUNE_LAB_CACHE="+filepath.Join(repo, "..", "cache"))
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestBuildRefusesWithoutSharedGitopsEngine: a checkout without ../shared/third_party refuses to build
// Argo CD v3.4.7 before building anything else it was asked for, and says where the folder belongs.
func TestBuildRefusesWithoutSharedGitopsEngine(t *testing.T) {
	repo := sandbox(t, "argocd-v3.4.7")
	stdout, stderr, err := runBuild(t, repo, "etcd", "argocd-v3.4.7")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("build.sh etcd argocd-v3.4.7 without the shared folder: %v, want exit status 2\n%s", err, stderr)
	}
	want := "lab/build: cannot build argocd-v3.4.7: " + filepath.Join(filepath.Dir(repo), "shared", "third_party", "argo-cd-gitops-engine", "v3.4.7") + " does not exist."
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "as ../shared/third_party from the repository root") {
		t.Errorf("stderr does not say what is missing and where it belongs, want %q:\n%s", want, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if _, err := os.Stat(filepath.Join(repo, "..", "cache")); !os.IsNotExist(err) {
		t.Errorf("the cache was created (%v): something was built before the refusal", err)
	}
}

// TestBuildKeyCoversSharedGitopsEngine: the cache key of a release built from a local gitops-engine
// changes with that tree's files (content, and names), which go.sum does not cover.
func TestBuildKeyCoversSharedGitopsEngine(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("build.sh's key asks the go command for its version")
	}
	repo := sandbox(t, "argocd-v3.4.7")
	tree := filepath.Join(repo, "..", "shared", "third_party", "argo-cd-gitops-engine", "v3.4.7")
	if err := os.MkdirAll(filepath.Join(tree, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := func() string {
		stdout, stderr, err := runBuild(t, repo, "--key", "argocd-v3.4.7")
		if err != nil {
			t.Fatalf("build.sh --key: %v\n%s", err, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	write("pkg/diff.go", "package diff\n")
	first := key()
	if again := key(); again != first {
		t.Fatalf("the key is not stable: %s, then %s", first, again)
	}
	write("pkg/diff.go", "package diff // changed\n")
	changed := key()
	if changed == first {
		t.Errorf("the key did not change with a file's content: %s", changed)
	}
	if err := os.Rename(filepath.Join(tree, "pkg/diff.go"), filepath.Join(tree, "pkg/sync.go")); err != nil {
		t.Fatal(err)
	}
	if renamed := key(); renamed == changed {
		t.Errorf("the key did not change with a file's name: %s", renamed)
	}
}

// TestLocalReplacementsStayOutsideTheProject: a lab module replaces a module with a local folder
// only from ../shared/third_party (never a copy inside the project), and that folder's module is
// the one replaced.
func TestLocalReplacementsStayOutsideTheProject(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mods, err := filepath.Glob(filepath.Join(root, "lab", "modules", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	replace := regexp.MustCompile(`(?m)^(?:replace )?\s*(\S+) => (\.\.?/\S+)\s*$`)
	found := 0
	for _, mod := range mods {
		b, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range replace.FindAllStringSubmatch(string(b), -1) {
			found++
			rel, _ := filepath.Rel(root, filepath.Join(filepath.Dir(mod), m[2]))
			if !strings.HasPrefix(filepath.ToSlash(rel), "../shared/third_party/") {
				t.Errorf("%s replaces %s with %s, which is %s from the repository root, not under ../shared/third_party", mod, m[1], m[2], rel)
				continue
			}
			gomod, err := os.ReadFile(filepath.Join(filepath.Dir(mod), m[2], "go.mod"))
			if err != nil {
				t.Logf("%s: %v (the shared folder is not beside this checkout)", mod, err)
				continue
			}
			if !regexp.MustCompile(`(?m)^module ` + regexp.QuoteMeta(m[1]) + `$`).Match(gomod) {
				t.Errorf("%s replaces %s with %s, whose go.mod declares another module", mod, m[1], m[2])
			}
		}
	}
	if found != 3 {
		t.Errorf("found %d local replacements, want 3 (Argo CD v3.3.14's, v3.4.7's and v3.5.1's gitops-engine)", found)
	}
}
