package check

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
)

// setArgoCD adds a live ApplicationSet and the apps it owns to the fixture's Argo CD.
type setArgoCD struct {
	countingArgoCD
	live  map[string]any
	owned []argocd.Whole
	// params are argocd-cmd-params-cm; nil stands for a ConfigMap that sets nothing.
	params map[string]string
}

func (a setArgoCD) CmdParams(context.Context) (map[string]string, error) {
	if a.params == nil {
		return map[string]string{}, nil
	}
	return a.params, nil
}

func (a setArgoCD) GetApplicationSet(context.Context, string, string) (map[string]any, error) {
	return a.live, nil
}

func (a setArgoCD) OwnedApplications(context.Context, string, string) ([]argocd.Whole, error) {
	return a.owned, nil
}

func (a setArgoCD) ClusterSecrets(context.Context) ([]appset.Cluster, error) { return nil, nil }

func setDoc(t *testing.T, extra, name string, elements ...string) map[string]any {
	t.Helper()
	doc := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: teams, namespace: argocd, uid: set-uid}
spec:
` + extra + `
  generators:
  - list:
      elements: [` + strings.Join(elements, ", ") + `]
  template:
    metadata: {name: "` + name + `"}
    spec:
      project: default
      source: {repoURL: "file:///repo", path: "{{team}}"}
      destination: {server: "https://kubernetes.default.svc", namespace: "{{team}}"}
