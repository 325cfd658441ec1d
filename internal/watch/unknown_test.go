package watch

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// flakyObjects is a destination whose reads fail while failing is set — as a timeout, a 5xx or a
// Forbidden would — and which serves unprune's admission policy (protecting labelled Namespaces)
// unless policyErr is set.
type flakyObjects struct {
	*clustertest.Cluster
	mu        sync.Mutex
	failing   error
	policyErr error
}

func (f *flakyObjects) fail(objects, policy error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing, f.policyErr = objects, policy
}

func (f *flakyObjects) errs() (error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failing, f.policyErr
}

func (f *flakyObjects) Read(ctx context.Context, refs []cluster.Ref) []cluster.ReadResult {
	if err, _ := f.errs(); err != nil {
		out := make([]cluster.ReadResult, len(refs))
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	return f.Cluster.Read(ctx, refs)
}

func (f *flakyObjects) Get(ctx context.Context, ref cluster.Ref) (*cluster.Object, error) {
	if err, _ := f.errs(); err != nil {
		return nil, err
	}
	return f.Cluster.Get(ctx, ref)
}

func (f *flakyObjects) GetClusterObject(_ context.Context, _, _, resource, _ string) (map[string]any, error) {
	if _, err := f.errs(); err != nil {
		return nil, err
	}
	if resource == guard.BindingResource {
		return map[string]any{"spec": map[string]any{"validationActions": []any{"Deny"}}}, nil
	}
	return map[string]any{"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces"}}}}}}, nil
}

// flakyArgo is an installation whose in-cluster destination is dest.
type flakyArgo struct {
	*clustertest.ArgoCD
	dest cluster.Objects
}

func (a *flakyArgo) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return a.dest, nil
}

