package check

import (
	"context"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/risk"
)

var familyKinds = append([]clustertest.Kind{
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true},
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets", Kind: "ApplicationSet", Namespaced: true},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"},
}, clustertest.DefaultKinds...)

// counting adds what a deletion takes with it to the fake: a fixed count per namespace.
type counting struct {
	*clustertest.Cluster
	inNamespace map[string]int64
}

func (c counting) CountInNamespace(_ context.Context, ns string) (int64, int, error) {
	return c.inNamespace[ns], 0, nil
}

func (c counting) CountCustomResources(context.Context, *cluster.Object) (int64, error) {
	return 7, nil
}

// countingArgoCD hands out the counting cluster as every destination.
type countingArgoCD struct {
	*clustertest.ArgoCD
	objects counting
}

func (a countingArgoCD) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return a.objects, nil
}

type fixture struct {
	t     *testing.T
	c     *clustertest.Cluster
	argo  countingArgoCD
	s     cluster.Settings
	track func(instance, group, kind, ns, name string) map[string]string
}

func newFamily(t *testing.T) *fixture {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := cluster.Settings{Settings: argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v), FilterKnown: true}
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, familyKinds...)
	f := &fixture{t: t, c: c, s: s}
	f.argo = countingArgoCD{ArgoCD: clustertest.NewArgoCD("argocd", c, s.Settings), objects: counting{Cluster: c, inNamespace: map[string]int64{"payments": 40}}}
	f.track = func(instance, group, kind, ns, name string) map[string]string {
		return map[string]string{argocd.AnnotationTrackingID: instance + ":" + group + "/" + kind + ":" + ns + "/" + name}
	}
	return f
}

// app adds an Application: its live object (tracked by parent, with finalizers and a source) and
// its model, tracking rows.
func (f *fixture) app(name, parent string, finalizers []string, path string, rows ...argocd.Resource) argocd.Application {
	var ann map[string]string
	if parent != "" {
		ann = f.track(parent, "argoproj.io", "Application", "argocd", name)
	}
	ref := f.c.Add("argoproj.io", "Application", "argocd", name, nil, ann)
	fins := make([]any, len(finalizers))
	for i, x := range finalizers {
		fins[i] = x
	}
	f.c.Update(ref, func(o *cluster.Object) {
		o.Content = map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": name, "finalizers": fins},
			"spec": map[string]any{"source": map[string]any{"repoURL": "file:///repo", "path": path},
				"destination": map[string]any{"server": argocd.InClusterServer, "namespace": name}}}
	})
	app := argocd.Application{Namespace: "argocd", Name: name, Project: "default", Automated: true, AutoPrune: true,
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: name}, Resources: rows}
	f.argo.AddApp(app)
	return app
}

func appRow(name string) argocd.Resource {
	return argocd.Resource{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Namespace: "argocd", Name: name}
}

func (f *fixture) check(parent argocd.Application, manifests string) Report {
	ms, err := ReadManifests("-", strings.NewReader(manifests))
	if err != nil {
		f.t.Fatal(err)
	}
	rep, err := Run(context.Background(), f.argo, f.s, parent, ms, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func byApp(rep Report) map[string]AppChange {
	out := map[string]AppChange{}
	for _, c := range rep.Apps {
		out[c.App.Name] = c
	}
	return out
}

// TestFamilyCascade: a parent pruning a child with the resources finalizer deletes what the child
// tracks — except a CRD and guarded objects — and, recursively, the child's own children; a cycle
// stops.
func TestFamilyCascade(t *testing.T) {
	f := newFamily(t)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("child", "", "Namespace", "payments", "payments"))
	kept := f.track("child", "", "ConfigMap", "payments", "kept")
	kept[argocd.AnnotationSyncOptions] = "Prune=false,Delete=false"
	f.c.Add("", "ConfigMap", "payments", "kept", nil, kept)
	helm := f.track("child", "", "ConfigMap", "payments", "helm")
	helm[argocd.AnnotationHelmResourcePolicy] = "keep"
	f.c.Add("", "ConfigMap", "payments", "helm", nil, helm)
	f.c.Add("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com", nil,
		f.track("child", "apiextensions.k8s.io", "CustomResourceDefinition", "payments", "widgets.example.com"))
	// A row the child lists but whose object carries another app's tracking: not deleted.
	f.c.Add("", "ConfigMap", "payments", "foreign", nil, f.track("other", "", "ConfigMap", "payments", "foreign"))
	f.app("grandchild", "child", []string{argocd.FinalizerResourcesBackground}, "g", appRow("root"))
	f.app("child", "root", []string{argocd.FinalizerResourcesForeground}, "c",
		argocd.Resource{Version: "v1", Kind: "Namespace", Name: "payments"},
		argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "payments", Name: "kept"},
		argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "payments", Name: "helm"},
		argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "payments", Name: "foreign"},
		argocd.Resource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
		appRow("grandchild"))
	// root is itself tracked by grandchild: a cycle.
	root := f.app("root", "grandchild", nil, "root", appRow("child"))

	rep := f.check(root, "")
	apps := byApp(rep)
	child, ok := apps["child"]
	if !ok || child.Fate != Cascade || child.Finalizer != argocd.FinalizerResourcesForeground {
		t.Fatalf("child: %+v; want a cascade through the foreground finalizer", child)
	}
	got := map[string]string{}
	for _, it := range child.Resources {
		got[it.Resource.Name] = string(it.Reason)
		if it.Resource.Name == "payments" && (it.Risk != risk.High || it.Contents == nil || it.Contents.Objects != 40) {
			t.Errorf("payments: risk %s contents %+v; want high, 40 objects", it.Risk, it.Contents)
		}
	}
	// kept and helm guard themselves against the cascade, but they live in payments, which the same
	// cascade deletes: the namespace controller deletes them with it.
	want := map[string]string{"payments": "DeletedWithApp", "kept": "DeletedWithApp", "helm": "DeletedWithApp", "widgets.example.com": "KeptByGuard", "grandchild": "DeletedWithApp"}
	if len(got) != len(want) {
		t.Errorf("child's resources %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if child.Deleted != 4 || child.High != 2 {
		t.Errorf("child deletes %d, %d high; want 4 (namespace, the two ConfigMaps in it, grandchild Application), 2 high", child.Deleted, child.High)
	}
	for _, it := range child.Resources {
		if (it.Resource.Name == "kept" || it.Resource.Name == "helm") && (it.Guarded || !strings.Contains(strings.Join(it.Notes, "\n"), "deleted with Namespace payments")) {
			t.Errorf("%s: guarded %t, notes %q; want deleted with Namespace payments", it.Resource.Name, it.Guarded, it.Notes)
		}
	}
	grand := apps["grandchild"]
	if grand.Fate != Cascade || len(grand.Through) != 1 || grand.Through[0] != "argocd/child" {
		t.Errorf("grandchild: %+v; want a cascade reached through argocd/child", grand)
	}
	// grandchild tracks root: the cycle is cut, not followed twice.
	if n := len(rep.Apps); n != 3 || rep.Apps[2].Fate != NotEvaluated {
		t.Errorf("%d app changes, last %+v; want child, grandchild and the cut cycle", n, rep.Apps[len(rep.Apps)-1])
	}
}

