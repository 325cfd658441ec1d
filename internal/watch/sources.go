package watch

// The sources and their handlers, as in controller-runtime: the informers the manager runs, and
// what each change queues for the reconciler (an app, its children, the apps of a project, every app
// when argocd-cm changes).

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/watch/readcache"
)

var (
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrAppProject = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

const indexProject = "project"

// informers sets up the shared informers: Applications in each watched namespace, argocd-cm and the
// AppProjects. The reflectors ask for watch bookmarks (client-go does by default; the tweak says so
// explicitly) so that a reconnect resumes from a recent resourceVersion instead of listing again.
// None resyncs: each app's re-evaluation is scheduled after its last one, jittered
// (reconciler.nextResync), so that 2,000 apps do not all re-evaluate in the same second every period.
func (mgr *manager) informers() {
	bookmarks := func(o *metav1.ListOptions) { o.AllowWatchBookmarks = true }
	for _, ns := range mgr.ns.informerNamespaces() {
		inf := mgr.newDynamicInformer(kube.GVRApplication, ns, bookmarks, cache.Indexers{indexProject: mgr.projectIndex})
		_ = inf.SetTransform(mgr.informed.Compact)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				mgr.enqueue(obj)
				mgr.enqueueChildren(nil, obj)
			},
			UpdateFunc: func(old, obj any) {
				mgr.enqueue(obj)
				mgr.enqueueChildren(old, obj)
			},
			DeleteFunc: mgr.enqueue,
		})
		mgr.apps = append(mgr.apps, inf)
	}
	mgr.settingsInformer = mgr.newDynamicInformer(gvrConfigMap, mgr.cfg.ArgoCDNamespace, func(o *metav1.ListOptions) {
		bookmarks(o)
		o.FieldSelector = "metadata.name=" + argocd.ConfigMapName
	}, nil)
	_ = mgr.settingsInformer.SetTransform(trimSettings)
	_, _ = mgr.settingsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: mgr.settingsChanged,
		// A relist delivers the same object again: only a new resourceVersion is a change.
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			mgr.settingsChanged(obj)
		},
	})
	mgr.watchClusterSecrets()
	mgr.projects = mgr.newDynamicInformer(gvrAppProject, mgr.cfg.ArgoCDNamespace, bookmarks, nil)
	_ = mgr.projects.SetTransform(trimProject)
	_, _ = mgr.projects.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			mgr.projectChanged(obj)
		},
		DeleteFunc: mgr.projectChanged,
	})
}

// informersToRun are every informer start runs and waits for; the cluster Secrets' too, when the
// watch reaches clusters with their credentials (else it would judge those apps' rows unknown at
// first, and announce them twice).
func (mgr *manager) informersToRun() []cache.SharedIndexInformer {
	out := append(append([]cache.SharedIndexInformer{}, mgr.apps...), mgr.settingsInformer, mgr.projects)
	if mgr.clusterSecrets != nil {
		out = append(out, mgr.clusterSecrets)
	}
	return out
}

// trimSettings keeps of argocd-cm what the watch reads: its data.
func trimSettings(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	u.SetAnnotations(nil)
	return u, nil
}

// trimProject keeps of an AppProject its name, resourceVersion and deletion budget: a project that changes only
// re-evaluates its apps (projectChanged), and audit reads nothing of it through the informer.
func trimProject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta := map[string]any{"namespace": u.GetNamespace(), "name": u.GetName(), "uid": string(u.GetUID()), "resourceVersion": u.GetResourceVersion()}
	if v, ok := u.GetAnnotations()[budget.AnnotationBudget]; ok {
		// The project's deletion budget, which the admission webhook reads for its apps.
		meta["annotations"] = map[string]any{budget.AnnotationBudget: v}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta}}, nil
}

func (mgr *manager) projectIndex(obj any) ([]string, error) {
	a := mgr.informed.AsApp(obj)
	if a == nil {
		return nil, nil
	}
	p, _, _ := unstructured.NestedString(a.Object, "spec", "project")
	return []string{p}, nil
}

func (mgr *manager) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	if mgr.ns.enabled(ns) {
		mgr.queue.Add(key)
	}
}

// informedApplication is an Application as the informers hold it, as a live object.
func (mgr *manager) informedApplication(namespace, name string) (*cluster.Object, bool) {
	a, ok := mgr.get(namespace + "/" + name)
	if !ok {
		return nil, false
	}
	ref := cluster.Ref{Group: kube.GVRApplication.Group, Version: kube.GVRApplication.Version, Resource: kube.GVRApplication.Resource,
		Kind: "Application", Namespace: namespace, Name: name, Namespaced: true}
	return kube.FromContent(ref, a.Content()), true
}

// settingsChanged re-reads the tracking settings from argocd-cm and re-evaluates every app: the
// settings decide every row. It is the one whole-list re-evaluation, and settings change rarely.
func (mgr *manager) settingsChanged(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	s := argocd.NewSettings(data, mgr.cfg.Version)
	filter, warnings, _ := argocd.ReadFilter(data, mgr.cfg.Version)
	mgr.settings.set(s, filter)
	for _, warn := range warnings {
		mgr.log.printf("warning: %s", warn)
	}
	mgr.log.printf("Argo CD settings in %s/%s: %s", mgr.cfg.ArgoCDNamespace, argocd.ConfigMapName, s.String())
	if line := s.RulesLine(); line != "" {
		mgr.log.printf("%s", line)
	}
	for _, inf := range mgr.apps {
		for _, key := range inf.GetStore().ListKeys() {
			mgr.enqueue(cache.ExplicitKey(key))
		}
	}
}

// projectChanged re-evaluates the apps of a changed project, found through the informer's index.
func (mgr *manager) projectChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	_, name, _ := cache.SplitMetaNamespaceKey(key)
	for _, inf := range mgr.apps {
		keys, _ := inf.GetIndexer().IndexKeys(indexProject, name)
		for _, k := range keys {
			mgr.enqueue(cache.ExplicitKey(k))
		}
	}
}

// defaultSettings stands in for an argocd-cm that does not exist once the informers synced: Argo CD
// then runs with its defaults too.
func (mgr *manager) defaultSettings() {
	s := argocd.NewSettings(nil, mgr.cfg.Version)
	if mgr.settings.setIfNone(s) {
		mgr.log.printf("warning: no ConfigMap %s/%s: using Argo CD's defaults (%s)", mgr.cfg.ArgoCDNamespace, argocd.ConfigMapName, s.String())
	}
}

// get finds an app in the informers' stores.
func (mgr *manager) get(key string) (*readcache.App, bool) {
	for _, inf := range mgr.apps {
		obj, exists, err := inf.GetStore().GetByKey(key)
		if err == nil && exists {
			a := mgr.informed.AsApp(obj)
			return a, a != nil
		}
	}
	return nil, false
}
