package appset

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/argocd"
)

func parse(t *testing.T, doc string) ApplicationSet {
	t.Helper()
	var content map[string]any
	if err := yaml.Unmarshal([]byte(doc), &content); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(content)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const header = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: set, namespace: argocd}
spec:
`

func TestEvaluateListFasttemplate(t *testing.T) {
	s := parse(t, header+`
  generators:
  - list:
      elements:
      - {cluster: dev, url: "https://dev", values: {team: a}}
      - {cluster: prod, url: "https://prod", values: {team: b}}
  template:
    metadata: {name: "{{ cluster }}-web", labels: {"team-{{values.team}}": "{{unknown}}"}}
    spec:
      project: default
      source: {repoURL: "file:///r", path: "apps/{{cluster}}"}
      destination: {server: "{{url}}", namespace: web}
`)
	r := Evaluate(s, Sources{})
	if !r.Complete() || !reflect.DeepEqual(r.Names(), []string{"dev-web", "prod-web"}) {
		t.Fatalf("apps %v, not evaluated %v", r.Names(), r.NotEvaluated)
	}
	dev := r.Apps[0]
	if dev.Whole.Sources[0].Path != "apps/dev" || dev.Whole.Destination.Server != "https://dev" || dev.Namespace != "argocd" {
		t.Errorf("dev: %+v", dev.Whole)
	}
	labels := dev.Content["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team-a"] != "{{unknown}}" {
		t.Errorf("labels %v: keys are templated, unknown parameters left as written", labels)
	}
	if !reflect.DeepEqual(dev.Whole.Finalizers, []string{argocd.FinalizerResources}) {
		t.Errorf("finalizers %v: a template without finalizers gets the resources finalizer", dev.Whole.Finalizers)
	}
	s.PreserveResourcesOnDeletion = true
	if f := Evaluate(s, Sources{}).Apps[0].Whole.Finalizers; len(f) != 0 {
		t.Errorf("with preserveResourcesOnDeletion: finalizers %v, want none", f)
	}
}

func TestEvaluateGoTemplate(t *testing.T) {
	s := parse(t, header+`
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - list:
      elements:
      - {name: Web_App, env: {tier: prod}}
  template:
    metadata: {name: '{{ .name | normalize }}-{{ .env.tier | upper | trunc 2 }}'}
    spec:
      source: {repoURL: "file:///r", path: '{{ default "x" .missing }}'}
      destination: {server: "https://kubernetes.default.svc", namespace: '{{ replace "_" "-" .name | lower }}'}
`)
	r := Evaluate(s, Sources{})
	if !r.Complete() || !strings.Contains(r.Failed, "missing") {
		t.Fatalf("missingkey=error must fail Argo CD's generation: %v %v %q", r.Names(), r.NotEvaluated, r.Failed)
	}
	s.GoTemplateOptions = nil
	r = Evaluate(s, Sources{})
	if !r.Complete() || r.Names()[0] != "web-app-PR" || r.Apps[0].Whole.Destination.Namespace != "web-app" || r.Apps[0].Whole.Sources[0].Path != "x" {
		t.Fatalf("apps %v %+v, not evaluated %v", r.Names(), r.Apps, r.NotEvaluated)
	}
	s.Template["metadata"].(map[string]any)["name"] = "{{ .name | sha256sum | trunc 8 }}"
	if r := Evaluate(s, Sources{}); !r.Complete() || r.Names()[0] != "370a31f4" {
		t.Errorf("sprig's functions are Argo CD's: %v %v", r.Names(), r.NotEvaluated)
	}
	for _, f := range []string{"now | date \"2006\"", "randAlpha 5", "slugify .name"} {
		s.Template["metadata"].(map[string]any)["name"] = "{{ " + f + " }}"
		if r := Evaluate(s, Sources{}); r.Complete() || r.Failed != "" {
			t.Errorf("%s: a non-deterministic or unreproduced function must leave the set not evaluated: %v %v %q", f, r.Names(), r.NotEvaluated, r.Failed)
		}
	}
}

func TestEvaluateRemoteGeneratorsAreNotEvaluated(t *testing.T) {
	s := parse(t, header+`
  generators:
  - list: {elements: [{app: a}]}
  - pullRequest: {github: {owner: o, repo: r}}
  template: {metadata: {name: "{{app}}"}, spec: {}}