// TestFamilyOrphanedAndRenamed: without a finalizer nothing is deleted; an added app with the same
// source and destination makes the removal a rename, with the way to do it without a window.
func TestFamilyOrphanedAndRenamed(t *testing.T) {
	f := newFamily(t)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("child", "", "Namespace", "payments", "payments"))
	f.app("child", "root", nil, "c", argocd.Resource{Version: "v1", Kind: "Namespace", Name: "payments"})
	f.app("cascading", "root", []string{argocd.FinalizerResources}, "d")
	root := f.app("root", "", nil, "root", appRow("child"), appRow("cascading"))
	rep := f.check(root, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cascading-v2, namespace: argocd}
spec:
  source: {repoURL: "file:///repo", path: d}
  destination: {server: "https://kubernetes.default.svc", namespace: cascading}
`)
	apps := byApp(rep)
	child := apps["child"]
	if child.Fate != Orphaned || child.Deleted != 0 || child.High != 0 || len(child.Resources) != 1 || child.Resources[0].Kind != Orphan {
		t.Errorf("child without finalizer: %+v; want orphaned, its namespace left tracked", child)
	}
	if child.RenamedTo != "" {
		t.Errorf("child renamed to %q; nothing deploys its source any more", child.RenamedTo)
	}
	renamed := apps["cascading"]
	if renamed.RenamedTo != "cascading-v2" || renamed.Fate != Cascade || !strings.Contains(renamed.Fix, "only drops resources-finalizer.argocd.argoproj.io from argocd/cascading's manifest") ||
		!strings.Contains(renamed.Fix, "renders the same objects") {
		t.Errorf("renamed app: %+v; want a cascading rename to cascading-v2, its finalizer dropped first", renamed)
	}
}

// TestFamilyGuardedChild: a child Application the parent may not prune is not deleted at all.
func TestFamilyGuardedChild(t *testing.T) {
	f := newFamily(t)
	f.app("child", "root", []string{argocd.FinalizerResources}, "c")
	ref, _ := f.c.Resolve(context.Background(), "argoproj.io", "Application", "", "argocd", "child")
	f.c.Update(ref, func(o *cluster.Object) { o.Annotations[argocd.AnnotationSyncOptions] = "Prune=false" })
	root := f.app("root", "", nil, "root", appRow("child"))
	if c := byApp(f.check(root, ""))["child"]; c.Fate != NotDeleted {
		t.Errorf("guarded child: %+v; want not deleted", c)
	}
}

// TestFamilyConfirmAndAppOptions: Delete=confirm (or Prune=confirm) on one resource makes the
// whole cascade wait for approval; the child's own syncOptions Delete=false keep everything else.
func TestFamilyConfirmAndAppOptions(t *testing.T) {
	f := newFamily(t)
	confirm := f.track("child", "", "ConfigMap", "payments", "confirm")
	confirm[argocd.AnnotationSyncOptions] = "Delete=confirm"
	f.c.Add("", "ConfigMap", "payments", "confirm", nil, confirm)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("child", "", "Namespace", "payments", "payments"))
	rows := []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "payments"}, {Version: "v1", Kind: "ConfigMap", Namespace: "payments", Name: "confirm"}}
	f.app("child", "root", []string{argocd.FinalizerResources}, "c", rows...)
	root := f.app("root", "", nil, "root", appRow("child"))
	c := byApp(f.check(root, ""))["child"]
	if !c.Waits || c.High != 0 || c.Deleted != 2 {
		t.Errorf("with Delete=confirm: %+v; want the cascade waiting (both deleted once approved), nothing high counted", c)
	}

	f = newFamily(t)
	f.c.Add("", "Namespace", "", "payments", nil, f.track("child", "", "Namespace", "payments", "payments"))
	child := f.app("child", "root", []string{argocd.FinalizerResources}, "c", rows[0])
	child.SyncOptions = []string{"Delete=false"}
	f.argo.AddApp(child)
	root = f.app("root", "", nil, "root", appRow("child"))
	c = byApp(f.check(root, ""))["child"]
	if c.Deleted != 0 || len(c.Resources) != 1 || c.Resources[0].Reason != KeptByGuard {
		t.Errorf("with the app's Delete=false: %+v; want the namespace kept", c)
	}
}
