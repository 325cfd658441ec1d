package watch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// TestListersFollowEachAppsStatus: an app is re-evaluated for the watched objects its status lists
// now, not those it listed before; namespaced and unwatched kinds are not tracked.
func TestListersFollowEachAppsStatus(t *testing.T) {
	l := newListers()
	crd := argocd.Resource{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	l.track("argocd/a", []argocd.Resource{ns("team"), crd, cm("settings"), {Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"}})
	l.track("argocd/b", []argocd.Resource{ns("team")})
	team, widgets := objectKey("", "Namespace", "team"), objectKey("apiextensions.k8s.io", "CustomResourceDefinition", "widgets.example.com")
	if got := fmt.Sprint(l.appsOf(team), l.appsOf(widgets)); got != "[argocd/a argocd/b] [argocd/a]" {
		t.Errorf("listers %s", got)
	}
	l.track("argocd/a", []argocd.Resource{ns("other")})
	l.track("argocd/b", nil)
	if got := fmt.Sprint(l.appsOf(team), l.appsOf(widgets), l.appsOf(objectKey("", "Namespace", "other"))); got != "[] [] [argocd/a]" {
		t.Errorf("after the statuses changed: %s", got)
	}
	if len(l.byObj) != 1 || len(l.ofApp) != 1 {
		t.Errorf("stale entries kept: %v %v", l.byObj, l.ofApp)
	}
}

func TestGuardChanged(t *testing.T) {
	meta := func(labels, annotations map[string]string, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: labels, Annotations: annotations, ResourceVersion: rv}}
	}
	protected := map[string]string{"unprune.dev/protected": "true"}
	keep := map[string]string{argocd.AnnotationSyncOptions: "Delete=false"}
	for _, c := range []struct {
		name     string
		old, obj any
		want     bool
	}{
		{"a status update", meta(protected, keep, "1"), meta(protected, keep, "2"), false},
		{"the protection label removed", meta(protected, keep, "1"), meta(nil, keep, "2"), true},
		{"Delete=false added", meta(protected, nil, "1"), meta(protected, keep, "2"), true},
		{"not metadata", "x", meta(nil, nil, "2"), true},
	} {
		if got := guardChanged(c.old, c.obj); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestGuardsWithoutWatchRights: a ServiceAccount that may not watch a guard kind (RBAC from before
// the watch watched them) gets one line saying what that costs, and the informer stops instead of
// retrying; the other kind still runs.
func TestGuardsWithoutWatchRights(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	mc := metadatafake.NewSimpleMetadataClient(scheme)
	mc.PrependReactor("list", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New("RBAC: watch not granted"))
	})
	out := &strings.Builder{}
	mgr := &manager{cfg: Config{Resync: time.Minute, CacheTTL: 30 * time.Second}, log: &logger{out: out}, listers: newListers(),
		argo: readcache.New(nil, readcache.Options{Size: 10, TTL: time.Minute}), meta: mc, metrics: exposition.NewMetrics(nil)}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	// The logger's lock keeps its lines whole; holding it, the test reads them whole too.
	logged := func() string {
		mgr.log.mu.Lock()
		defer mgr.log.mu.Unlock()
		return out.String()
	}
	mgr.watchGuards(ctx, &wg)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logged(), "may not watch namespaces") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning after 10s; log:\n%s", logged())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if n := strings.Count(logged(), "may not watch"); n != 1 {
		t.Errorf("%d warnings; want 1 (namespaces only):\n%s", n, logged())
	}
	// Stopped on purpose: no health series (it is not failing, it is not run); the error counted.
	if n := expositiontest.Value(t, mgr.metrics, metricInfErrors, map[string]string{"informer": "namespaces"}); n != 1 {
		t.Errorf("informer errors of namespaces: %v, want 1", n)
	}
	if _, ok := expositiontest.Find(t, mgr.metrics, metricInfHealthy, map[string]string{"informer": "namespaces"}); ok {
		t.Errorf("a stopped informer still shows its health")
	}
}

// TestTrimGuardObject: a watched Namespace or CRD keeps its name, labels and annotations, not its
// managedFields nor kubectl's last-applied copy.
func TestTrimGuardObject(t *testing.T) {
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "precious", UID: "u", ResourceVersion: "7",
		Labels:        map[string]string{"unprune.dev/protected": "true"},
		Annotations:   map[string]string{argocd.AnnotationLastAppliedConfiguration: "{}", argocd.AnnotationSyncOptions: "Delete=false"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}, Finalizers: []string{"kubernetes"}}}
	out, err := trimGuardObject(in)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata)
	want := metav1.ObjectMeta{Name: "precious", UID: "u", ResourceVersion: "7", Labels: map[string]string{"unprune.dev/protected": "true"},
		Annotations: map[string]string{argocd.AnnotationSyncOptions: "Delete=false"}}
	if !reflect.DeepEqual(m.ObjectMeta, want) {
		t.Errorf("kept %+v; want %+v", m.ObjectMeta, want)
	}
	if _, ok := in.Annotations[argocd.AnnotationLastAppliedConfiguration]; !ok {
		t.Errorf("the object handed in was changed")
	}
}
