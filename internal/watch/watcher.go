package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

var (
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrAppProject = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

const indexProject = "project"

// watcher is one running watch.
type watcher struct {
	cfg     Config
	log     *logger
	metrics *Metrics
	events  *events
	argo    *cachingArgoCD
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	meta    metadata.Interface
	// listers are the apps listing each object whose guards the watch watches.
	listers *listers
	queue   workqueue.TypedRateLimitingInterface[string]
	ns      appNamespaces

	apps             []cache.SharedIndexInformer
	settingsInformer cache.SharedIndexInformer
	factories        []dynamicinformer.DynamicSharedInformerFactory

	mu       sync.RWMutex
	settings *argocd.Settings
	synced   bool
}

// newWatcher builds the clients (every request counted) and the informers.
func newWatcher(ctx context.Context, cfg Config, m *Metrics, log *logger) (*watcher, error) {
	count := func(rt httpRoundTripper) httpRoundTripper { return &countingTransport{next: rt, metrics: m} }
	opts := kube.Options{QPS: cfg.REST.QPS, Burst: cfg.REST.Burst, WrapTransport: count}
	clients, err := kube.NewClients(cfg.REST, clusterInfo(), nil, opts)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(clients.Config)
	if err != nil {
		return nil, err
	}
	management := kube.NewObjects(clients, kube.FieldManager)
	argo := &kube.ArgoCD{Objects: management, Ns: cfg.ArgoCDNamespace}
	if len(cfg.ClusterContexts) > 0 || cfg.ArgoCDCredentials {
		argo.Destinations = &kube.Destinations{Management: management, Namespace: cfg.ArgoCDNamespace, Contexts: cfg.ClusterContexts,
			ArgoCDCredentials: cfg.ArgoCDCredentials, FromContext: cfg.FromContext, Options: opts, FieldManager: kube.FieldManager}
	}
	w := &watcher{
		cfg: cfg, log: log, metrics: m, kube: kc, dyn: clients.Dynamic, meta: clients.Metadata, listers: newListers(),
		argo:  newCachingArgoCD(argo, cfg.CacheSize, cfg.CacheTTL, cfg.Now),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "applications"}),
	}
	if w.cfg.Version == nil {
		v, note := argo.DetectVersion(ctx)
		if note != "" {
			log.printf("warning: %s", note)
		}
		w.cfg.Version = v
	}
	if err := w.resolveNamespaces(ctx); err != nil {
		return nil, err
	}
	w.informers()
	w.argo.informed = w.informedApplication
	return w, nil
}

// resolveNamespaces reads application.namespaces unless the flag said.
func (w *watcher) resolveNamespaces(ctx context.Context) error {
	w.ns = appNamespaces{argocd: w.cfg.ArgoCDNamespace, patterns: w.cfg.AppNamespaces}
	if w.cfg.AppNamespaces != nil {
		return nil
	}
	cm, err := w.kube.CoreV1().ConfigMaps(w.cfg.ArgoCDNamespace).Get(ctx, ParamsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s/%s (%s): %w; or pass %v", w.cfg.ArgoCDNamespace, ParamsConfigMap, ParamAppNamespaces, err, option.AppNamespaces)
	}
	w.ns.patterns = splitPatterns(cm.Data[ParamAppNamespaces])
	return nil
}

// informers sets up the shared informers: Applications in each watched namespace, argocd-cm and the
// AppProjects. The reflectors ask for watch bookmarks (client-go does by default; the tweak says so
// explicitly) so that a reconnect resumes from a recent resourceVersion instead of listing again.
func (w *watcher) informers() {
	bookmarks := func(o *metav1.ListOptions) { o.AllowWatchBookmarks = true }
	for _, ns := range w.ns.informerNamespaces() {
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.dyn, w.cfg.Resync, ns, bookmarks)
		inf := f.ForResource(kube.GVRApplication).Informer()
		_ = inf.SetTransform(trimApplication)
		_ = inf.AddIndexers(cache.Indexers{indexProject: projectIndex})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				w.enqueue(obj)
				w.enqueueChildren(nil, obj)
			},
			UpdateFunc: func(old, obj any) {
				w.enqueue(obj)
				w.enqueueChildren(old, obj)
			},
			DeleteFunc: w.enqueue,
		})
		w.apps = append(w.apps, inf)
		w.factories = append(w.factories, f)
	}
	cmFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.dyn, w.cfg.Resync, w.cfg.ArgoCDNamespace, func(o *metav1.ListOptions) {
		bookmarks(o)
		o.FieldSelector = "metadata.name=" + argocd.ConfigMapName
	})
	w.settingsInformer = cmFactory.ForResource(gvrConfigMap).Informer()
	_, _ = w.settingsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.settingsChanged,
		// A resync delivers the same object again: the apps' own resync re-evaluates them.
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			w.settingsChanged(obj)
		},
	})
	projFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.dyn, w.cfg.Resync, w.cfg.ArgoCDNamespace, bookmarks)
	_, _ = projFactory.ForResource(gvrAppProject).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { w.projectChanged(obj) },
		DeleteFunc: w.projectChanged,
	})
	w.factories = append(w.factories, cmFactory, projFactory)
}

// trimApplication drops what the watch never reads before the informer stores an Application:
// managedFields, the sync history and the last sync's per-resource results weigh more than the rest
// at 2,000 apps.
func trimApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	unstructured.RemoveNestedField(u.Object, "status", "history")
	unstructured.RemoveNestedField(u.Object, "status", "operationState", "syncResult")
	unstructured.RemoveNestedField(u.Object, "status", "resourceHealthSource")
	return u, nil
}

