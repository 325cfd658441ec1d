package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
)

const controller = "system:serviceaccount:argocd:argocd-application-controller"

// reader serves one app, whose status may be written late (after reads reads of it), and no
// destination (rows are judged from the status alone).
type reader struct {
	mu      sync.Mutex
	app     argocd.Application
	missing bool
	// lateAfter: the first lateAfter reads see the app without its status rows.
	lateAfter int
	reads     int
	project   map[string]string
}

func (r *reader) Application(_ context.Context, namespace, name string) (argocd.Application, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.missing || namespace != r.app.Namespace || name != r.app.Name {
		return argocd.Application{}, apierrors.NewNotFound(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, name)
	}
	if r.reads <= r.lateAfter {
		a := r.app
		a.Resources = nil
		return a, nil
	}
	return r.app, nil
}

func (r *reader) ProjectAnnotations(context.Context, string) (map[string]string, error) {
	return r.project, nil
}

func (r *reader) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return nil, fmt.Errorf("not reachable in this test")
}

func app(pruning int) argocd.Application {
	a := argocd.Application{Namespace: "argocd", Name: "shop", UID: "app-uid", Project: "default"}
	for i := range pruning {
		a.Resources = append(a.Resources, argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i), RequiresPruning: true})
	}
	return a
}

func deleteRequest(t *testing.T, user, kind, namespace, name string, labels, annotations map[string]string, owners ...metav1.OwnerReference) *admissionv1.AdmissionRequest {
	t.Helper()
	obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{
		"name": name, "namespace": namespace, "uid": "uid-" + name, "labels": labels, "annotations": annotations, "ownerReferences": owners}}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{UID: types.UID("req-" + name), Operation: admissionv1.Delete,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: kind}, Namespace: namespace, Name: name,
		UserInfo: authenticationv1.UserInfo{Username: user}, OldObject: runtime.RawExtension{Raw: raw}}
}

func server(t *testing.T, r *reader) (*Server, *prometheus.Registry) {
	return serverWith(t, r, "v3.6.1")
}

func serverWith(t *testing.T, r *reader, version string) (*Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Reader: r, ArgoCDNamespace: "argocd", Default: 5, Users: map[string]bool{controller: true},
		Settings: func() *argocd.Settings {
			if version == "" {
				s := argocd.NewSettings(nil, nil)
				return &s
			}
			v, _ := argocd.ParseVersion(version)
			s := argocd.NewSettings(nil, &v)
			return &s
		}, ListedWait: 2 * time.Second, Metrics: m}
	return s, reg
}

var tracked = map[string]string{argocd.AnnotationTrackingID: "shop:/ConfigMap:shop/cm-0"}

func TestReview(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reader  *reader
		req     func(t *testing.T) *admissionv1.AdmissionRequest
		allowed bool
		says    string
	}{
		{"within the budget", &reader{app: app(3)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, true, "deletes 3 objects, within its budget of 5"},
		{"over the budget", &reader{app: app(8)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, false, "deletes 8 objects, more than its budget of 5"},
		{"the project's budget", &reader{app: app(3), project: map[string]string{budget.AnnotationBudget: "2"}}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, false, "more than its budget of 2 (the unprune.dev/deletion-budget of project default)"},
		{"status written after the sync started", &reader{app: app(8), lateAfter: 3}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, false, "deletes 8 objects"},
		{"someone else's DELETE", &reader{app: app(8)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, "kubernetes-admin", "ConfigMap", "shop", "cm-0", nil, tracked)
		}, true, "not a request of Argo CD's application controller"},
		{"a hook", &reader{app: app(8)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, map[string]string{argocd.AnnotationTrackingID: tracked[argocd.AnnotationTrackingID], argocd.AnnotationHook: "PreSync"})
		}, true, "a hook"},
		{"an owned object", &reader{app: app(8)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked, metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"})
		}, true, "owned by Secret/s"},
		{"untracked", &reader{app: app(8)}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, nil)
		}, true, "not tracked"},
		{"its app is gone", &reader{app: app(8), missing: true}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, true, "does not exist"},
		{"a Namespace", &reader{app: func() argocd.Application {
			a := app(0)
			a.Resources = []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "data", RequiresPruning: true}}
			return a
		}()}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "Namespace", "", "data", nil, map[string]string{argocd.AnnotationTrackingID: "shop:/Namespace:/data"})
		}, false, "Namespace/data is high-risk"},
		{"approved", &reader{app: func() argocd.Application {
			a := app(8)
			a.Annotations = map[string]string{budget.AnnotationApproved: "uid-other,uid-cm-0"}
			return a
		}()}, func(t *testing.T) *admissionv1.AdmissionRequest {
			return deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
		}, true, "approved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := server(t, tc.reader)
			resp := s.Review(context.Background(), tc.req(t))
			if resp.Allowed != tc.allowed || !strings.Contains(resp.Result.Message, tc.says) {
				t.Fatalf("allowed %v: %s; want %v, saying %q", resp.Allowed, resp.Result.Message, tc.allowed, tc.says)
			}
			refused := refusals(t, s)
			if want := map[bool]float64{true: 0, false: 1}[tc.allowed]; refused != want {
				t.Fatalf("%s = %v; want %v", MetricRefused, refused, want)
			}
		})
	}
}

