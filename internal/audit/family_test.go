package audit

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/deletion"
)

type setFake struct {
	*clustertest.ArgoCD
	policy string
	// params are argocd-cmd-params-cm (the controller's own policy).
	params map[string]string
}

func (s setFake) CmdParams(context.Context) (map[string]string, error) { return s.params, nil }

func (s setFake) GetApplicationSet(context.Context, string, string) (map[string]any, error) {
	return map[string]any{"metadata": map[string]any{"name": "teams", "namespace": "argocd"},
		"spec": map[string]any{"syncPolicy": map[string]any{"applicationsSync": s.policy}}}, nil
}

// TestFamilyRows: an app with the resources finalizer tracking a namespace gets a row when a parent
// with automated prune or an ApplicationSet that deletes apps manages it; not without a finalizer,
// not without a manager, not under create-update; a Prune=false on it guards it.
func TestFamilyRows(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, append([]clustertest.Kind{
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true}}, clustertest.DefaultKinds...)...)
	argo := clustertest.NewArgoCD("argocd", c, s)
	app := func(name string, finalizer bool, annotations map[string]string, owners []any) {
		ref := c.Add("argoproj.io", "Application", "argocd", name, nil, annotations)
		meta := map[string]any{"name": name, "namespace": "argocd", "ownerReferences": owners}
		if finalizer {
			meta["finalizers"] = []any{argocd.FinalizerResources}
		}
		c.Update(ref, func(o *cluster.Object) { o.Content = map[string]any{"metadata": meta} })
		c.Add("", "Namespace", "", name+"-ns", nil, map[string]string{argocd.AnnotationTrackingID: name + ":/Namespace:" + name + "-ns/" + name + "-ns"})
		argo.AddApp(argocd.Application{Namespace: "argocd", Name: name, Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: name + "-ns"},
			Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: name + "-ns"}}})
	}
	setOwned := []any{map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "teams", "uid": "u", "controller": true}}
	app("child", true, nil, nil)
	app("guarded", true, map[string]string{argocd.AnnotationSyncOptions: "Prune=false"}, nil)
	app("orphaning", false, nil, nil)
	app("lonely", true, nil, nil)
	app("generated", true, nil, setOwned)
	appRow := func(name string) argocd.Resource {
		return argocd.Resource{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Namespace: "argocd", Name: name}
	}
	c.Add("argoproj.io", "Application", "argocd", "root", nil, nil) // no finalizer, no manager
	argo.AddApp(argocd.Application{Namespace: "argocd", Name: "root", AutoPrune: true, Automated: true, Destination: argocd.Destination{Server: argocd.InClusterServer},
		Resources: []argocd.Resource{appRow("child"), appRow("guarded"), appRow("orphaning")}})

	// The parent out of the selection: found through the child's own tracking.
	child, err := argo.GetApplication(context.Background(), "argocd", "child")
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := c.Resolve(context.Background(), "argoproj.io", "Application", "", "argocd", "child")
	c.Update(ref, func(o *cluster.Object) {
		o.Annotations = map[string]string{argocd.AnnotationTrackingID: "root:argoproj.io/Application:argocd/child"}
	})
	if rows, _ := familyRows(context.Background(), setFake{ArgoCD: argo, policy: "sync"}, s, []argocd.Application{child}, Options{}); len(rows) != 1 ||
		!strings.Contains(rows[0].Cascade.ManagedBy, "argocd/root") {
		t.Errorf("audit of the child alone: %+v; want its row, managed by root", rows)
	}
	for policy, want := range map[string]map[string]bool{
		"sync":          {"child": false, "guarded": true, "generated": false},
		"create-update": {"child": false, "guarded": true},
		// The controller's applicationsetcontroller.policy sync overrides the set's create-update.
		"create-update+controller sync": {"child": false, "guarded": true, "generated": false},
	} {
		var params map[string]string
		if p, ok := strings.CutSuffix(policy, "+controller sync"); ok {
			policy, params = p, map[string]string{appset.ParamPolicy: "sync"}
		}
		apps, err := argo.ListApplications(context.Background(), cluster.Selector{})
		if err != nil {
			t.Fatal(err)
		}
		rows, warnings := familyRows(context.Background(), setFake{ArgoCD: argo, policy: policy, params: params}, s, apps, Options{})
		got := map[string]bool{}
		for _, r := range rows {
			got[r.App.Name] = r.Guarded
			if r.When != WhenItsAppIsDeleted || r.Cascade == nil || len(r.Cascade.HighRisk) != 1 || r.Cascade.ManagedBy == "" {
				t.Errorf("%s: %+v %+v", r.App.Name, r, r.Cascade)
			}
		}
		if len(got) != len(want) || len(warnings) > 0 {
			t.Errorf("%s: rows (app: guarded) %v, want %v; warnings %v", policy, got, want, warnings)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s guarded %v (row %v), want %v", policy, k, g, ok, v)
			}
		}
	}
}