func projectIndex(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	p, _, _ := unstructured.NestedString(u.Object, "spec", "project")
	return []string{p}, nil
}

func (w *watcher) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	if w.ns.enabled(ns) {
		w.queue.Add(key)
	}
}

// informedApplication is an Application as the informers hold it, as a live object.
func (w *watcher) informedApplication(namespace, name string) (*cluster.Object, bool) {
	u, ok := w.get(namespace + "/" + name)
	if !ok {
		return nil, false
	}
	ref := cluster.Ref{Group: kube.GVRApplication.Group, Version: kube.GVRApplication.Version, Resource: kube.GVRApplication.Resource,
		Kind: "Application", Namespace: namespace, Name: name, Namespaced: true}
	return kube.FromContent(ref, u.Object), true
}

// applicationOf parses an Application as the informers hold it.
func applicationOf(content map[string]any) (argocd.Application, error) {
	data, err := json.Marshal(content)
	if err != nil {
		return argocd.Application{}, err
	}
	return argocd.ParseApplication(data)
}

// settingsChanged re-reads the tracking settings from argocd-cm and re-evaluates every app: the
// settings decide every row. It is the one whole-list re-evaluation, and settings change rarely.
func (w *watcher) settingsChanged(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	s := argocd.NewSettings(data, w.cfg.Version)
	w.mu.Lock()
	w.settings = &s
	w.mu.Unlock()
	w.log.printf("Argo CD settings in %s/%s: %s", w.cfg.ArgoCDNamespace, argocd.ConfigMapName, s.String())
	for _, inf := range w.apps {
		for _, key := range inf.GetStore().ListKeys() {
			w.enqueue(cache.ExplicitKey(key))
		}
	}
}

// projectChanged re-evaluates the apps of a changed project, found through the informer's index.
func (w *watcher) projectChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	_, name, _ := cache.SplitMetaNamespaceKey(key)
	for _, inf := range w.apps {
		keys, _ := inf.GetIndexer().IndexKeys(indexProject, name)
		for _, k := range keys {
			w.enqueue(cache.ExplicitKey(k))
		}
	}
}

// defaultSettings stands in for an argocd-cm that does not exist once the informers synced: Argo CD
// then runs with its defaults too.
func (w *watcher) defaultSettings() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.settings == nil {
		s := argocd.NewSettings(nil, w.cfg.Version)
		w.settings = &s
		w.log.printf("warning: no ConfigMap %s/%s: using Argo CD's defaults (%s)", w.cfg.ArgoCDNamespace, argocd.ConfigMapName, s.String())
	}
}

func (w *watcher) currentSettings() *argocd.Settings {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.settings
}

// get finds an app in the informers' stores.
func (w *watcher) get(key string) (*unstructured.Unstructured, bool) {
	for _, inf := range w.apps {
		obj, exists, err := inf.GetStore().GetByKey(key)
		if err == nil && exists {
			u, ok := obj.(*unstructured.Unstructured)
			return u, ok
		}
	}
	return nil, false
}

// evaluate re-evaluates one app: audit's rows through the live cache, its series and its Events.
func (w *watcher) evaluate(ctx context.Context, key string) error {
	s := w.currentSettings()
	if s == nil {
		return fmt.Errorf("ConfigMap %s/%s not read yet", w.cfg.ArgoCDNamespace, argocd.ConfigMapName)
	}
	u, ok := w.get(key)
	if !ok {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		w.listers.track(key, nil)
		w.metrics.Delete(key)
		w.events.forget(key, ns, name)
		return nil
	}
	app, err := applicationOf(u.Object)
	if err != nil {
		return err
	}
	// The guards' informers watch the cluster Argo CD runs in: only its apps list their objects.
	var listed []argocd.Resource
	if app.Destination.InCluster() {
		listed = app.Resources
	}
	w.listers.track(key, listed)
	start := w.now()
	rep, err := audit.Run(ctx, w.argo, *s, []argocd.Application{app}, audit.Options{})
	if err != nil {
		return err
	}
	sum := Summarize(app, rep.Rows, w.cascade(ctx, *s, app, u.GetFinalizers(), rep.Rows))
	w.metrics.Set(key, sum, w.now().Sub(start))
	now, check := w.events.observe(key, sum)
	return w.events.send(ctx, now, check)
}

// cascade is what deleting the app deletes with it, of high risk: nothing without a resources
// finalizer. audit's whole-app row has judged it already when a parent or ApplicationSet may delete
// the app; otherwise it is judged here, without reading the objects when their cluster cannot be
// reached.
func (w *watcher) cascade(ctx context.Context, s argocd.Settings, app argocd.Application, finalizers []string, rows []audit.Row) []argocd.Resource {
	if argocd.CascadeFinalizer(finalizers) == "" {
		return nil
	}
	for _, r := range rows {
		if r.Cascade != nil && r.App.Ref() == app.Ref() {
			return r.Cascade.HighRisk
		}
	}
	objects, err := w.argo.Destination(ctx, app)
	if err != nil {
		return audit.CascadeHighRiskUnread(s, app, w.cfg.ArgoCDNamespace)
	}
	return audit.CascadeHighRisk(ctx, objects, s, app, w.cfg.ArgoCDNamespace)
}

func (w *watcher) now() time.Time {
	if w.cfg.Now != nil {
		return w.cfg.Now()
	}
	return time.Now()
}

// listEvents reads the messages of an object's Events with a reason.
func (w *watcher) listEvents(ctx context.Context, namespace string, uid types.UID, reason string) ([]string, error) {
	list, err := w.kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(uid) + ",reason=" + reason,
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, e.Message)
	}
	return out, nil
}