// TestReviewDryRun: a dry-run DELETE is judged alike, with no side effect.
func TestReviewDryRun(t *testing.T) {
	var events int
	s, _ := server(t, &reader{app: app(8)})
	s.Event = func(context.Context, Subject, string) { events++ }
	req := deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)
	yes := true
	req.DryRun = &yes
	if resp := s.Review(context.Background(), req); resp.Allowed {
		t.Fatal("a dry-run DELETE over the budget was allowed")
	}
	if events != 0 || refusals(t, s) != 0 {
		t.Fatalf("a dry-run refusal sent %d Events and counted %v", events, refusals(t, s))
	}
	req.DryRun = nil
	for range 3 {
		s.Review(context.Background(), req)
	}
	if events != 1 {
		t.Fatalf("three refusals of one operation sent %d Events; want 1", events)
	}
}

// TestServeHTTP: an AdmissionReview in, one with the request's UID and a 403 refusal out.
func TestServeHTTP(t *testing.T) {
	s, _ := server(t, &reader{app: app(8)})
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", nil, tracked)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "req-cm-0" || out.Response.Allowed || out.Response.Result.Code != http.StatusForbidden || out.Kind != "AdmissionReview" {
		t.Fatalf("response %+v", out.Response)
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader("{}")))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("an empty review: %d", rec.Code)
	}
}

// refusals sums unprune_deletions_refused_total over its series.
func refusals(t *testing.T, s *Server) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	s.Metrics.refusals.Collect(ch)
	close(ch)
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		sum += d.GetCounter().GetValue()
	}
	return sum
}

// TestReviewTwoClaims: with the version unknown, Argo CD may read the instance label or the
// tracking-id; when they name two apps, the DELETE's operation cannot be told, and it is refused.
func TestReviewTwoClaims(t *testing.T) {
	s, _ := serverWith(t, &reader{app: app(1)}, "")
	req := deleteRequest(t, controller, "ConfigMap", "shop", "cm-0", map[string]string{argocd.DefaultInstanceLabelKey: "other"}, tracked)
	if resp := s.Review(context.Background(), req); resp.Allowed || !strings.Contains(resp.Result.Message, "other and shop at once") {
		t.Fatalf("allowed %v: %s", resp.Allowed, resp.Result.Message)
	}
}

// sets is one ApplicationSet with the API server's optimistic concurrency: a Record at an older
// resourceVersion conflicts.
type sets struct {
	mu      sync.Mutex
	set     AppSet
	version int
	writes  int
}

func (f *sets) ApplicationSet(_ context.Context, namespace, name string) (AppSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if namespace != f.set.Namespace || name != f.set.Name {
		return AppSet{}, apierrors.NewNotFound(schema.GroupResource{Group: "argoproj.io", Resource: "applicationsets"}, name)
	}
	out := f.set
	out.ResourceVersion = fmt.Sprint(f.version)
	out.Annotations = map[string]string{}
	for k, v := range f.set.Annotations {
		out.Annotations[k] = v
	}
	return out, nil
}

func (f *sets) Record(_ context.Context, set AppSet, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if set.ResourceVersion != fmt.Sprint(f.version) {
		return apierrors.NewConflict(schema.GroupResource{Group: "argoproj.io", Resource: "applicationsets"}, set.Name, fmt.Errorf("changed"))
	}
	f.set.Annotations[budget.AnnotationAsked] = value
	f.version++
	f.writes++
	return nil
}

const appSetController = "system:serviceaccount:argocd:argocd-applicationset-controller"

func ownedApp(t *testing.T, name string) *admissionv1.AdmissionRequest {
	yes := true
	req := deleteRequest(t, appSetController, "Application", "argocd", name, nil, nil,
		metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet", Name: "envs", UID: "set-uid", Controller: &yes})
	req.Kind.Group = "argoproj.io"
	return req
}

// pass sends the DELETEs of one reconcile concurrently, as deleteInCluster does, and returns how
// many were allowed.
func pass(t *testing.T, s *Server, names ...string) (allowed int, messages []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			resp := s.Review(context.Background(), ownedApp(t, n))
			mu.Lock()
			defer mu.Unlock()
			if resp.Allowed {
				allowed++
			}
			messages = append(messages, resp.Result.Message)
		})
	}
	wg.Wait()
	return allowed, messages
}

