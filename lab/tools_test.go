package lab

import (
	"os"
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
	m := regexp.MustCompile(`(?m)^LAB_OWN_UI_VERSIONS :=(.*)$`).FindSubmatch(makefile)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), own) {
		t.Errorf("the Makefile's LAB_OWN_UI_VERSIONS line is %q, want the releases built with their own UI, %v", m, own)
	}
}
