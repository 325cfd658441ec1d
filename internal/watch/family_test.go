package watch

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/readcache"
)

func parentApp(autoPrune bool, reconciledAt string, children ...string) *unstructured.Unstructured {
	var resources []any
	for _, c := range children {
		resources = append(resources, map[string]any{"group": "argoproj.io", "kind": "Application", "namespace": "argocd", "name": c})
	}
	resources = append(resources, map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "team", "name": "settings"})
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "argocd", "name": "root"},
		"spec":     map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"prune": autoPrune}}},
		"status":   map[string]any{"reconciledAt": reconciledAt, "resources": resources},
	}}
}

func drain(q workqueue.TypedRateLimitingInterface[string]) []string {
	var out []string
	for q.Len() > 0 {
		k, _ := q.Get()
		q.Done(k)
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestParentChangesReEvaluateChildren: a child's whole-app row depends on its parent's automated
// prune and on the parent tracking it; a change of either re-evaluates the children, a status
// update that changes neither does not.
func TestParentChangesReEvaluateChildren(t *testing.T) {
	mgr := &manager{ns: appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd"}}, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	defer mgr.queue.ShutDown()
	steps := []struct {
		name     string
		old, obj *unstructured.Unstructured
		want     string
	}{
		{"the parent is seen", nil, parentApp(true, "t1", "a", "b"), "[argocd/a argocd/b]"},
		{"a status update", parentApp(true, "t1", "a", "b"), parentApp(true, "t2", "a", "b"), "[]"},
		{"automated prune switched off", parentApp(true, "t2", "a", "b"), parentApp(false, "t3", "a", "b"), "[argocd/a argocd/b]"},
		{"a child dropped", parentApp(false, "t3", "a", "b"), parentApp(false, "t4", "a"), "[argocd/a argocd/b]"},
		{"not a parent", parentApp(false, "t4"), parentApp(false, "t5"), "[]"},
	}
	for _, s := range steps {
		var old any
		if s.old != nil {
			old = s.old
		}
		mgr.enqueueChildren(old, s.obj)
		if got := drain(mgr.queue); fmt.Sprint(got) != s.want {
			t.Errorf("%s: queued %v; want %s", s.name, got, s.want)
		}
	}
}

// TestWholeAppRowsReadTheInformers: the watch judges an app's whole-app row on the Application its
// informers hold, not on a cached or fetched copy: the live store here still lacks the finalizer the
// informer has seen added, and the row is there.
func TestWholeAppRowsReadTheInformers(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, append([]clustertest.Kind{
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true}}, clustertest.DefaultKinds...)...)
	argo := clustertest.NewArgoCD("argocd", c, s)
	tracking := map[string]string{argocd.AnnotationTrackingID: "root:argoproj.io/Application:argocd/child"}
	c.Add("argoproj.io", "Application", "argocd", "child", nil, tracking)
	c.Add("", "Namespace", "", "team", nil, map[string]string{argocd.AnnotationTrackingID: "child:/Namespace:team/team"})
	child := argocd.Application{Namespace: "argocd", Name: "child", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "team"}}}
	argo.AddApp(child)
	argo.AddApp(argocd.Application{Namespace: "argocd", Name: "root", AutoPrune: true, Automated: true, Destination: argocd.Destination{Server: argocd.InClusterServer},
		Resources: []argocd.Resource{{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Namespace: "argocd", Name: "child"}}})

	informed := 0
	caching := readcache.New(argo, readcache.Options{Size: 100, TTL: time.Minute, Informed: func(namespace, name string) (*cluster.Object, bool) {
		if name != "child" {
			return nil, false
		}
		informed++
		ref := cluster.Ref{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespace: namespace, Name: name, Namespaced: true}
		return kube.FromContent(ref, map[string]any{"metadata": map[string]any{"namespace": namespace, "name": name,
			"finalizers": []any{argocd.FinalizerResources}, "annotations": map[string]any{argocd.AnnotationTrackingID: tracking[argocd.AnnotationTrackingID]}}}), true
	}})
	rep, err := audit.Run(context.Background(), caching, s, []argocd.Application{child}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := exposition.Summarize(child, rep.Rows, nil)
	if sum.Unguarded["app_deleted"]["high"] != 1 || informed == 0 {
		t.Fatalf("rows %+v (informer read %d times); want the child's whole-app row, unguarded, judged on the informer's copy", rep.Rows, informed)
	}
	objects, err := caching.Destination(context.Background(), child)
	if err != nil {
		t.Fatal(err)
	}
	if got := audit.CascadeHighRisk(context.Background(), objects, s, child, "argocd"); len(got) != 1 || got[0].Name != "team" {
		t.Errorf("cascade %v; want Namespace/team", got)
	}
}