// TestReviewApplicationSet: a reconcile that deletes three apps with budget 2 is refused twice —
// once to be counted (every concurrent DELETE recorded, none lost to a conflict; the API server's
// second call about one of them refused alike), then, once the asks are counted, over the budget,
// with an Event on the set — and deletes them once approved; one app within the budget is let
// through on the controller's attempt after its ask was counted.
func TestReviewApplicationSet(t *testing.T) {
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	f := &sets{set: AppSet{Namespace: "argocd", Name: "envs", UID: "set-uid", Annotations: map[string]string{}}}
	s, _ := server(t, &reader{app: app(0)})
	s.Default, s.AppSets, s.Now = 2, f, func() time.Time { return now }
	var settle []func()
	s.After = func(d time.Duration, fn func()) {
		if d != budget.AppSetSettle {
			t.Errorf("counted after %v, want %v", d, budget.AppSetSettle)
		}
		settle = append(settle, fn)
	}
	// settled runs the pending count after AppSetSettle, as the timer would.
	settled := func() {
		t.Helper()
		if len(settle) != 1 {
			t.Fatalf("%d counts pending; want one per set", len(settle))
		}
		now = now.Add(budget.AppSetSettle)
		settle[0]()
		settle = nil
	}
	s.Users[appSetController] = true
	var events []Subject
	s.Event = func(_ context.Context, on Subject, _ string) { events = append(events, on) }

	if n, msgs := pass(t, s, "a", "b", "c"); n != 0 {
		t.Fatalf("first attempt: %d allowed: %v", n, msgs)
	}
	if got := len(budget.Fresh(budget.ParseAsked(f.set.Annotations), now)); got != 3 {
		t.Fatalf("the record holds %d asks after three concurrent DELETEs; want 3: %s", got, f.set.Annotations[budget.AnnotationAsked])
	}
	if refusals(t, s) != 0 || len(events) != 0 {
		t.Fatalf("counting sent %d Events and counted %v refusals", len(events), refusals(t, s))
	}
	// The API server asks again about b's DELETE (b changed meanwhile): refused alike, though 1 or 2
	// asks would be within the budget.
	writes := f.writes
	if n, msgs := pass(t, s, "b"); n != 0 || f.writes != writes {
		t.Fatalf("the API server's second call: %d allowed, %d writes: %v", n, f.writes-writes, msgs)
	}
	settled()
	if f.writes != writes+1 {
		t.Fatalf("counting the asks wrote %d times; want once (the write brings the controller back)", f.writes-writes)
	}
	writes = f.writes
	n, msgs := pass(t, s, "a", "b", "c")
	if n != 0 || !strings.Contains(msgs[0], "asked to delete 3 Applications") || !strings.Contains(msgs[0], "unprune guard approve envs") {
		t.Fatalf("second attempt: %d allowed: %v", n, msgs)
	}
	if f.writes != writes {
		t.Fatalf("judging a recorded ask wrote the record %d times (each write makes the controller reconcile again)", f.writes-writes)
	}
	if refusals(t, s) != 3 || len(events) != 1 || events[0].Kind != "ApplicationSet" || events[0].Name != "envs" {
		t.Fatalf("refusals %v, events %+v; want 3 and one on ApplicationSet envs", refusals(t, s), events)
	}

	f.set.Annotations[budget.AnnotationApproved] = "uid-a,uid-b,uid-c"
	if n, msgs := pass(t, s, "a", "b", "c"); n != 3 {
		t.Fatalf("approved: %d allowed: %v", n, msgs)
	}
	// Approved asks are spent: one more app within the budget goes once its ask is counted.
	if n, _ := pass(t, s, "d"); n != 0 {
		t.Fatal("a first ask was allowed before it was counted")
	}
	if n, _ := pass(t, s, "d"); n != 0 {
		t.Fatal("an ask was allowed before it was counted")
	}
	settled()
	if n, msgs := pass(t, s, "d"); n != 1 {
		t.Fatalf("one app within the budget: %v", msgs)
	}

	dry := ownedApp(t, "e")
	yes := true
	dry.DryRun = &yes
	writes = f.writes
	if resp := s.Review(context.Background(), dry); resp.Allowed || f.writes != writes {
		t.Fatalf("a dry-run first ask: allowed %v, %d writes", resp.Allowed, f.writes-writes)
	}
	// Owned by an earlier set of the same name, which the controller counts as the set's own.
	older := ownedApp(t, "f")
	older.OldObject.Raw = bytes.Replace(older.OldObject.Raw, []byte("set-uid"), []byte("old-set-uid"), 1)
	if resp := s.Review(context.Background(), older); resp.Allowed || !strings.Contains(resp.Result.Message, "recorded") {
		t.Fatalf("an app of an earlier set of the same name: allowed %v: %s", resp.Allowed, resp.Result.Message)
	}
	f.set.Name = "other"
	if resp := s.Review(context.Background(), ownedApp(t, "g")); !resp.Allowed {
		t.Fatalf("an app whose set is gone (the garbage collector's DELETE): %s", resp.Result.Message)
	}
}
