package appset

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
)

// These cases are where an earlier, hand-written model of the generators diverged from Argo CD
// v3.6.1 (read in applicationset/): each now matches its source, or is reported not evaluated.

var v361 = &argocd.Version{Major: 3, Minor: 6, Patch: 1}

func TestMatrixGoTemplateDeepMerge(t *testing.T) {
	// mergo.Merge(WithOverride): the first generator's parameters win key by key, deeply, even an
	// empty one; keys only the second has stay.
	s := parse(t, header+`
  goTemplate: true
  generators:
  - matrix:
      generators:
      - list: {elements: [{app: {name: a, tier: ""}, env: prod}]}
      - list: {elements: [{app: {tier: web, owner: x}, env: dev}]}
  template:
    metadata: {name: '{{.app.name}}-{{.app.tier}}-{{.app.owner}}-{{.env}}'}
    spec: {}
`)
	r := Evaluate(s, Sources{Version: v361})
	if !r.Complete() || r.Failed != "" || !reflect.DeepEqual(r.Names(), []string{"a--x-prod"}) {
		t.Errorf("%v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
}

func TestMatrixSecondGeneratorValues(t *testing.T) {
	// From v3.5.0 the second generator's values are pre-rendered with the first's parameters, and a
	// value naming a parameter the first lacks is kept as written, whole, for the second to render
	// (RenderGeneratorParams): "both" then misses the first's env.
	s := parse(t, header+`
  goTemplate: true
  generators:
  - matrix:
      generators:
      - list: {elements: [{env: prod}]}
      - clusters:
          values: {both: '{{.env}}-{{.name}}', outer: '{{.env}}', own: '{{.name}}'}
  template:
    metadata: {name: '{{.values.outer}}.{{.values.own}}.{{.values.both}}'}
    spec: {}
`)
	clusters := []Cluster{}
	r := Evaluate(s, Sources{Version: v361, Clusters: clusters})
	// (The name carries the values; the API server would refuse it, which Failed says.)
	if !r.Complete() || !strings.Contains(r.Failed, "refuses") || !reflect.DeepEqual(r.Names(), []string{"prod.in-cluster.<no value>-in-cluster"}) {
		t.Errorf("v3.6.1: %v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
	if r := Evaluate(s, Sources{Clusters: clusters}); r.Complete() {
		t.Errorf("version unknown: %v must be not evaluated", r.Names())
	}
}

func TestClustersEmptySelector(t *testing.T) {
	// `selector: {matchLabels: {}}` is no selector: the local cluster is generated.
	s := parse(t, header+`
  generators: [{clusters: {selector: {matchLabels: {}}}}]
  template: {metadata: {name: '{{name}}'}, spec: {}}
`)
	if r := Evaluate(s, Sources{Clusters: []Cluster{}}); !reflect.DeepEqual(r.Names(), []string{"in-cluster"}) {
		t.Errorf("%v %v", r.Names(), r.NotEvaluated)
	}
}

func TestFasttemplateUnterminatedTag(t *testing.T) {
	// fasttemplate refuses a start tag without an end tag: Argo CD's generation fails, and the set
	// deletes nothing while it does.
	s := parse(t, header+`
  generators: [{list: {elements: [{a: x}]}}]
  template: {metadata: {name: '{{a}}'}, spec: {source: {path: '{{a}} {{b'}}}
`)
	if r := Evaluate(s, Sources{}); r.Failed == "" || !r.Complete() {
		t.Errorf("%v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
	// Without both braces on one line the string is not a template at all.
	s = parse(t, header+`
  generators: [{list: {elements: [{a: x}]}}]
  template: {metadata: {name: '{{a}}'}, spec: {source: {path: "{{\nb}}"}}}
`)
	if r := Evaluate(s, Sources{}); r.Failed != "" || r.Apps[0].Whole.Sources[0].Path != "{{\nb}}" {
		t.Errorf("%+v %q", r.Apps, r.Failed)
	}
}

func TestSprigNil(t *testing.T) {
	// sprig's quote drops nil arguments; a missing key is nil without missingkey=error.
	s := parse(t, header+`
  goTemplate: true
  generators: [{list: {elements: [{a: x}]}}]
  template: {metadata: {name: 'n{{ quote .missing }}{{ .a | quote }}'}, spec: {}}
`)
	if r := Evaluate(s, Sources{}); !reflect.DeepEqual(r.Names(), []string{`n"x"`}) {
		t.Errorf("%v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
}

func TestSelectorGoTemplateStringMaps(t *testing.T) {
	// A selector over goTemplate values (a map of strings) matches from v3.4.0.
	s := parse(t, header+`
  goTemplate: true
  generators:
  - clusters: {values: {tier: gold}}
    selector: {matchLabels: {values.tier: gold}}
  template: {metadata: {name: '{{.name}}'}, spec: {}}
`)
	if r := Evaluate(s, Sources{Version: v361, Clusters: []Cluster{}}); !reflect.DeepEqual(r.Names(), []string{"in-cluster"}) {
		t.Errorf("v3.6.1: %v %v", r.Names(), r.NotEvaluated)
	}
	v2 := &argocd.Version{Major: 2, Minor: 14, Patch: 11}
	if r := Evaluate(s, Sources{Version: v2, Clusters: []Cluster{}}); len(r.Names()) != 0 || !r.Complete() {
		t.Errorf("v2.14.11: %v %v", r.Names(), r.NotEvaluated)
	}
	if r := Evaluate(s, Sources{Clusters: []Cluster{}}); r.Complete() {
		t.Errorf("version unknown: %v must be not evaluated", r.Names())
	}
}

func TestGeneratorTemplateMerge(t *testing.T) {
	// mergo without override: the generator's fields win, its empty ones (false) take the set's.
	s := parse(t, header+`
  generators:
  - list:
      elements: [{a: x}]
      template:
        metadata: {}
        spec: {project: own, syncPolicy: {automated: {prune: false, selfHeal: true}}}
  template:
    metadata: {name: '{{a}}'}
    spec: {project: base, syncPolicy: {automated: {prune: true}}, destination: {namespace: d}}
`)
	r := Evaluate(s, Sources{})
	spec := r.Apps[0].Content["spec"].(map[string]any)
	auto := spec["syncPolicy"].(map[string]any)["automated"].(map[string]any)
	if r.Names()[0] != "x" || spec["project"] != "own" || auto["prune"] != true || auto["selfHeal"] != true || spec["destination"] == nil {
		t.Errorf("%v %+v", r.Names(), spec)
	}
}

// gitRepo makes a repository with one commit of files, then changes its working tree without
// committing: Argo CD never sees the latter.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	run("remote", "add", "origin", "https://git.example.com/Team/Repo.git")
	for f, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("add", "-A")
	run("commit", "-q", "-m", "c")
	// Uncommitted and untracked: not in the commit.
	if err := os.MkdirAll(filepath.Join(dir, "apps", "untracked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "apps", "untracked", "config.json"), []byte(`{"team":"u"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGitFilesAtTheCommit(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		"apps/web/config.json":      `{"team":"web"}`,
		"apps/api/config.json":      `{"team":"api"}`,
		"apps/legacy/a/config.json": `{"team":"legacy-a"}`,
		".hidden/config.json":       `{"team":"hidden"}`,
	})
	repo, err := OpenRepo(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	set := func(files string) ApplicationSet {
		return parse(t, header+`
  generators:
  - git: {repoURL: "https://git.example.com/team/repo", revision: main, files: `+files+`}
  template: {metadata: {name: '{{team}}'}, spec: {}}
`)
	}
	for _, tt := range []struct {
		name, files, version string
		want                 []string
	}{
		// `*` is a pathspec wildcard: it matches `/` too, so apps/*/config.json reaches apps/legacy/a.
		{"star spans directories", `[{path: "apps/*/config.json"}]`, "", []string{"api", "legacy-a", "web"}},
		// An exclude written as a directory drops everything below it.
		{"directory exclude", `[{path: "apps/*/config.json"}, {path: apps/legacy, exclude: true}]`, "v3.1.16", []string{"api", "web"}},
		{"file exclude", `[{path: "apps/*/config.json"}, {path: apps/web/config.json, exclude: true}]`, "v3.1.16", []string{"api", "legacy-a"}},
		// Before v3.1.0 an exclude entry is read as one more include (argocd.RuleAppSetFilesExclude).
		{"directory exclude before v3.1", `[{path: "apps/web/config.json"}, {path: apps/legacy, exclude: true}]`, "v3.0.23", []string{"legacy-a", "web"}},
		{"file exclude before v3.1", `[{path: "apps/*/config.json"}, {path: apps/web/config.json, exclude: true}]`, "v2.14.11", []string{"api", "legacy-a", "web"}},
		{"hidden files are files", `[{path: "*config.json"}]`, "", []string{"api", "hidden", "legacy-a", "web"}},
	} {
		src := Sources{Repo: repo}
		if tt.version != "" {
			v, err := argocd.ParseVersion(tt.version)
			if err != nil {
				t.Fatal(err)
			}
			src.Version = &v
		}
		r := Evaluate(set(tt.files), src)
		if !r.Complete() || r.Failed != "" || !reflect.DeepEqual(r.Names(), tt.want) {
			t.Errorf("%s: %v, want %v (not evaluated %v, failed %q)", tt.name, r.Names(), tt.want, r.NotEvaluated, r.Failed)
		}
	}
	// With the version unknown, an exclude entry is not guessed at.
	if r := Evaluate(set(`[{path: "apps/*/config.json"}, {path: apps/legacy, exclude: true}]`), Sources{Repo: repo}); r.Complete() ||
		!strings.Contains(strings.Join(r.NotEvaluated, " "), "exclude: true") {
		t.Errorf("an exclude with no version: evaluated %v (not evaluated %v)", r.Names(), r.NotEvaluated)
	}
	other := parse(t, header+`
  generators: [{git: {repoURL: "https://git.example.com/team/other", revision: main, files: [{path: "*"}]}}]
  template: {metadata: {name: x}, spec: {}}
`)
	if r := Evaluate(other, Sources{Repo: repo}); r.Complete() || !strings.Contains(r.NotEvaluated[0], "team/other") {
		t.Errorf("another repository: %v", r.NotEvaluated)
	}
	missing := parse(t, header+`
  generators: [{git: {repoURL: "https://git.example.com/team/repo", revision: release, files: [{path: "*"}]}}]
  template: {metadata: {name: x}, spec: {}}
`)
	if r := Evaluate(missing, Sources{Repo: repo}); r.Complete() {
		t.Errorf("an unknown revision must not be guessed: %v", r.Names())
	}
}

func TestGitDirectoriesAtTheCommit(t *testing.T) {
	dir := gitRepo(t, map[string]string{"apps/web/k.yaml": "a", "apps/api/k.yaml": "a", "apps/api/sub/k.yaml": "a", ".github/x/k.yaml": "a"})
	repo, err := OpenRepo(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := parse(t, header+`
  generators:
  - git: {repoURL: "https://GIT.example.com/team/repo.git", revision: HEAD, directories: [{path: "apps/*"}, {path: apps/web, exclude: true}]}
  template: {metadata: {name: '{{path.basename}}'}, spec: {}}
`)
	// path.Match for directories: `*` does not cross `/`; untracked apps/untracked is not there.
	if r := Evaluate(s, Sources{Repo: repo}); !r.Complete() || !reflect.DeepEqual(r.Names(), []string{"api"}) {
		t.Errorf("%v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
	scp := parse(t, header+`
  generators: [{git: {repoURL: "git@git.example.com:team/repo.git", directories: [{path: "*"}]}}]
  template: {metadata: {name: x}, spec: {}}
`)
	if r := Evaluate(scp, Sources{Repo: repo}); r.Complete() {
		t.Errorf("another URL of the repository is another repository for Argo CD: %v", r.Names())
	}
	if r := Evaluate(s, Sources{Repo: repo, Controller: Controller{Known: true, IncludeHiddenDirectories: true}}); r.Complete() {
		t.Errorf("hidden directories listed by the repo-server are not reproduced: %v", r.Names())
	}
}

func TestControllerPolicy(t *testing.T) {
	set := func(p string) ApplicationSet { return ApplicationSet{ApplicationsSync: p} }
	for _, tt := range []struct {
		params map[string]string
		set    string
		want   string
	}{
		{nil, "", PolicySync},
		{nil, PolicyCreateOnly, PolicyCreateOnly},
		{map[string]string{ParamPolicy: PolicySync}, PolicyCreateOnly, PolicySync},
		{map[string]string{ParamPolicy: PolicySync, ParamPolicyOverride: "true"}, PolicyCreateOnly, PolicyCreateOnly},
		{map[string]string{ParamPolicy: PolicyCreateOnly}, "", PolicyCreateOnly},
		{map[string]string{ParamPolicyOverride: "false"}, PolicyCreateDelete, PolicySync},
		{map[string]string{ParamPolicy: PolicyCreateUpdate, ParamPolicyOverride: "yes"}, PolicySync, PolicyCreateUpdate},
	} {
		c, err := ControllerFrom(tt.params)
		if err != nil {
			t.Fatal(err)
		}
		if got, known := set(tt.set).EffectivePolicy(c); got != tt.want || !known {
			t.Errorf("params %v, set %q: %s, want %s", tt.params, tt.set, got, tt.want)
		}
	}
	if _, err := ControllerFrom(map[string]string{ParamPolicy: "delete"}); err == nil {
		t.Error("an unknown policy must be refused")
	}
}
