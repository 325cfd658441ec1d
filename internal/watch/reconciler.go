package watch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/client-go/tools/cache"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// reconciler judges one Application at a time, as controller-runtime's Reconciler does its
// objects: it reads only the manager's caches (the informers' Applications, argocd-cm, the live
// read cache), shows its judgement through the exposition, and says when to judge the app again.
// The workers (lanes.go) call Reconcile; nothing else does.
type reconciler struct {
	// argoNamespace is Argo CD's; countAllKinds and resync are the flags of the same names.
	argoNamespace string
	countAllKinds bool
	resync        time.Duration
	now           func() time.Time

	// app finds an Application in the informers' stores; settings are argocd-cm as last read.
	app      func(key string) (*readcache.App, bool)
	settings *argoSettings
	argo     *readcache.ArgoCD
	// listers learn which objects each app lists, for the guards' informers.
	listers *listers

	metrics *exposition.Metrics
	events  *exposition.Events

	// requeue puts an app back in the queue now: once the LISTs its last judgement waited on are done.
	requeue func(key string)
	// refreshed are the apps to judge next on fresh answers only: their last evaluation used
	// answers older than the TTL, whose LISTs have run since (readcache.Unread.Behind).
	refreshed sync.Map
}

// result says when to judge an app again, as controller-runtime's reconcile.Result: after
// requeueAfter, whatever happens before (zero: only when something changes).
type result struct {
	requeueAfter time.Duration
}

// newReconciler is the reconciler of the manager's apps, with its caches and exposition.
func (mgr *manager) newReconciler() *reconciler {
	return &reconciler{
		argoNamespace: mgr.cfg.ArgoCDNamespace, countAllKinds: mgr.cfg.CountAllKinds, resync: mgr.cfg.Resync, now: mgr.now,
		app: mgr.get, settings: &mgr.settings, argo: mgr.argo, listers: mgr.listers,
		metrics: mgr.metrics, events: mgr.events,
		requeue: func(key string) { mgr.enqueue(cache.ExplicitKey(key)) },
	}
}

// errUnread says an evaluation could not read everything it needed: its series show what it could
// (the rest as unknown), and the app is evaluated again with backoff.
var errUnread = errors.New("some live reads failed")

// Reconcile judges the app of key: audit's rows through the live cache, its series and its
// Events. An app gone from the informers is forgotten.
func (r *reconciler) Reconcile(ctx context.Context, key string) (result, error) {
	s, filter := r.settings.current()
	if s == nil {
		return result{}, fmt.Errorf("ConfigMap %s/%s not read yet", r.argoNamespace, argocd.ConfigMapName)
	}
	a, ok := r.app(key)
	if !ok {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		r.listers.track(key, nil)
		r.metrics.Delete(key)
		r.events.Forget(key, ns, name)
		return result{}, nil
	}
	app, err := a.Application()
	if err != nil {
		return result{}, err
	}
	// The guards' informers watch the cluster Argo CD runs in: only its apps list their objects.
	var listed []argocd.Resource
	if app.Destination.InCluster() {
		listed = app.Resources
	}
	r.listers.track(key, listed)
	start := r.now()
	_, fresh := r.refreshed.LoadAndDelete(key)
	sum, unread, err := r.judge(ctx, *s, filter, app, a.GetFinalizers(), fresh)
	if err != nil {
		return result{}, err
	}
	if !r.countAllKinds {
		sum.Uncounted = uncountedText
	}
	r.publish(key, sum, unread, r.now().Sub(start))
	again := result{requeueAfter: r.nextResync()}
	if unread.Any() {
		return again, errUnread
	}
	return again, nil
}

// resyncJitter spreads each app's next re-evaluation over [0.8, 1.2) × --resync-period.
const resyncJitter = 0.2

// nextResync is when to judge an app again about a resync period from now, whatever happens
// before: a guard on a kind the watch does not watch shows then at the latest. The queue keeps the
// earliest time asked for a key, so a change in between only adds an evaluation.
func (r *reconciler) nextResync() time.Duration {
	f := 1 - resyncJitter + 2*resyncJitter*rand.Float64()
	return time.Duration(float64(r.resync) * f)
}

