package watch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"golang.org/x/sync/singleflight"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/version"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/readcache"
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
	metrics *exposition.Metrics
	events  *exposition.Events
	argo    *readcache.ArgoCD
	kube    kubernetes.Interface
	// leases is the Lease's own client: its own connection, a timeout, its own rate limit.
	leases kubernetes.Interface
	dyn    dynamic.Interface
	meta   metadata.Interface
	// listers are the apps listing each object whose guards the watch watches.
	listers *listers
	queue   workqueue.TypedRateLimitingInterface[string]
	// lanes evaluate the apps of the other destinations, one queue each (lanes.go).
	lanes *lanes
	ns    appNamespaces

	apps []cache.SharedIndexInformer
	// informed makes the Applications the apps' informers hold compact, with the table of strings
	// their rows share.
	informed         readcache.Apps
	settingsInformer cache.SharedIndexInformer
	projects         cache.SharedIndexInformer
	// destinations reach the other clusters (nil: none may be reached); clusterSecrets is the
	// informer of Argo CD's cluster Secrets they resolve through (clusters.go).
	destinations   *kube.Destinations
	clusterSecrets cache.SharedIndexInformer

	mu       sync.RWMutex
	settings *argocd.Settings
	// filter is argocd-cm's resource.exclusions, inclusions and selectors, read with settings.
	filter *argocd.ResourceFilter
	synced bool

	// refreshed are the apps to judge next on fresh answers only: their last evaluation used
	// answers older than the TTL, whose LISTs have run since (readcache.Unread.Behind).
	refreshed sync.Map
}

// newWatcher builds the clients (every request counted) and the informers. The informers' clients
// have no timeout (a WATCH lasts up to --watch-timeout); every other request — live reads, in every
// destination, Events, settings — times out after --request-timeout. Both share one rate limit.
func newWatcher(ctx context.Context, cfg Config, m *exposition.Metrics, log *logger) (*watcher, error) {
	count := func(rt http.RoundTripper) http.RoundTripper { return &countingTransport{next: rt, metrics: m} }
	limiter := flowcontrol.NewTokenBucketRateLimiter(cfg.REST.QPS, cfg.REST.Burst)
	informing := rest.CopyConfig(cfg.REST)
	informing.Timeout, informing.RateLimiter = 0, limiter
	reading := rest.CopyConfig(cfg.REST)
	reading.Timeout, reading.RateLimiter = cfg.RequestTimeout, limiter
	opts := kube.Options{QPS: cfg.REST.QPS, Burst: cfg.REST.Burst, WrapTransport: count, Uncounted: cfg.uncounted()}
	clients, err := kube.NewClients(informing, clusterInfo(), nil, opts)
	if err != nil {
		return nil, err
	}
	readClients, err := kube.NewClients(reading, clusterInfo(), nil, opts)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(readClients.Config)
	if err != nil {
		return nil, err
	}
	leases, err := kubernetes.NewForConfig(leaseConfig(cfg, count))
	if err != nil {
		return nil, err
	}
	management := kube.NewObjects(readClients, kube.FieldManager)
	argo := &kube.ArgoCD{Objects: management, Ns: cfg.ArgoCDNamespace}
	w := &watcher{
		cfg: cfg, log: log, metrics: m, kube: kc, leases: leases, dyn: clients.Dynamic, meta: clients.Metadata, listers: newListers(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "applications"}),
	}
	if len(cfg.ClusterContexts) > 0 || cfg.ArgoCDCredentials {
		// Each destination's own clients: their own rate limit, and a timeout on every request.
		destOpts := kube.Options{QPS: cfg.REST.QPS, Burst: cfg.REST.Burst, WrapTransport: count, Timeout: cfg.RequestTimeout, Uncounted: opts.Uncounted}
		w.destinations = &kube.Destinations{Management: management, Namespace: cfg.ArgoCDNamespace, Contexts: cfg.ClusterContexts,
			ArgoCDCredentials: cfg.ArgoCDCredentials, FromContext: cfg.FromContext, Options: destOpts, FieldManager: kube.FieldManager}
		argo.Destinations = w.destinations
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
	w.argo = readcache.New(argo, readcache.Options{Size: cfg.CacheSize, TTL: cfg.CacheTTL, MaxBytes: cfg.CacheBytes, Now: cfg.Now,
		Informed: w.informedApplication})
	w.informers()
	return w, nil
}

