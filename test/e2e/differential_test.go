//go:build lab

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// corpus are ApplicationSet specs (generators and template, PFX standing for a prefix unique to
// the run, REPO for the repository's URL) covering what unprune evaluates offline: list, clusters,
// git directories and files with excludes, matrix, merge, goTemplate on and off with options,
// selectors, generator templates; and constructs it must report not evaluated, or as Argo CD's own
// failure. Every template deploys nowhere in particular: the apps are never synced.
var corpus = []struct{ name, spec string }{
	{"list", `generators: [{list: {elements: [{a: x, b: "1"}, {a: w, b: "2"}]}}]
template: {metadata: {name: "PFX-{{a}}", labels: {b: "{{b}}"}}, spec: {project: default, source: {repoURL: REPO, path: "base/{{a}}"}, destination: {server: "https://kubernetes.default.svc", namespace: "{{a}}"}}}`},
	{"list-values", `generators: [{list: {elements: [{a: x, values: {team: red}}]}}]
template: {metadata: {name: "PFX-{{a}}-{{values.team}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"list-unknown-param", `generators: [{list: {elements: [{a: x}]}}]
template: {metadata: {name: "PFX-{{a}}", annotations: {left: "{{ missing }} and {{a}}"}}, spec: {project: default, source: {repoURL: REPO, path: "{{ a }}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"list-elements-yaml", `generators: [{list: {elements: [{a: x}], elementsYaml: "- a: w\n- a: z\n"}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: "{{a}}"}}}`},
	{"list-key-templated", `generators: [{list: {elements: [{a: x, k: owner}]}}]
template: {metadata: {name: "PFX-{{a}}", annotations: {"team/{{k}}": "{{a}}"}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"gotemplate-nested", `goTemplate: true
generators: [{list: {elements: [{app: {name: Web_App, tier: gold}, env: prod, num: 3}]}}]
template: {metadata: {name: 'PFX-{{ .app.name | normalize }}-{{ .env | upper | lower }}-{{ .num }}'}, spec: {project: default, source: {repoURL: REPO, path: '{{ .app.tier }}/{{ trunc 3 .env }}'}, destination: {server: "https://kubernetes.default.svc", namespace: '{{ .env }}'}}}`},
	{"gotemplate-sprig", `goTemplate: true
generators: [{list: {elements: [{name: api, tags: [a, b]}]}}]
template: {metadata: {name: 'PFX-{{ .name | sha256sum | trunc 6 }}', annotations: {tags: '{{ join "," .tags }}', q: '{{ quote .missing }}{{ .name | quote }}', y: '{{ toYaml .tags }}'}}, spec: {project: default, source: {repoURL: REPO, path: '{{ default "base" .missing }}'}, destination: {server: "https://kubernetes.default.svc", namespace: '{{ .name | replace "a" "b" }}'}}}`},
	{"gotemplate-missingkey-error", `goTemplate: true
goTemplateOptions: ["missingkey=error"]
generators: [{list: {elements: [{name: api}]}}]
template: {metadata: {name: 'PFX-{{ .name }}-{{ .missing }}'}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"gotemplate-missingkey-zero", `goTemplate: true
goTemplateOptions: ["missingkey=zero"]
generators: [{list: {elements: [{name: api}]}}]
template: {metadata: {name: 'PFX-{{ .name }}', annotations: {m: '[{{ .missing }}]'}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"fasttemplate-unterminated", `generators: [{list: {elements: [{a: x}]}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{a}} {{b"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"selector-labels", `generators: [{list: {elements: [{a: x, env: prod}, {a: w, env: dev}]}, selector: {matchLabels: {env: prod}}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"selector-expressions", `generators: [{list: {elements: [{a: x, env: prod}, {a: w, env: dev}, {a: z}]}, selector: {matchExpressions: [{key: env, operator: NotIn, values: [dev]}]}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"selector-empty", `generators: [{list: {elements: [{a: x}, {a: w}]}, selector: {matchLabels: {}}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"selector-gotemplate-nested", `goTemplate: true
generators: [{list: {elements: [{a: x, meta: {env: prod}}, {a: w, meta: {env: dev}}]}, selector: {matchLabels: {meta.env: prod}}}]
template: {metadata: {name: "PFX-{{.a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"clusters", `generators: [{clusters: {}}]
template: {metadata: {name: "PFX-{{nameNormalized}}"}, spec: {project: default, source: {repoURL: REPO, path: "base/{{metadata.labels.env}}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"clusters-labels", `generators: [{clusters: {selector: {matchLabels: {env: prod}}}}]
template: {metadata: {name: "PFX-{{name}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"clusters-expressions", `generators: [{clusters: {selector: {matchExpressions: [{key: env, operator: Exists}]}}}]
template: {metadata: {name: "PFX-{{name}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"clusters-empty-selector", `generators: [{clusters: {selector: {matchLabels: {}}}}]
template: {metadata: {name: "PFX-{{name}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"clusters-values", `generators: [{clusters: {values: {ns: "team-{{name}}"}}}]
template: {metadata: {name: "PFX-{{name}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: "{{values.ns}}"}}}`},
	{"clusters-gotemplate", `goTemplate: true
generators: [{clusters: {values: {ns: 'team-{{ .name }}'}}}]
template: {metadata: {name: 'PFX-{{ .name }}', annotations: {env: '{{ (default dict .metadata).labels | toYaml }}'}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: '{{ .values.ns }}'}}}`},
	{"git-directories", `generators: [{git: {repoURL: REPO, revision: main, directories: [{path: "apps/*"}, {path: apps/db, exclude: true}]}}]
template: {metadata: {name: "PFX-{{path.basename}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: "{{path[1]}}"}}}`},
	{"git-directories-nested", `generators: [{git: {repoURL: REPO, revision: HEAD, directories: [{path: "apps/*/*"}, {path: "*"}]}}]
template: {metadata: {name: "PFX-{{path.basenameNormalized}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"git-directories-gotemplate", `goTemplate: true
generators: [{git: {repoURL: REPO, revision: main, pathParamPrefix: p, directories: [{path: "apps/*"}]}}]
template: {metadata: {name: 'PFX-{{ index .p.path.segments 1 }}'}, spec: {project: default, source: {repoURL: REPO, path: '{{ .p.path.path }}'}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"git-files", `generators: [{git: {repoURL: REPO, revision: main, files: [{path: "teams/*/config.json"}]}}]
template: {metadata: {name: "PFX-{{team}}", labels: {tier: "{{tier.name}}"}}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: "{{path.basename}}"}}}`},
	{"git-files-directory-exclude", `generators: [{git: {repoURL: REPO, revision: main, files: [{path: "teams/*/config.json"}, {path: teams/nested, exclude: true}]}}]
template: {metadata: {name: "PFX-{{team}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"git-files-star-exclude", `generators: [{git: {repoURL: REPO, revision: main, files: [{path: "teams/**"}, {path: "teams/n*", exclude: true}, {path: "*.yaml", exclude: true}]}}]
template: {metadata: {name: "PFX-{{team}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"git-files-list", `generators: [{git: {repoURL: REPO, revision: main, files: [{path: "lists/*.yaml"}]}}]
template: {metadata: {name: "PFX-{{name}}-{{path.filenameNormalized}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"git-files-gotemplate", `goTemplate: true
generators: [{git: {repoURL: REPO, revision: main, files: [{path: "teams/*/config.json"}], values: {ns: '{{ .team }}-ns'}}}]
template: {metadata: {name: 'PFX-{{ .team }}-{{ .tier.name }}'}, spec: {project: default, source: {repoURL: REPO, path: '{{ .path.path }}'}, destination: {server: "https://kubernetes.default.svc", namespace: '{{ .values.ns }}'}}}`},
	{"matrix-lists", `generators: [{matrix: {generators: [{list: {elements: [{env: dev}, {env: prod}]}}, {list: {elements: [{app: a}, {app: "b-{{env}}"}]}}]}}]
template: {metadata: {name: "PFX-{{env}}-{{app}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: "{{env}}"}}}`},
	{"matrix-git-list", `generators: [{matrix: {generators: [{git: {repoURL: REPO, revision: main, directories: [{path: "apps/*"}]}}, {list: {elements: [{suffix: "{{path.basename}}-x"}]}}]}}]
template: {metadata: {name: "PFX-{{suffix}}"}, spec: {project: default, source: {repoURL: REPO, path: "{{path}}"}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"matrix-gotemplate-merge", `goTemplate: true
generators: [{matrix: {generators: [{list: {elements: [{app: {name: a, tier: ""}, env: prod}]}}, {list: {elements: [{app: {tier: web, owner: o}, env: dev}]}}]}}]
template: {metadata: {name: 'PFX-{{ .app.name }}-{{ .app.owner }}-{{ .env }}', annotations: {tier: '[{{ .app.tier }}]'}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"matrix-clusters-values", `goTemplate: true
generators: [{matrix: {generators: [{list: {elements: [{env: prod}]}}, {clusters: {selector: {matchLabels: {env: prod}}, values: {both: '{{ .env }}-{{ .name }}', outer: '{{ .env }}'}}}]}}]
template: {metadata: {name: 'PFX-{{ .name }}', annotations: {both: '{{ .values.both }}', outer: '{{ .values.outer }}'}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"merge-lists", `generators: [{merge: {mergeKeys: [app], generators: [{list: {elements: [{app: a, ns: one}, {app: b, ns: two}]}}, {list: {elements: [{app: a, ns: override}]}}]}}]
template: {metadata: {name: "PFX-{{app}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: "{{ns}}"}}}`},
	{"merge-gotemplate", `goTemplate: true
generators: [{merge: {mergeKeys: [app], generators: [{list: {elements: [{app: a, cfg: {x: "1", y: "2"}}]}}, {list: {elements: [{app: a, cfg: {y: "3"}}]}}]}}]
template: {metadata: {name: 'PFX-{{ .app }}', annotations: {cfg: '{{ .cfg.x }}{{ .cfg.y }}'}}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"generator-template", `generators: [{list: {elements: [{a: x}], template: {metadata: {}, spec: {project: default, syncPolicy: {automated: {prune: false, selfHeal: true}}, destination: {namespace: own}}}}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: base}, syncPolicy: {automated: {prune: true}}}}`},
	{"preserve", `syncPolicy: {preserveResourcesOnDeletion: true}
generators: [{list: {elements: [{a: x}]}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"finalizers", `generators: [{list: {elements: [{a: x}]}}]
template: {metadata: {name: "PFX-{{a}}", finalizers: [resources-finalizer.argocd.argoproj.io/background]}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"plugin", `generators: [{plugin: {configMapRef: {name: no-such-plugin}}}]
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
	{"template-patch", `generators: [{list: {elements: [{a: x}]}}]
templatePatch: |
  metadata: {annotations: {patched: "yes"}}
template: {metadata: {name: "PFX-{{a}}"}, spec: {project: default, source: {repoURL: REPO, path: base}, destination: {server: "https://kubernetes.default.svc", namespace: x}}}`},
}

// corpusRepo holds directories and files for the git generators, and one untracked file.
func corpusRepo(t *testing.T) *labtest.Repo {
	repo := labtest.NewRepo(t)
	for _, d := range []string{"apps/web", "apps/api", "apps/db", "apps/legacy/old", ".github/ci", "base"} {
		repo.Write(t, d+"/k.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n")
	}
	repo.Write(t, "teams/a/config.json", `{"team": "a", "tier": {"name": "gold"}}`)
	repo.Write(t, "teams/b/config.json", `{"team": "b", "tier": {"name": "silver"}}`)
	repo.Write(t, "teams/nested/c/config.json", `{"team": "c", "tier": {"name": "bronze"}}`)
	repo.Write(t, "teams/notes.yaml", "team: notes\n")
	repo.Write(t, "lists/people.yaml", "- name: ann\n- name: bob\n")
	repo.Commit(t, "the corpus")
	repo.Write(t, "teams/untracked/config.json", `{"team": "untracked"}`)
	return repo
}

// normalized is a JSON value with what Argo CD's typed structs cannot tell from absent removed:
// empty strings, false, zero, empty lists and objects, nulls.
func normalized(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			m := map[string]any{}
			for k, x := range t {
				if x = walk(x); x != nil {
					m[k] = x
				}
			}
			if len(m) == 0 {
				return nil
			}
			return m
		case []any:
			if len(t) == 0 {
				return nil
			}
			l := make([]any, len(t))
			for i, x := range t {
				l[i] = walk(x)
			}
			return l
		case string:
			if t == "" {
				return nil
			}
		case bool:
			if !t {
				return nil
			}
		case float64:
			if t == 0 {
				return nil
			}
		}
		return v
	}
	return walk(out)
}

// generatedApp is what is compared of one app: name, labels, annotations, finalizers and spec.
func generatedApp(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	b, _ := json.Marshal(normalized(map[string]any{"name": meta["name"], "labels": meta["labels"], "annotations": meta["annotations"],
		"finalizers": meta["finalizers"], "spec": obj["spec"]}))
	return string(b)
}

// TestDifferentialApplicationSets: every set of the corpus is generated by the real ApplicationSet
// controller of each release line (v3.6.1 in CI) and evaluated by unprune offline with that
// release's rules; each gives the same Applications (name, metadata and spec), or unprune says it is
// not evaluated, or both fail to generate (and the controller creates nothing). Two of unprune's
// generator rules change between lines (argocd.RuleAppSetFlattenStringMaps,
// RuleAppSetMatrixValuesPreResolved): the corpus holds sets that tell them apart.
func TestDifferentialApplicationSets(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			differentialCorpus(t, env, version)
		})
	}
}

func differentialCorpus(t *testing.T, env *labtest.Env, version string) {
	v, err := argocd.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	// An installation of its own: its cluster Secrets would change other tests' clusters generators.
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation", AppSetPolicyOverride: "true"})
	repo := corpusRepo(t)
	secrets := []struct {
		name string
		env  string
	}{{"corpus-eu", "prod"}, {"corpus-us", "dev"}}
	var clusters []appset.Cluster
	for _, s := range secrets {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + s.name, Namespace: install.Namespace(),
			Labels:      map[string]string{"argocd.argoproj.io/secret-type": "cluster", "env": s.env},
			Annotations: map[string]string{"owner": "corpus"}},
			StringData: map[string]string{"name": s.name, "server": "https://" + s.name + ".invalid", "config": `{"bearerToken": "x"}`}}
		if _, err := env.Kube.CoreV1().Secrets(install.Namespace()).Create(labtest.Context(t), sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, appset.Cluster{Name: s.name, Server: "https://" + s.name + ".invalid", Labels: sec.Labels, Annotations: sec.Annotations})
	}
	local, err := appset.OpenRepo(context.Background(), repo.Dir())
	if err != nil {
		t.Fatal(err)
	}
	src := appset.Sources{Repo: local, Clusters: clusters, Controller: appset.DefaultController, Version: &v}

	var mu sync.Mutex
	outcome := map[string]int{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for i, c := range corpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			what := differential(t, env, install, repo, src, i, c.name, c.spec)
			mu.Lock()
			outcome[what]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("corpus of %d sets: %v", len(corpus), outcome)
	if outcome["same"] < 28 || outcome["same"]+outcome["not evaluated"]+outcome["both fail"] != len(corpus) {
		t.Errorf("outcomes %v over %d sets; want every set the same, not evaluated or failing in both, and at least 28 the same", outcome, len(corpus))
	}
}

// differential runs one set and returns its outcome: same, not evaluated, both fail, or differs
// (reported as an error).
func differential(t *testing.T, env *labtest.Env, install *labtest.Install, repo *labtest.Repo, src appset.Sources, i int, name, spec string) string {
	prefix := fmt.Sprintf("d%02d-%s", i, strings.TrimPrefix(labtest.UniqueName(""), "-"))
	doc := strings.ReplaceAll(strings.ReplaceAll(spec, "PFX", prefix), "REPO", `"`+repo.URL+`"`)
	var specMap map[string]any
	if err := yaml.Unmarshal([]byte(doc), &specMap); err != nil {
		t.Errorf("%s: %v", name, err)
		return "broken"
	}
	setName := prefix + "-set"
	set := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": setName, "namespace": install.Namespace()}, "spec": specMap}
	if err := env.Create(labtest.Context(t), set); err != nil {
		t.Errorf("%s: create: %v", name, err)
		return "broken"
	}
	ri := env.Dynamic.Resource(gvrApplicationSet).Namespace(install.Namespace())
	t.Cleanup(func() { _ = ri.Delete(context.Background(), setName, metav1.DeleteOptions{}) })

	// The controller has answered once its conditions say the resources are up to date, or an error.
	var failed string
	var live map[string]any
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u, err := ri.Get(labtest.Context(t), setName, metav1.GetOptions{})
		if err == nil {
			live = u.Object
			done := false
			status, _ := u.Object["status"].(map[string]any)
			conds, _ := status["conditions"].([]any)
			for _, c := range conds {
				m, _ := c.(map[string]any)
				switch {
				case m["type"] == "ErrorOccurred" && m["status"] == "True":
					failed, done = fmt.Sprint(m["message"]), true
				case m["type"] == "ResourcesUpToDate" && m["status"] == "True":
					done = true
				}
			}
			if done {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the controller did not answer in 3 minutes: %v", name, live["status"])
			return "broken"
		}
		time.Sleep(500 * time.Millisecond)
	}
	real := map[string]string{}
	apps, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).List(labtest.Context(t), metav1.ListOptions{})
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return "broken"
	}
	for _, a := range apps.Items {
		if o := metav1.GetControllerOf(&a); o != nil && o.Kind == "ApplicationSet" && o.Name == setName {
			real[a.GetName()] = generatedApp(a.Object)
		}
	}
	parsed, err := appset.Parse(live)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return "broken"
	}
	res := appset.Evaluate(parsed, src)
	ours := map[string]string{}
	for _, a := range res.Apps {
		ours[a.Name] = generatedApp(a.Content)
	}
	switch {
	case !res.Complete():
		t.Logf("%s: not evaluated (%s); Argo CD generated %v (error %q)", name, strings.Join(res.NotEvaluated, "; "), keys(real), failed)
		return "not evaluated"
	case res.Failed != "" && failed != "":
		t.Logf("%s: both fail: unprune %q, Argo CD %q", name, res.Failed, failed)
		return "both fail"
	case res.Failed != "" || failed != "":
		t.Errorf("%s: unprune's generation failed %q, Argo CD's %q (it created %v)", name, res.Failed, failed, keys(real))
		return "differs"
	case !reflect.DeepEqual(real, ours):
		t.Errorf("%s: Argo CD generated\n%v\nunprune\n%v", name, real, ours)
		return "differs"
	}
	return "same"
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
