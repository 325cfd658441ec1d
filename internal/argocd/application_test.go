package argocd

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseApplication(t *testing.T) {
	app, err := ParseApplication([]byte(`{
	  "metadata": {"namespace": "team-a", "name": "web", "uid": "u1", "resourceVersion": "7",
	    "labels": {"tier": "front"}, "annotations": {"argocd.argoproj.io/refresh": "hard"}},
	  "spec": {"project": "team-a", "destination": {"name": "prod-eu", "namespace": "web"},
	    "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["Prune=confirm"]}},
	  "operation": {"sync": {}},
	  "status": {"sync": {"status": "OutOfSync", "revision": "abc"}, "reconciledAt": "2026-11-30T12:00:05Z",
	    "resources": [
	      {"version": "v1", "kind": "Namespace", "name": "web", "status": "OutOfSync", "requiresPruning": true},
	      {"group": "batch", "version": "v1", "kind": "Job", "namespace": "web", "name": "migrate", "requiresPruning": true, "hook": true},
	      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web", "status": "Synced"}],
	    "operationState": {"phase": "Succeeded"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if app.Ref() != "team-a/web" || app.Project != "team-a" || app.Labels["tier"] != "front" || app.Refresh != "hard" {
		t.Errorf("metadata: %+v", app)
	}
	if !app.Automated || !app.AutoPrune || app.SyncOptions[0] != "Prune=confirm" || !app.Operation {
		t.Errorf("policy: %+v", app)
	}
	if app.Destination.InCluster() || app.Destination.String() != "prod-eu" {
		t.Errorf("destination %+v", app.Destination)
	}
	if !app.ReconciledAt.Equal(time.Date(2026, 11, 30, 12, 0, 5, 0, time.UTC)) {
		t.Errorf("reconciledAt %v", app.ReconciledAt)
	}
	if p := app.Pruning(); len(p) != 1 || p[0].Kind != "Namespace" {
		t.Errorf("Pruning() = %+v; hooks must never be in it", p)
	}
	if app.Instance("argocd") != "team-a_web" || app.Instance("team-a") != "web" {
		t.Errorf("instance")
	}
}

func TestParseApplicationList(t *testing.T) {
	list, err := ParseApplicationList([]byte(`{"metadata":{"continue":"next"},"items":[{"metadata":{"name":"a","namespace":"argocd"}},{"metadata":{"name":"b","namespace":"argocd"},"spec":{"syncPolicy":{"automated":{"enabled":false,"prune":true}}}}]}`))
	if err != nil || list.Continue != "next" || len(list.Items) != 2 || list.Items[1].Automated {
		t.Fatalf("%+v %v", list, err)
	}
}

func TestDestinationInCluster(t *testing.T) {
	for d, want := range map[Destination]bool{
		{}:                          true,
		{Name: "in-cluster"}:        true,
		{Server: InClusterServer}:   true,
		{Server: "https://1.2.3.4"}: false,
		{Name: "prod"}:              false,
		{Name: "in-cluster", Server: "https://1.2.3.4"}: false,
	} {
		if got := d.InCluster(); got != want {
			t.Errorf("%+v.InCluster() = %v, want %v", d, got, want)
		}
	}
}

// TestDecodeApplicationList: the streamed decode takes the continue token wherever the server puts
// it, null items, unknown fields of any shape, and refuses what is not a list.
func TestDecodeApplicationList(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"ApplicationList","apiVersion":"argoproj.io/v1alpha1","metadata":{"resourceVersion":"9","continue":"c"},"items":[{"metadata":{"name":"a","namespace":"x","labels":{"l":"1"}},"status":{"resources":[{"kind":"Namespace","name":"n","requiresPruning":true}]}},{"metadata":{"name":"b","namespace":"x"}}]}`: "c|x/a,x/b|1",
		`{"items":[{"metadata":{"name":"a","namespace":"x"}}],"metadata":{"continue":"late"},"extra":{"deep":[1,{"x":null}]}}`: "late|x/a|0",
		`{"metadata":{},"items":null}`: "||0",
		`{"items":[]}`:                 "||0",
	} {
		var refs []string
		rows := 0
		cont, err := DecodeApplicationList(strings.NewReader(in), func(a Application) {
			refs = append(refs, a.Ref())
			rows += len(a.Pruning())
		})
		if got := fmt.Sprintf("%s|%s|%d", cont, strings.Join(refs, ","), rows); err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`[]`, `{"items":{}}`, `{"items":[{"metadata":5}]}`, `{"items":[`, ``} {
		if _, err := DecodeApplicationList(strings.NewReader(bad), func(Application) {}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestControlledBy: the ApplicationSet controller counts an app as a set's only through its
// controller reference (apiVersion argoproj.io/v1alpha1); any other ownerReference leaves it alone.
func TestControlledBy(t *testing.T) {
	ref := func(apiVersion, kind, name string, controller bool) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name, "uid": "u", "controller": controller}
	}
	for _, c := range []struct {
		name   string
		owners []any
		want   string
	}{
		{"controller", []any{ref("argoproj.io/v1alpha1", "ApplicationSet", "teams", true)}, "teams"},
		{"owner but not controller", []any{ref("argoproj.io/v1alpha1", "ApplicationSet", "teams", false)}, ""},
		{"another controller first", []any{ref("v1", "ConfigMap", "x", true), ref("argoproj.io/v1alpha1", "ApplicationSet", "teams", false)}, ""},
		{"after a plain owner", []any{ref("v1", "ConfigMap", "x", false), ref("argoproj.io/v1alpha1", "ApplicationSet", "teams", true)}, "teams"},
		{"other API version", []any{ref("argoproj.io/v1beta1", "ApplicationSet", "teams", true)}, ""},
		{"no owner", nil, ""},
	} {
		w := ParseWhole(map[string]any{"metadata": map[string]any{"name": "a", "namespace": "argocd", "ownerReferences": c.owners}})
		got, ok := w.ControlledBy("ApplicationSet")
		if ok != (c.want != "") || got.Name != c.want {
			t.Errorf("%s: ControlledBy = %+v, %v; want %q", c.name, got, ok, c.want)
		}
	}
}

// TestParseApplicationSourceHydrator: spec.sourceHydrator as Argo CD v3.3+ writes it (a dry source
// with helm options) and as v2.14–v3.2 write it (repoURL, path and targetRevision alone).
func TestParseApplicationSourceHydrator(t *testing.T) {
	app, err := ParseApplication([]byte(`{"metadata": {"namespace": "argocd", "name": "shop"},
	  "spec": {"project": "default", "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
	    "sourceHydrator": {
	      "drySource": {"repoURL": "https://git.example/dry.git", "targetRevision": "main", "path": "chart", "helm": {"releaseName": "shop-v1", "valueFiles": ["prod.yaml"]}},
	      "syncSource": {"targetBranch": "environments/prod", "path": "shop"},
	      "hydrateTo": {"targetBranch": "environments/prod-next"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := app.SourceHydrator
	if h == nil || h.DrySource.RepoURL != "https://git.example/dry.git" || h.DrySource.Path != "chart" || h.DrySource.TargetRevision != "main" ||
		h.DrySource.HelmReleaseName() != "shop-v1" || h.SyncSource.TargetBranch != "environments/prod" || h.SyncSource.Path != "shop" ||
		h.HydrateTo == nil || h.HydrateTo.TargetBranch != "environments/prod-next" || h.SyncRepoURL() != "https://git.example/dry.git" {
		t.Fatalf("sourceHydrator %+v", h)
	}
	old, err := ParseApplication([]byte(`{"metadata": {"name": "shop"}, "spec": {"sourceHydrator": {
	  "drySource": {"repoURL": "file:///r.git", "targetRevision": "HEAD", "path": "dry"},
	  "syncSource": {"targetBranch": "hydrated", "path": "out", "repoURL": "file:///h.git"}}}}`))
	if err != nil || old.SourceHydrator == nil || old.SourceHydrator.DrySource.HelmReleaseName() != "" || old.SourceHydrator.HydrateTo != nil ||
		old.SourceHydrator.SyncRepoURL() != "file:///h.git" {
		t.Fatalf("%+v %v", old.SourceHydrator, err)
	}
	if plain, _ := ParseApplication([]byte(`{"metadata": {"name": "a"}, "spec": {"source": {"path": "x"}}}`)); plain.SourceHydrator != nil {
		t.Errorf("an app without spec.sourceHydrator: %+v", plain.SourceHydrator)
	}
}

func TestHydratorOf(t *testing.T) {
	if HydratorOf(map[string]any{"source": map[string]any{}}) != nil {
		t.Error("an app without sourceHydrator")
	}
	h := HydratorOf(map[string]any{"sourceHydrator": map[string]any{"drySource": map[string]any{"path": "chart", "plugin": map[string]any{"name": "p"}}}})
	if h == nil || h.DrySource.Path != "chart" || len(h.DrySource.Plugin) == 0 {
		t.Errorf("%+v", h)
	}
	if HydratorOf(map[string]any{"sourceHydrator": "odd"}) == nil {
		t.Error("a sourceHydrator that does not parse is still one")
	}
}