// uncountedKinds are left out of a Namespace's count unless CountAllKinds: a cluster-wide list of
// Pods (their specs), ConfigMaps and Secrets (their data) reads far more than the watch needs,
// only for a number in an Event's text.
var uncountedKinds = []schema.GroupResource{{Resource: "pods"}, {Resource: "configmaps"}, {Resource: "secrets"}}

const uncountedText = "Pods, ConfigMaps and Secrets"

func (c Config) uncounted() []schema.GroupResource {
	if c.CountAllKinds {
		return nil
	}
	return uncountedKinds
}

// leaseConfig is the Lease client's: a renewal must not wait behind the reads of 2,000 apps or a
// burst of Events in the shared client's rate limiter, nor hang on a connection that stopped
// answering. Its own dialer gives it its own connection (client-go shares a transport between
// configs that only differ in timeouts); each request times out at half the renew deadline, which
// leaves one retry before the leader gives up the lead; 5 requests per second (burst 10) is ten
// times what renewing every retry period needs.
func leaseConfig(cfg Config, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	c := rest.CopyConfig(cfg.REST)
	c.QPS, c.Burst = 5, 10
	c.Timeout = cfg.RenewDeadline / 2
	if c.Timeout <= 0 {
		c.Timeout = DefaultRenewDeadline / 2
	}
	c.Dial = (&net.Dialer{Timeout: c.Timeout, KeepAlive: 30 * time.Second}).DialContext
	c.UserAgent = version.UserAgent() + " (lease)"
	c.Wrap(wrap)
	return c
}

// resolveNamespaces reads application.namespaces unless the flag said.
func (w *watcher) resolveNamespaces(ctx context.Context) error {
	w.ns = appNamespaces{argocd.AppNamespaces{ArgoCD: w.cfg.ArgoCDNamespace, Patterns: w.cfg.AppNamespaces}}
	if w.cfg.AppNamespaces != nil {
		return nil
	}
	cm, err := w.kube.CoreV1().ConfigMaps(w.cfg.ArgoCDNamespace).Get(ctx, argocd.CmdParamsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s/%s (%s): %w; or pass %v", w.cfg.ArgoCDNamespace, argocd.CmdParamsConfigMap, argocd.ParamAppNamespaces, err, option.AppNamespaces)
	}
	w.ns.Patterns = argocd.SplitList(cm.Data[argocd.ParamAppNamespaces])
	return nil
}

// informers sets up the shared informers: Applications in each watched namespace, argocd-cm and the
// AppProjects. The reflectors ask for watch bookmarks (client-go does by default; the tweak says so
// explicitly) so that a reconnect resumes from a recent resourceVersion instead of listing again.
// None resyncs: each app's re-evaluation is scheduled after its last one, jittered (resyncLater),
// so that 2,000 apps do not all re-evaluate in the same second every period.
func (w *watcher) informers() {
	bookmarks := func(o *metav1.ListOptions) { o.AllowWatchBookmarks = true }
	for _, ns := range w.ns.informerNamespaces() {
		inf := w.newDynamicInformer(kube.GVRApplication, ns, bookmarks, cache.Indexers{indexProject: w.projectIndex})
		_ = inf.SetTransform(w.informed.Compact)
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
	}
	w.settingsInformer = w.newDynamicInformer(gvrConfigMap, w.cfg.ArgoCDNamespace, func(o *metav1.ListOptions) {
		bookmarks(o)
		o.FieldSelector = "metadata.name=" + argocd.ConfigMapName
	}, nil)
	_ = w.settingsInformer.SetTransform(trimSettings)
	_, _ = w.settingsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.settingsChanged,
		// A relist delivers the same object again: only a new resourceVersion is a change.
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			w.settingsChanged(obj)
		},
	})
	w.watchClusterSecrets()
	w.projects = w.newDynamicInformer(gvrAppProject, w.cfg.ArgoCDNamespace, bookmarks, nil)
	_ = w.projects.SetTransform(trimProject)
	_, _ = w.projects.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			w.projectChanged(obj)
		},
		DeleteFunc: w.projectChanged,
	})
}