`
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunSet: dropping an element deletes its app under sync and create-delete and its finalizer
// cascades; create-update and create-only delete nothing; a remote generator leaves the answer
// open; renaming the template's name is a delete and a create of each app, with the fix.
func TestRunSet(t *testing.T) {
	f := newFamily(t)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("payments", "", "Namespace", "payments", "payments"))
	var owned []argocd.Whole
	for _, team := range []string{"payments", "search"} {
		// The set generated them: same content as the template renders, with the resources finalizer.
		f.app(team, "", []string{argocd.FinalizerResources}, team)
		owned = append(owned, argocd.Whole{Namespace: "argocd", Name: team, Finalizers: []string{argocd.FinalizerResources}, Sources: []argocd.Source{{RepoURL: "file:///repo", Path: team}},
			Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: team}})
	}
	f.argo.AddApp(argocd.Application{Namespace: "argocd", Name: "payments", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "payments"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "payments"}}})
	argo := setArgoCD{countingArgoCD: f.argo, live: setDoc(t, "", "{{team}}", "{team: payments}", "{team: search}"), owned: owned}
	run := func(changed map[string]any) Report {
		t.Helper()
		rep, err := RunSet(context.Background(), argo, f.s, changed, appset.Sources{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	for _, policy := range []string{"", "  syncPolicy: {applicationsSync: create-delete}"} {
		rep := run(setDoc(t, policy, "{{team}}", "{team: search}"))
		if len(rep.Apps) != 1 || rep.Apps[0].App.Name != "payments" || rep.Apps[0].Fate != Cascade || rep.Apps[0].Deleted != 1 || rep.Apps[0].High != 1 {
			t.Errorf("%q, dropping payments: %+v; want its cascade deleting the namespace", policy, rep.Apps)
		}
	}
	for _, policy := range []string{"create-update", "create-only"} {
		rep := run(setDoc(t, "  syncPolicy: {applicationsSync: "+policy+"}", "{{team}}", "{team: search}"))
		if len(rep.Apps) != 1 || rep.Apps[0].Fate != NotDeleted {
			t.Errorf("%s: %+v; want payments not deleted", policy, rep.Apps)
		}
	}
	// preserveResourcesOnDeletion set in the same change does not reach the app no longer generated.
	rep := run(setDoc(t, "  syncPolicy: {preserveResourcesOnDeletion: true}", "{{team}}", "{team: search}"))
	if len(rep.Apps) != 1 || rep.Apps[0].Fate != Cascade || len(rep.Apps[0].Notes) == 0 {
		t.Errorf("preserve set with the removal: %+v; want the cascade, with a note", rep.Apps)
	}
	if n := rep.Set.Notes; len(n) != 1 || !strings.Contains(n[0], "removes the resources finalizer from 1 app(s)") {
		t.Errorf("preserve set: notes %v; want search losing its finalizer at the next update", n)
	}
	if n := run(setDoc(t, "", "{{team}}", "{team: search}")).Set.Notes; len(n) != 0 {
		t.Errorf("nothing changes for search: notes %v", n)
	}
	remote := setDoc(t, "", "{{team}}", "{team: search}")
	remote["spec"].(map[string]any)["generators"] = append(remote["spec"].(map[string]any)["generators"].([]any), map[string]any{"plugin": map[string]any{}})
	if rep := run(remote); len(rep.Apps) != 1 || rep.Apps[0].Fate != NotEvaluated {
		t.Errorf("with a plugin generator: %+v; want not evaluated", rep.Apps)
	}
	rep = run(setDoc(t, "", "{{team}}-v2", "{team: payments}", "{team: search}"))
	created := rep.Set.Created
	got := byApp(rep)
	if p := got["payments"]; p.RenamedTo != "payments-v2" || p.Fate != Cascade || !strings.Contains(p.Fix, "preserveResourcesOnDeletion: true on argocd/teams alone") {
		t.Errorf("renamed: %+v; want payments renamed to payments-v2, cascading, with the fix", p)
	}
	rep = run(setDoc(t, "  syncPolicy: {applicationsSync: create-delete}", "{{team}}-v2", "{team: payments}", "{team: search}"))
	if p := byApp(rep)["payments"]; !strings.Contains(p.Fix, "remove its resources finalizer by hand first") || strings.Contains(p.Fix, "preserveResourcesOnDeletion: true on") {
		t.Errorf("renamed under create-delete: %q; want the finalizer removed by hand (the set never updates it)", p.Fix)
	}

	// The controller's policy wins over the set's unless it lets sets override it.
	argo.params = map[string]string{appset.ParamPolicy: "sync"}
	rep = run(setDoc(t, "  syncPolicy: {applicationsSync: create-only}", "{{team}}", "{team: search}"))
	if len(rep.Apps) != 1 || rep.Apps[0].Fate != Cascade || rep.Set.Policy != "sync" || !strings.Contains(rep.Apps[0].DeletedBy, "overrides the set's create-only") {
		t.Errorf("controller sync, set create-only: %+v %+v; want payments deleted", rep.Set, rep.Apps)
	}
	argo.params[appset.ParamPolicyOverride] = "true"
	if rep := run(setDoc(t, "  syncPolicy: {applicationsSync: create-only}", "{{team}}", "{team: search}")); len(rep.Apps) != 1 || rep.Apps[0].Fate != NotDeleted {
		t.Errorf("controller sync with override, set create-only: %+v; want payments kept", rep.Apps)
	}
	argo.params = nil

	// Argo CD's own generation answers when it can, and its refusal changes nothing.
	oracle := &fakeOracle{apps: []map[string]any{{"metadata": map[string]any{"name": "search", "namespace": "argocd"},
		"spec": map[string]any{"source": map[string]any{"repoURL": "file:///repo", "path": "search"}, "destination": map[string]any{"server": argocd.InClusterServer, "namespace": "search"}}}}}
	rep, err := RunSet(context.Background(), argo, f.s, setDoc(t, "", "{{team}}", "{team: payments}", "{team: search}"), appset.Sources{}, oracle)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Set.GeneratedBy != appset.ByArgoCD || len(rep.Apps) != 1 || rep.Apps[0].App.Name != "payments" || rep.Apps[0].Fate != Cascade {
		t.Errorf("generated by Argo CD: %+v %+v; want its answer (payments no longer generated)", rep.Set, rep.Apps)
	}
	oracle.fail = "error generating params: boom"
	rep, _ = RunSet(context.Background(), argo, f.s, setDoc(t, "", "{{team}}", "{team: search}"), appset.Sources{}, oracle)
	if len(rep.Apps) != 2 || rep.Apps[0].Fate != NotDeleted || rep.Set.Failed == "" {
		t.Errorf("Argo CD's generation fails: %+v %+v; want nothing deleted", rep.Set, rep.Apps)
	}
	if s := got["search"]; s.RenamedTo != "search-v2" || s.Fate != Cascade || s.Deleted != 0 {
		t.Errorf("renamed: %+v; want search renamed, nothing tracked to delete", s)
	}
	if strings.Join(created, ",") != "payments-v2,search-v2" {
		t.Errorf("created %v", created)
	}
}

// TestParentPrunesASet: a parent app pruning an ApplicationSet takes the apps it owns with it (the
// garbage collector follows their ownerReferences), each through its own finalizer; a changed set
// in the parent's manifests is compared as check applicationset/NAME would.
func TestParentPrunesASet(t *testing.T) {
	f := newFamily(t)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("payments", "", "Namespace", "payments", "payments"))
	f.app("payments", "", []string{argocd.FinalizerResources}, "payments", argocd.Resource{Version: "v1", Kind: "Namespace", Name: "payments"})
	owned := []argocd.Whole{{Namespace: "argocd", Name: "payments", Sources: []argocd.Source{{RepoURL: "file:///repo", Path: "payments"}},
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "payments"}}}
	f.c.Add("argoproj.io", "ApplicationSet", "argocd", "teams", nil, f.track("root", "argoproj.io", "ApplicationSet", "argocd", "teams"))
	root := f.app("root", "", nil, "root", argocd.Resource{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet", Namespace: "argocd", Name: "teams"})
	argo := setArgoCD{countingArgoCD: f.argo, live: setDoc(t, "", "{{team}}", "{team: payments}"), owned: owned}
	run := func(manifests string) Report {
		t.Helper()
		ms, err := ReadManifests("-", strings.NewReader(manifests))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), argo, f.s, root, ms, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if c := byApp(run(""))["payments"]; c.Fate != Cascade || c.Deleted != 1 || len(c.Through) != 1 {
		t.Errorf("pruned set: %+v; want payments' cascade through the set", c)
	}
	changed, err := yaml.Marshal(setDoc(t, "", "{{team}}", "{team: search}"))
	if err != nil {
		t.Fatal(err)
	}
	if c := byApp(run(string(changed)))["payments"]; c.Fate != Cascade || !strings.Contains(c.DeletedBy, "no longer generates") {
		t.Errorf("changed set: %+v; want payments deleted by the set", c)
	}
}

type fakeOracle struct {
	apps []map[string]any
	fail string
}

func (o *fakeOracle) GenerateApplicationSet(context.Context, map[string]any) ([]map[string]any, error) {
	if o.fail != "" {
		return nil, &appset.GenerationFailed{Message: o.fail}
	}
	return o.apps, nil
}

func (o *fakeOracle) Manifests(context.Context, argocd.Application, string) ([]string, error) {
	return nil, nil
}

func (o *fakeOracle) Server() string { return "argocd.example.com" }