// TestCascadeHighRisk: of an app's high-risk resources, its cascade deletes those that exist, have
// no owner and no cascade guard; CRDs and immortal namespaces never go. Unread, only what identity
// and the app's options show keeps one.
func TestCascadeHighRisk(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, append([]clustertest.Kind{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"}}, clustertest.DefaultKinds...)...)
	// tracked carries the app's tracking-id for the object and the given sync-options or helm policy.
	tracked := func(group, kind, name string, extra map[string]string) map[string]string {
		a := map[string]string{argocd.AnnotationTrackingID: "team:" + group + "/" + kind + ":team/" + name}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	c.Add("", "Namespace", "", "exposed", nil, tracked("", "Namespace", "exposed", nil))
	c.Add("", "Namespace", "", "kept", nil, tracked("", "Namespace", "kept", map[string]string{argocd.AnnotationSyncOptions: "Prune=false,Delete=false"}))
	c.Add("", "Namespace", "", "helm", nil, tracked("", "Namespace", "helm", map[string]string{argocd.AnnotationHelmResourcePolicy: "keep"}))
	c.Add("", "Namespace", "", "pruneonly", nil, tracked("", "Namespace", "pruneonly", map[string]string{argocd.AnnotationSyncOptions: "Prune=false"}))
	c.Add("", "Namespace", "", "kube-system", nil, tracked("", "Namespace", "kube-system", nil))
	owned := c.Add("", "Namespace", "", "owned", nil, tracked("", "Namespace", "owned", nil))
	c.Update(owned, func(o *cluster.Object) { o.Owners = []string{"Team/owned"} })
	// Detached since Argo CD last compared: its row is stale, the cascade does not reach it.
	c.Add("", "Namespace", "", "detached", nil, nil)
	c.Add("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com", nil, tracked("apiextensions.k8s.io", "CustomResourceDefinition", "widgets.example.com", nil))
	c.Add("rbac.authorization.k8s.io", "ClusterRole", "", "team-admin", nil, tracked("rbac.authorization.k8s.io", "ClusterRole", "team-admin", nil))
	c.Add("", "ConfigMap", "team", "settings", nil, tracked("", "ConfigMap", "settings", nil))
	nsRow := func(name string) argocd.Resource {
		return argocd.Resource{Version: "v1", Kind: "Namespace", Name: name}
	}
	app := argocd.Application{Namespace: "argocd", Name: "team", Destination: argocd.Destination{Server: argocd.InClusterServer},
		Resources: []argocd.Resource{nsRow("exposed"), nsRow("kept"), nsRow("helm"), nsRow("pruneonly"), nsRow("kube-system"), nsRow("owned"), nsRow("gone"),
			nsRow("detached"),
			{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "team-admin"},
			{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"},
			{Version: "v1", Kind: "Namespace", Name: "hooked", Hook: true}}}
	names := func(rs []argocd.Resource) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Kind+"/"+r.Name)
		}
		return strings.Join(out, " ")
	}
	// Prune=false alone does not keep an object from its app's cascade (gitops-engine deletes it).
	if got, want := names(CascadeHighRisk(context.Background(), c, s, app, "argocd")), "ClusterRole/team-admin Namespace/exposed Namespace/pruneonly"; got != want {
		t.Errorf("read: %s; want %s", got, want)
	}
	// A hook goes with its app's cascade.
	c.Add("", "Namespace", "", "hooked", nil, tracked("", "Namespace", "hooked", map[string]string{argocd.AnnotationHook: "PreSync"}))
	if got, want := names(CascadeHighRisk(context.Background(), c, s, app, "argocd")), "ClusterRole/team-admin Namespace/exposed Namespace/hooked Namespace/pruneonly"; got != want {
		t.Errorf("with a live hook: %s; want %s", got, want)
	}
	if got, want := names(CascadeHighRiskUnread(s, app, "argocd")), "Namespace/exposed Namespace/kept Namespace/helm Namespace/pruneonly Namespace/owned Namespace/gone Namespace/detached ClusterRole/team-admin Namespace/hooked"; got != want {
		t.Errorf("unread: %s; want %s", got, want)
	}
	app.SyncOptions = []string{"Delete=false"}
	if got := CascadeHighRisk(context.Background(), c, s, app, "argocd"); len(got) != 0 {
		t.Errorf("with the app's Delete=false: %s; want nothing", names(got))
	}
	// Unread, an object's own Delete= entry (which overrides the app's) cannot be seen: the app's
	// option does not count.
	if got := CascadeHighRiskUnread(s, app, "argocd"); len(got) != 9 {
		t.Errorf("unread, with the app's Delete=false: %s; want all nine", names(got))
	}
}

// TestCascadedTakesWhatADeletedNamespaceHolds: a Delete=false object guards itself against its app's
// cascade, except when the same cascade deletes its Namespace; then only a Namespace kept too keeps it.
func TestCascadedTakesWhatADeletedNamespaceHolds(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	for _, tt := range []struct {
		name      string
		nsOptions string
		want      []string
	}{
		{name: "the Namespace goes", want: []string{"ConfigMap/pay/ledger", "Namespace//pay"}},
		{name: "the Namespace is kept too", nsOptions: "Delete=false", want: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
			nsAnn := map[string]string{argocd.AnnotationTrackingID: "shop:/Namespace:pay/pay"}
			if tt.nsOptions != "" {
				nsAnn[argocd.AnnotationSyncOptions] = tt.nsOptions
			}
			c.Add("", "Namespace", "", "pay", nil, nsAnn)
			c.Add("", "ConfigMap", "pay", "ledger", nil, map[string]string{argocd.AnnotationTrackingID: "shop:/ConfigMap:pay/ledger",
				argocd.AnnotationSyncOptions: "Delete=false"})
			app := argocd.Application{Namespace: "argocd", Name: "shop", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "pay"},
				Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "pay"}, {Version: "v1", Kind: "ConfigMap", Namespace: "pay", Name: "ledger"}}}
			targets, _ := cascaded(context.Background(), deletion.NewScope(c, s, nil), app, "argocd")
			var got []string
			for _, tg := range targets {
				got = append(got, tg.res.Kind+"/"+tg.res.Namespace+"/"+tg.res.Name)
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("the cascade deletes %v, want %v", got, tt.want)
			}
		})
	}
}