// publish shows a judgement in the metrics and its transitions as Events. A judgement made partly
// on answers older than the TTL, while LISTs read them again (unread.Behind), is shown in the
// metrics at once — the app's own change is current — but emits no Event: the app is judged again
// on what the LISTs read, and that judgement does.
func (r *reconciler) publish(key string, sum exposition.Summary, unread readcache.Unread, took time.Duration) {
	r.metrics.Set(key, sum, took)
	if len(unread.Behind) > 0 {
		go r.judgeAgainAfter(key, unread.Behind)
		return
	}
	r.events.Observe(key, sum)
}

// judgeAgainAfter queues the app, to be judged on fresh answers, once the LISTs behind are done
// (failed or not: a failed LIST leaves the evaluation to read, or to fall back, as it does).
func (r *reconciler) judgeAgainAfter(key string, behind []<-chan singleflight.Result) {
	for _, ch := range behind {
		<-ch
	}
	r.refreshed.Store(key, true)
	r.requeue(key)
}

// judge is audit's answer for one app, with its cascade, and what could not be read for it; fresh
// forbids answers older than the TTL (see readcache.WithUnread).
func (r *reconciler) judge(ctx context.Context, s argocd.Settings, filter *argocd.ResourceFilter, app argocd.Application, finalizers []string, fresh bool) (exposition.Summary, readcache.Unread, error) {
	ctx = readcache.WithUnread(ctx, fresh)
	rep, err := audit.Run(ctx, r.argo, s, []argocd.Application{app}, audit.Options{Filter: filter})
	if err != nil {
		return exposition.Summary{}, readcache.Unread{}, err
	}
	cascade := r.cascade(ctx, s, app, finalizers, rep.Rows)
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
func (r *reconciler) cascade(ctx context.Context, s argocd.Settings, app argocd.Application, finalizers []string, rows []audit.Row) []argocd.Resource {
	if argocd.CascadeFinalizer(finalizers) == "" {
		return nil
	}
	var judged []argocd.Resource
	found := false
	for _, row := range rows {
		if row.Cascade != nil && row.App.Ref() == app.Ref() {
			judged, found = row.Cascade.HighRisk, true
			break
		}
	}
	if !found {
		objects, err := r.argo.Destination(ctx, app)
		if err != nil {
			return audit.CascadeHighRiskUnread(s, app, r.argoNamespace)
		}
		judged = audit.CascadeHighRisk(ctx, objects, s, app, r.argoNamespace)
	}
	failed := readcache.UnreadOf(ctx)
	if failed.Destination {
		return audit.CascadeHighRiskUnread(s, app, r.argoNamespace)
	}
	counted := map[string]bool{}
	for _, res := range judged {
		counted[res.Key()] = true
	}
	for _, res := range audit.CascadeHighRiskUnread(s, app, r.argoNamespace) {
		if failed.Objects[res.Key()] && !counted[res.Key()] {
			judged = append(judged, res)
		}
	}
	return judged
}

// argoSettings are argocd-cm as the manager last read it: the tracking settings and the resource
// filter (resource.exclusions, inclusions and selectors), which every judgement reads.
type argoSettings struct {
	mu       sync.RWMutex
	settings *argocd.Settings
	filter   *argocd.ResourceFilter
}

func (a *argoSettings) set(s argocd.Settings, filter argocd.ResourceFilter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settings, a.filter = &s, &filter
}

// setIfNone sets s when nothing was read; it reports whether it did.
func (a *argoSettings) setIfNone(s argocd.Settings) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settings != nil {
		return false
	}
	a.settings = &s
	return true
}

// current are the settings (nil before argocd-cm was read) and the filter (nil before it was read:
// the built-in exclusions only).
func (a *argoSettings) current() (*argocd.Settings, *argocd.ResourceFilter) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.settings, a.filter
}

// tracking are the settings alone (nil before argocd-cm was read).
func (a *argoSettings) tracking() *argocd.Settings {
	s, _ := a.current()
	return s
}
