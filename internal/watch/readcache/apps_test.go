package readcache

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/argocd"
)

// fullApplication is an Application as Argo CD writes it, with every status field the watch drops
// and every row field it reads.
const fullApplication = `{
  "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
  "metadata": {"namespace": "argocd", "name": "web", "uid": "u-1", "resourceVersion": "42",
    "labels": {"team": "a"}, "finalizers": ["resources-finalizer.argocd.argoproj.io"],
    "annotations": {"argocd.argoproj.io/refresh": "normal", "kubectl.kubernetes.io/last-applied-configuration": "{\"big\":true}"},
    "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "set", "uid": "s-1", "controller": true}],
    "managedFields": [{"manager": "argocd-controller", "operation": "Update"}]},
  "spec": {"project": "team-a", "source": {"repoURL": "https://example.com/r.git", "path": "web", "targetRevision": "main"},
    "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
    "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["PruneLast=true"]}},
  "operation": {"sync": {"revision": "main"}},
  "status": {
    "sync": {"status": "OutOfSync", "revision": "abc", "comparedTo": {"source": {"repoURL": "x"}}},
    "reconciledAt": "2026-12-01T10:00:00Z",
    "operationState": {"phase": "Running", "message": "long", "syncResult": {"resources": [{"name": "x"}]}},
    "sourceType": "Directory",
    "history": [{"id": 1}], "conditions": [{"type": "x", "message": "m"}], "summary": {"images": ["i"]},
    "health": {"status": "Healthy"}, "resourceHealthSource": "appTree",
    "resources": [
      {"version": "v1", "kind": "Namespace", "name": "precious", "status": "OutOfSync", "requiresPruning": true, "health": {"status": "Healthy"}},
      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "web", "status": "Synced", "hook": true, "requiresDeletionConfirmation": true},
      {"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": "argocd", "name": "child", "health": {"status": "Missing"}}
    ]}
}`

func decodeApp(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(fullApplication), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCompactApplicationReadsTheSame: what the informers keep of an Application parses to the same
// Application and the same whole-app view as the object the API server sent (less kubectl's
// last-applied copy, which nothing reads), and what it drops is gone.
func TestCompactApplicationReadsTheSame(t *testing.T) {
	want, err := argocd.ParseApplication([]byte(fullApplication))
	if err != nil {
		t.Fatal(err)
	}
	delete(want.Annotations, argocd.AnnotationLastAppliedConfiguration)
	wantWhole := argocd.ParseWhole(decodeApp(t).Object)
	delete(wantWhole.Annotations, argocd.AnnotationLastAppliedConfiguration)

	var apps Apps
	obj, err := apps.Compact(decodeApp(t))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := apps.Compact(obj)
	if again != obj {
		t.Fatalf("the transform changed what it had returned: %T", again)
	}
	a := apps.AsApp(obj)
	got, err := a.Application()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Application:\n got %+v\nwant %+v", got, want)
	}
	if whole := argocd.ParseWhole(a.Content()); !reflect.DeepEqual(whole, wantWhole) {
		t.Errorf("whole:\n got %+v\nwant %+v", whole, wantWhole)
	}
	if reparsed, _ := applicationOf(a.Content()); !reflect.DeepEqual(reparsed, want) {
		t.Errorf("content parsed again:\n got %+v\nwant %+v", reparsed, want)
	}
	status, _ := a.Object["status"].(map[string]any)
	for _, gone := range []string{"history", "conditions", "summary", "health", "resourceHealthSource", "resources"} {
		if _, ok := status[gone]; ok {
			t.Errorf("status.%s kept", gone)
		}
	}
	if op, _ := status["operationState"].(map[string]any); len(op) != 1 {
		t.Errorf("operationState kept %v; want its phase only", op)
	}
	if a.GetManagedFields() != nil || a.GetAnnotations()[argocd.AnnotationLastAppliedConfiguration] != "" {
		t.Errorf("managedFields or last-applied kept: %v", a.Object["metadata"])
	}
	// A parsed Application's rows are its own: audit changing them leaves the store alone.
	got.Resources[0].Name = "changed"
	if a.Resources()[0].Name != "precious" {
		t.Errorf("the store's row changed with the parsed app's")
	}
}

// TestCompactRowsShareStrings: the rows of many apps keep one copy of each kind, version,
// namespace and status: their Apps' table's.
func TestCompactRowsShareStrings(t *testing.T) {
	var apps Apps
	x, _ := apps.Compact(decodeApp(t))
	y, _ := apps.Compact(decodeApp(t))
	rx, ry := apps.AsApp(x).Resources()[1], apps.AsApp(y).Resources()[1]
	for _, pair := range [][2]string{{rx.Kind, ry.Kind}, {rx.Namespace, ry.Namespace}, {rx.Status, ry.Status}, {rx.Group, ry.Group}} {
		if pair[0] != pair[1] || stringData(pair[0]) != stringData(pair[1]) {
			t.Errorf("%q and %q are two copies", pair[0], pair[1])
		}
	}
}

func stringData(s string) *byte { return unsafe.StringData(s) }