`)
	r := Evaluate(s, Sources{})
	if r.Complete() || !strings.Contains(r.NotEvaluated[0], "pullRequest") || len(r.Apps) != 1 {
		t.Errorf("%v %v", r.Names(), r.NotEvaluated)
	}
}

func TestEvaluateClustersMatrixMerge(t *testing.T) {
	clusters := []Cluster{
		{Name: "Prod EU", Server: "https://eu", Labels: map[string]string{"env": "prod"}},
		{Name: "dev", Server: "https://dev", Labels: map[string]string{"env": "dev"}},
	}
	one := func(gen, name string) Result {
		return Evaluate(parse(t, header+"  generators:\n"+gen+"  template:\n    metadata: {name: \""+name+"\"}\n    spec: {destination: {server: \"{{server}}\"}}\n"),
			Sources{Clusters: clusters})
	}
	if r := Evaluate(parse(t, header+"  generators: [{clusters: {}}]\n  template: {metadata: {name: x}}\n"), Sources{}); r.Complete() {
		t.Errorf("clusters without the Secrets read must not be evaluated: %v", r.Names())
	}
	checkNames := func(what string, r Result, want ...string) {
		t.Helper()
		if !r.Complete() || !reflect.DeepEqual(r.Names(), want) {
			t.Errorf("%s: apps %v, want %v; not evaluated %v", what, r.Names(), want, r.NotEvaluated)
		}
	}
	checkNames("clusters", one("  - clusters: {}\n", "{{nameNormalized}}"), "dev", "in-cluster", "prod-eu")
	checkNames("clusters with a selector", one("  - clusters: {selector: {matchLabels: {env: dev}}}\n", "{{nameNormalized}}"), "dev")
	checkNames("matrix", one(`  - matrix:
      generators:
      - clusters: {selector: {matchLabels: {env: prod}}}
      - list: {elements: [{app: api}, {app: "ui-{{name}}"}]}
`, "{{nameNormalized}}-{{app}}"), "prod-eu-api", "prod-eu-ui-Prod EU")
	merged := one(`  - merge:
      mergeKeys: [app]
      generators:
      - list: {elements: [{app: db, server: "https://a"}, {app: cache, server: "https://b"}]}
      - list: {elements: [{app: db, server: "https://override"}]}
`, "{{app}}")
	checkNames("merge", merged, "cache", "db")
	for _, a := range merged.Apps {
		if a.Name == "db" && a.Whole.Destination.Server != "https://override" {
			t.Errorf("merge: db's server %q, want the override", a.Whole.Destination.Server)
		}
	}
}

func TestPolicy(t *testing.T) {
	for policy, want := range map[string][2]bool{"": {true, true}, PolicySync: {true, true}, PolicyCreateDelete: {true, false},
		PolicyCreateUpdate: {false, true}, PolicyCreateOnly: {false, false}} {
		s := ApplicationSet{ApplicationsSync: policy}
		if s.DeletesApps() != want[0] || s.UpdatesApps() != want[1] {
			t.Errorf("%q: deletes %v updates %v, want %v", policy, s.DeletesApps(), s.UpdatesApps(), want)
		}
	}
}

// TestRenderEmptyParams: Argo CD returns the template untouched for an empty parameter set, so the
// resources finalizer is not added.
func TestRenderEmptyParams(t *testing.T) {
	s := parse(t, header+`
  generators: [{list: {elements: [{}]}}]
  template: {metadata: {name: static}, spec: {}}
`)
	r := Evaluate(s, Sources{})
	if !r.Complete() || len(r.Apps) != 1 || len(r.Apps[0].Whole.Finalizers) != 0 {
		t.Errorf("%+v %v", r.Apps, r.NotEvaluated)
	}
}