// informersToRun are every informer start runs and waits for; the cluster Secrets' too, when the
// watch reaches clusters with their credentials (else it would judge those apps' rows unknown at
// first, and announce them twice).
func (w *watcher) informersToRun() []cache.SharedIndexInformer {
	out := append(append([]cache.SharedIndexInformer{}, w.apps...), w.settingsInformer, w.projects)
	if w.clusterSecrets != nil {
		out = append(out, w.clusterSecrets)
	}
	return out
}

// resyncJitter spreads each app's next re-evaluation over [0.8, 1.2) × --resync-period.
const resyncJitter = 0.2

// resyncLater schedules key's next re-evaluation about a resync period from now, whatever happens
// before: a guard on a kind the watch does not watch shows then at the latest. The queue keeps the
// earliest time asked for a key, so a change in between only adds an evaluation.
func (w *watcher) resyncLater(key string) {
	d := w.cfg.Resync
	f := 1 - resyncJitter + 2*resyncJitter*rand.Float64()
	w.queue.AddAfter(key, time.Duration(float64(d)*f))
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

func (w *watcher) projectIndex(obj any) ([]string, error) {
	a := w.informed.AsApp(obj)
	if a == nil {
		return nil, nil
	}
	p, _, _ := unstructured.NestedString(a.Object, "spec", "project")
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
	a, ok := w.get(namespace + "/" + name)
	if !ok {
		return nil, false
	}
	ref := cluster.Ref{Group: kube.GVRApplication.Group, Version: kube.GVRApplication.Version, Resource: kube.GVRApplication.Resource,
		Kind: "Application", Namespace: namespace, Name: name, Namespaced: true}
	return kube.FromContent(ref, a.Content()), true
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
	filter, warnings, _ := argocd.ReadFilter(data, w.cfg.Version)
	w.mu.Lock()
	w.settings, w.filter = &s, &filter
	w.mu.Unlock()
	for _, warn := range warnings {
		w.log.printf("warning: %s", warn)
	}
	w.log.printf("Argo CD settings in %s/%s: %s", w.cfg.ArgoCDNamespace, argocd.ConfigMapName, s.String())
	if line := s.RulesLine(); line != "" {
		w.log.printf("%s", line)
	}
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

// currentFilter is what argocd-cm says Argo CD watches (nil before it was read: the built-in
// exclusions only).
func (w *watcher) currentFilter() *argocd.ResourceFilter {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.filter
}

func (w *watcher) currentSettings() *argocd.Settings {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.settings
}

// get finds an app in the informers' stores.
func (w *watcher) get(key string) (*readcache.App, bool) {
	for _, inf := range w.apps {
		obj, exists, err := inf.GetStore().GetByKey(key)
		if err == nil && exists {
			a := w.informed.AsApp(obj)
			return a, a != nil
		}
	}
	return nil, false
}

// errUnread says an evaluation could not read everything it needed: its series show what it could
// (the rest as unknown), and the app is evaluated again with backoff.
var errUnread = errors.New("some live reads failed")

// evaluate re-evaluates one app: audit's rows through the live cache, its series and its Events.
func (w *watcher) evaluate(ctx context.Context, key string) error {
	s := w.currentSettings()
	if s == nil {
		return fmt.Errorf("ConfigMap %s/%s not read yet", w.cfg.ArgoCDNamespace, argocd.ConfigMapName)
	}
	a, ok := w.get(key)
	if !ok {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		w.listers.track(key, nil)
		w.metrics.Delete(key)
		w.events.Forget(key, ns, name)
		return nil
	}
	app, err := a.Application()
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
	_, fresh := w.refreshed.LoadAndDelete(key)
	sum, unread, err := w.judge(ctx, *s, app, a.GetFinalizers(), fresh)
	if err != nil {
		return err
	}
	if !w.cfg.CountAllKinds {
		sum.Uncounted = uncountedText
	}
	w.publish(key, sum, unread, w.now().Sub(start))
	w.resyncLater(key)
	if unread.Any() {
		return errUnread
	}
	return nil
}

// publish shows a judgement in the metrics and its transitions as Events. A judgement made partly
// on answers older than the TTL, while LISTs read them again (unread.Behind), is shown in the
// metrics at once — the app's own change is current — but emits no Event: the app is judged again
// on what the LISTs read, and that judgement does.
func (w *watcher) publish(key string, sum exposition.Summary, unread readcache.Unread, took time.Duration) {
	w.metrics.Set(key, sum, took)
	if len(unread.Behind) > 0 {
		go w.judgeAgainAfter(key, unread.Behind)
		return
	}
	w.events.Observe(key, sum)
}

// judgeAgainAfter queues the app, to be judged on fresh answers, once the LISTs behind are done
// (failed or not: a failed LIST leaves the evaluation to read, or to fall back, as it does).
func (w *watcher) judgeAgainAfter(key string, behind []<-chan singleflight.Result) {
	for _, ch := range behind {
		<-ch
	}
	w.refreshed.Store(key, true)
	w.enqueue(cache.ExplicitKey(key))
}

// judge is audit's answer for one app, with its cascade, and what could not be read for it; fresh
// forbids answers older than the TTL (see readcache.WithUnread).
func (w *watcher) judge(ctx context.Context, s argocd.Settings, app argocd.Application, finalizers []string, fresh bool) (exposition.Summary, readcache.Unread, error) {
	ctx = readcache.WithUnread(ctx, fresh)
	rep, err := audit.Run(ctx, w.argo, s, []argocd.Application{app}, audit.Options{Filter: w.currentFilter()})
	if err != nil {
		return exposition.Summary{}, readcache.Unread{}, err
	}
	cascade := w.cascade(ctx, s, app, finalizers, rep.Rows)
	unread := readcache.UnreadOf(ctx)
	return exposition.SummarizeUnread(app, rep.Rows, cascade, shownUnread(unread)), unread, nil
}

// shownUnread is what an evaluation could not read, as exposition summarizes it.
func shownUnread(u readcache.Unread) exposition.Unread {
	return exposition.Unread{Destination: u.Destination, Objects: u.Objects, Policy: u.Policy}
}

// cascade is what deleting the app deletes with it, of high risk: nothing without a resources
// finalizer. audit's whole-app row has judged it already when a parent or ApplicationSet may delete
// the app; otherwise it is judged here, without reading the objects when their cluster cannot be
// reached. It fails closed: a resource whose read failed (Forbidden, a timeout, a 5xx — not "not
// found") counts unless what its identity and the app's options show keeps it, as when the cluster
// cannot be reached at all.
func (w *watcher) cascade(ctx context.Context, s argocd.Settings, app argocd.Application, finalizers []string, rows []audit.Row) []argocd.Resource {
	if argocd.CascadeFinalizer(finalizers) == "" {
		return nil
	}
	var judged []argocd.Resource
	found := false
	for _, r := range rows {
		if r.Cascade != nil && r.App.Ref() == app.Ref() {
			judged, found = r.Cascade.HighRisk, true
			break
		}
	}
	if !found {
		objects, err := w.argo.Destination(ctx, app)
		if err != nil {
			return audit.CascadeHighRiskUnread(s, app, w.cfg.ArgoCDNamespace)
		}
		judged = audit.CascadeHighRisk(ctx, objects, s, app, w.cfg.ArgoCDNamespace)
	}
	failed := readcache.UnreadOf(ctx)
	if failed.Destination {
		return audit.CascadeHighRiskUnread(s, app, w.cfg.ArgoCDNamespace)
	}
	counted := map[string]bool{}
	for _, r := range judged {
		counted[r.Key()] = true
	}
	for _, r := range audit.CascadeHighRiskUnread(s, app, w.cfg.ArgoCDNamespace) {
		if failed.Objects[r.Key()] && !counted[r.Key()] {
			judged = append(judged, r)
		}
	}
	return judged
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