// TestFailedReadIsUnknownNeverUnguarded: a live read that fails is never an answer. The last good
// answer stands (and says how old it is) — losing read access to the objects and to unprune's own
// policy keeps the guard, with no Event; a row never read is unknown, neither guarded nor
// unguarded, and its Event says so; the cascade counts what it could not read; unprune_events_total
// counts what the API server accepted, not the attempts.
func TestFailedReadIsUnknownNeverUnguarded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	tracking := func(name string) map[string]string {
		return map[string]string{argocd.AnnotationTrackingID: "app:/Namespace:team/" + name}
	}
	c.Add("", "Namespace", "", "kept", map[string]string{guard.ProtectLabel: "true"}, tracking("kept"))
	c.Add("", "Namespace", "", "later", nil, tracking("later"))
	dest := &flakyObjects{Cluster: c}
	app := argocd.Application{Namespace: "argocd", Name: "app", UID: "uid-1", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"},
		Resources:   []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "kept", RequiresPruning: true}}}
	inner := clustertest.NewArgoCD("argocd", c, s)
	inner.AddApp(app)

	m := exposition.NewMetrics(clock)
	r := &reconciler{argoNamespace: "argocd", metrics: m, argo: readcache.New(&flakyArgo{ArgoCD: inner, dest: dest}, readcache.Options{Size: 100, TTL: time.Minute, Now: clock})}
	m.SetStaleSince(r.argo.OldestStale)
	rec := &expositiontest.Recorder{}
	r.events = exposition.NewEvents(rec.Write, func(context.Context, string, types.UID, string) ([]string, error) { return nil, nil },
		exposition.EventOptions{Sent: m.EventSent, Retry: time.Millisecond})
	r.events.SetLeading(true)
	evaluate := func(app argocd.Application, finalizers ...string) readcache.Unread {
		t.Helper()
		sum, u, err := r.judge(t.Context(), s, nil, app, finalizers, false)
		if err != nil {
			t.Fatal(err)
		}
		m.Set(app.Ref(), sum, time.Millisecond)
		r.events.Observe(app.Ref(), sum)
		if left := r.events.Deliver(t.Context()); left != 0 {
			t.Fatalf("%d Events left", left)
		}
		return u
	}
	series := func(app, name string, labels map[string]string) float64 {
		t.Helper()
		l := map[string]string{"application": app}
		for k, v := range labels {
			l[k] = v
		}
		return expositiontest.Value(t, m, name, l)
	}
	unguardedNow := map[string]string{"risk": "high", "when": "now"}
	high := map[string]string{"risk": "high"}

	// Read well: the policy guards the labelled Namespace.
	if u := evaluate(app); u.Any() {
		t.Fatalf("unread %+v with every read answered", u)
	}
	if series("app", metricUnguarded, unguardedNow) != 0 || series("app", metricUnknown, high) != 0 || len(rec.Sent) != 1 ||
		!strings.Contains(rec.Sent[0], "It is guarded (AdmissionPolicy)") {
		t.Fatalf("guarded row: unguarded %v unknown %v, events %q", series("app", metricUnguarded, unguardedNow), series("app", metricUnknown, high), rec.Sent)
	}

	// The TTL passes and every read fails: the Namespace's with a 503, the policy's Forbidden. The
	// last good answers stand, 2 minutes old; no Event says the guard was lost.
	now = now.Add(2 * time.Minute)
	dest.fail(apierrors.NewServiceUnavailable("etcdserver: leader changed"),
		apierrors.NewForbidden(schema.GroupResource{Group: guard.PolicyGroup, Resource: guard.PolicyResource}, guard.PolicyName, nil))
	evaluate(app)
	if series("app", metricUnguarded, unguardedNow) != 0 || series("app", metricUnknown, high) != 0 || len(rec.Sent) != 1 {
		t.Fatalf("after failed reads: unguarded %v unknown %v, events %q; want the last answer: guarded, no Event",
			series("app", metricUnguarded, unguardedNow), series("app", metricUnknown, high), rec.Sent)
	}
	if age := expositiontest.Value(t, m, metricStale, nil); age != 120 {
		t.Errorf("%s = %v, want 120 (the last good answers' age)", metricStale, age)
	}

	// A row never read is unknown — not unguarded — and its Event says its guards could not be read.
	// The API server refuses the first two writes: the Event is retried, counted once.
	later := app
	later.Name, later.UID = "later", "uid-2"
	later.Resources = []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "later", RequiresPruning: true}}
	rec.Fail = 2
	if u := evaluate(later, argocd.FinalizerResources); !u.Any() {
		t.Errorf("a failed read with no answer before it was not recorded")
	}
	if series("later", metricUnguarded, unguardedNow) != 0 || series("later", metricUnknown, high) != 1 {
		t.Errorf("never read: unguarded %v unknown %v; want 0 and 1", series("later", metricUnguarded, unguardedNow), series("later", metricUnknown, high))
	}
	if len(rec.Sent) != 2 || !strings.HasPrefix(rec.Sent[1], exposition.ReasonHighRiskRequiresPruning+": Namespace/later requires pruning") ||
		!strings.Contains(rec.Sent[1], "Its guards could not be read") {
		t.Errorf("events %q", rec.Sent)
	}
	if n := expositiontest.Value(t, m, metricEventsSent, map[string]string{"reason": exposition.ReasonHighRiskRequiresPruning}); n != 2 {
		t.Errorf("%s = %v after 2 Events accepted (and 2 writes refused); want 2", metricEventsSent, n)
	}
	// Its cascade fails closed: a Namespace that could not be read counts, it is not "not there".
	if got := series("later", metricCascade, nil); got != 1 {
		t.Errorf("cascade of an app whose Namespace could not be read: %v, want 1", got)
	}

	// Reads answer again: the unread row is judged (unguarded: nothing protects it), and nothing is
	// stale any more.
	dest.fail(nil, nil)
	now = now.Add(2 * time.Minute)
	evaluate(later, argocd.FinalizerResources)
	evaluate(app)
	if series("later", metricUnguarded, unguardedNow) != 1 || series("later", metricUnknown, high) != 0 || series("app", metricUnguarded, unguardedNow) != 0 {
		t.Errorf("after recovery: later unguarded %v unknown %v, app unguarded %v", series("later", metricUnguarded, unguardedNow),
			series("later", metricUnknown, high), series("app", metricUnguarded, unguardedNow))
	}
	if age := expositiontest.Value(t, m, metricStale, nil); age != 0 {
		t.Errorf("%s = %v after every read answered, want 0", metricStale, age)
	}
	// Now known to be unguarded: one Event says so; the guarded app has none.
	if len(rec.Sent) != 3 || !strings.HasPrefix(rec.Sent[2], exposition.ReasonUnguardedHighRiskPrune+": Namespace/later") {
		t.Errorf("events after recovery %q; want one %s for Namespace/later", rec.Sent, exposition.ReasonUnguardedHighRiskPrune)
	}
}
