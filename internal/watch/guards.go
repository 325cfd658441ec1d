package watch

import (
	"context"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/unprune/unprune/internal/argocd"
)

// guardKind is a high-risk kind whose live metadata the watch watches.
type guardKind struct {
	gvr  schema.GroupVersionResource
	kind string
}

// guardKinds are the kinds whose risk the watch judges by what they hold (a Namespace's objects, a
// CRD's custom resources), the incident's kind above all: a guard added to or removed from one
// (unprune's protection label, Prune=false, Delete=false) re-evaluates at once every app whose
// status lists it. Other kinds' guards show within the live cache's TTL, at
// the app's next evaluation. Metadata only: their labels and annotations are all a guard is.
var guardKinds = []guardKind{
	{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, kind: "Namespace"},
	{gvr: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, kind: "CustomResourceDefinition"},
}

// objectKey names a cluster-scoped object as cluster.Ref.Key does.
func objectKey(group, kind, name string) string { return group + "/" + kind + "//" + name }

// listers remembers which apps list which watched objects, to re-evaluate them when one changes.
type listers struct {
	mu    sync.Mutex
	byObj map[string]map[string]bool
	ofApp map[string][]string
	kinds map[string]bool // GROUP/KIND of the watched kinds
}

func newListers() *listers {
	l := &listers{byObj: map[string]map[string]bool{}, ofApp: map[string][]string{}, kinds: map[string]bool{}}
	for _, k := range guardKinds {
		l.kinds[k.gvr.Group+"/"+k.kind] = true
	}
	return l
}

// track records the watched objects app lists now, replacing what it listed before.
func (l *listers) track(app string, resources []argocd.Resource) {
	var keys []string
	for _, r := range resources {
		if r.Namespace == "" && l.kinds[r.Group+"/"+r.Kind] {
			keys = append(keys, objectKey(r.Group, r.Kind, r.Name))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.ofApp[app] {
		delete(l.byObj[k], app)
		if len(l.byObj[k]) == 0 {
			delete(l.byObj, k)
		}
	}
	if len(keys) == 0 {
		delete(l.ofApp, app)
		return
	}
	l.ofApp[app] = keys
	for _, k := range keys {
		if l.byObj[k] == nil {
			l.byObj[k] = map[string]bool{}
		}
		l.byObj[k][app] = true
	}
}

// appsOf are the apps that list the object, in order.
func (l *listers) appsOf(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.byObj[key]))
}

// trimGuardObject keeps of a Namespace or CRD what a guard is and what names it: its name, labels
// and annotations. managedFields and kubectl's last-applied copy (a CRD's holds its whole schema)
// go, with owner references and the rest.
func trimGuardObject(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	annotations := m.Annotations
	if _, ok := annotations[argocd.AnnotationLastAppliedConfiguration]; ok {
		annotations = maps.Clone(annotations)
		delete(annotations, argocd.AnnotationLastAppliedConfiguration)
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: m.Labels, Annotations: annotations}}, nil
}

// guardChanged: what a guard is (labels, annotations) changed.
func guardChanged(old, obj any) bool {
	o, ok1 := old.(*metav1.PartialObjectMetadata)
	n, ok2 := obj.(*metav1.PartialObjectMetadata)
	return !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations)
}

// watchGuards runs a metadata informer per guard kind until ctx is done. An informer the
// ServiceAccount may not run (RBAC without watch on the kind) stops with one line in the log and
// its health series dropped — a fallback, not blindness: guards on that kind then show within the
// TTL.
func (mgr *manager) watchGuards(ctx context.Context, wg *sync.WaitGroup) {
	for _, k := range guardKinds {
		inf, h := mgr.newMetadataInformer(k.gvr, func(o *metav1.ListOptions) { o.AllowWatchBookmarks = true })
		_ = inf.SetTransform(trimGuardObject)
		stop, cancel := context.WithCancel(ctx)
		var once sync.Once
		reportErrors(inf, h, func(error) bool {
			once.Do(func() {
				mgr.metrics.InformerFailed(h.name)
				mgr.log.printf("warning: may not watch %s (grant watch, as deploy/base does): guards on them show within %v, at an app's next evaluation", k.gvr.Resource, mgr.cfg.CacheTTL)
				mgr.metrics.InformerStopped(h.name)
				cancel()
			})
			return true
		})
		changed := func(obj any) {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				if d, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
					m, ok = d.Obj.(*metav1.PartialObjectMetadata)
				}
			}
			if !ok {
				return
			}
			key := objectKey(k.gvr.Group, k.kind, m.Name)
			mgr.argo.Forget(key)
			for _, app := range mgr.listers.appsOf(key) {
				mgr.enqueue(cache.ExplicitKey(app))
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			// An object created after an app listed it: the cache may hold that it did not exist.
			AddFunc: changed,
			UpdateFunc: func(old, obj any) {
				if guardChanged(old, obj) {
					changed(obj)
				}
			},
			DeleteFunc: changed,
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			inf.RunWithContext(stop)
		}()
	}
}
