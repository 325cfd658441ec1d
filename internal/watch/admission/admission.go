// Package admission is the deletion budget's admission webhook, served by `unprune watch
// --deletion-budget`: the API server asks it about every DELETE that Argo CD's application
// controller sends (the ValidatingWebhookConfiguration's matchConditions name the controller's
// ServiceAccount; deploy/components/deletion-budget), and it answers with budget.Decide.
//
// Why a webhook and not a ValidatingAdmissionPolicy fed by the watch: the count must be the one Argo
// CD's comparison gives when the DELETE arrives. A policy reads parameters the watch writes after it
// saw the app's new status, which an automated sync races: its prunes can reach the API server
// before the watch has written anything, and the first of them would pass. The webhook reads the
// app when the DELETE arrives, and waits for the status to list the object (the controller writes
// status.resources just after it starts an automated sync: controller/appcontroller.go
// processAppRefreshQueueItem calls autoSync, then persistAppStatus) for at most ListedWait.
//
// The ApplicationSet controller's DELETEs of the Applications it owns are judged per set
// (budget.DecideAppSet): nothing lists a reconcile's deletions before it sends them, so the first
// DELETE of each Application is refused and recorded on the ApplicationSet, and the controller's
// next attempt is judged on the record.
//
// It fails closed: failurePolicy Fail, so while no replica answers Argo CD's controllers delete
// nothing (their syncs, cascades and reconciles report the webhook's error and are retried), and
// every error reading the app or the set answers a refusal. Nobody else's requests reach it.
package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
)

// Path is where the webhook is served.
const Path = "/validate-deletion"

// EventReason is the reason of the Event on an Application whose deletions were refused.
const EventReason = "DeletionRefused"

// Reader is what the webhook reads: the app fresh from the API server, its project's
// annotations, and its destination's objects (the watch's cached reader).
type Reader interface {
	Application(ctx context.Context, namespace, name string) (argocd.Application, error)
	ProjectAnnotations(ctx context.Context, name string) (map[string]string, error)
	Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error)
}

// AppSets reads ApplicationSets fresh from the API server and writes the record of the deletions
// their controller asked (budget.AnnotationAsked).
type AppSets interface {
	ApplicationSet(ctx context.Context, namespace, name string) (AppSet, error)
	// Record writes value as the set's budget.AnnotationAsked, on the condition that the set is
	// still at set.ResourceVersion (a conflict error otherwise).
	Record(ctx context.Context, set AppSet, value string) error
}

// AppSet is what the webhook reads of an ApplicationSet.
type AppSet struct {
	Namespace, Name, UID, ResourceVersion string
	Annotations                           map[string]string
}

// Subject is the object an Event about a refusal is recorded on: an Application or an
// ApplicationSet.
type Subject struct{ Kind, Namespace, Name, UID string }

// Server answers AdmissionReviews.
type Server struct {
	Reader          Reader
	AppSets         AppSets
	ArgoCDNamespace string
	// Default is the installation's budget, for apps and projects that set none.
	Default int
	// Users are the usernames whose DELETEs are judged; anyone else's pass, whatever the webhook's
	// configuration sends here.
	Users map[string]bool
	// Settings are argocd-cm's (nil until read: every judged request is refused meanwhile).
	Settings func() *argocd.Settings
	Version  *argocd.Version
	// ListedWait bounds how long a prune's DELETE waits for the app's status to list its object.
	ListedWait time.Duration
	// Event records a refusal on the Application or ApplicationSet (nil: none).
	Event   func(ctx context.Context, on Subject, message string)
	Metrics *Metrics
	Log     func(format string, args ...any)
	Now     func() time.Time
	// After runs f after d (time.AfterFunc when nil): when a set's new asks are counted.
	After func(d time.Duration, f func())

	mu       sync.Mutex
	events   map[string]time.Time
	settling map[string]bool
}

// DefaultListedWait is ListedWait's default: the controller writes the status milliseconds after
// it starts an automated sync; the API server's webhook timeout (10 s here) bounds the rest.
const DefaultListedWait = 3 * time.Second

// eventEvery bounds the Events about one app's refusals for one reason and count.
const eventEvery = time.Minute

// ServeHTTP decodes an AdmissionReview and answers it.
func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	start := time.Now()
	resp := s.Review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	if s.Metrics != nil {
		s.Metrics.observe(time.Since(start), resp.Allowed)
	}
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(out)
}

func allow(message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true, Result: &metav1.Status{Message: message}}
}

func refuse(message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: message}}
}

// deleted is what the API server sends of the object being deleted (oldObject).
type deleted struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		UID             string            `json:"uid"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			UID        string `json:"uid"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
}

// Review judges one request.
func (s *Server) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Delete {
		return allow("not a DELETE")
	}
	if len(s.Users) > 0 && !s.Users[req.UserInfo.Username] {
		return allow("not a request of Argo CD's application controller")
	}
	if len(req.OldObject.Raw) == 0 {
		return refuse("unprune deletion budget: the API server sent no object with this DELETE, so its app cannot be told; nothing is deleted")
	}
	var obj deleted
	if err := json.Unmarshal(req.OldObject.Raw, &obj); err != nil {
		return refuse("unprune deletion budget: the object of this DELETE cannot be read: " + err.Error())
	}
	o := deletion.Object{Group: req.Kind.Group, Kind: req.Kind.Kind, Namespace: obj.Metadata.Namespace, Name: obj.Metadata.Name,
		Labels: obj.Metadata.Labels, Annotations: obj.Metadata.Annotations, Read: true}
	for _, ref := range obj.Metadata.OwnerReferences {
		o.Owners = append(o.Owners, ref.Kind+"/"+ref.Name)
		if ref.Controller != nil && *ref.Controller && ref.APIVersion == "argoproj.io/v1alpha1" && ref.Kind == "ApplicationSet" &&
			req.Kind.Group == "argoproj.io" && req.Kind.Kind == "Application" {
			return s.reviewAppSet(ctx, req, obj, ref.Name)
		}
	}
	switch {
	case len(o.Owners) > 0:
		// Argo CD manages only top-level objects; the garbage collector deletes owned ones.
		return allow("owned by " + strings.Join(o.Owners, ", "))
	case argocd.IsHook(o.Annotations):
		return allow("a hook: its delete policy deletes it")
	}
	settings := s.Settings()
	if settings == nil {
		return refuse("unprune deletion budget: argocd-cm has not been read yet; Argo CD retries the deletion")
	}
	own := settings.CascadeOwner(o.Labels, o.Annotations)
	if own.Instance == "" {
		// Claims naming different apps (both kinds of tracking read, the version unknown): which
		// operation this DELETE belongs to cannot be told, so it is not let through unjudged.
		if names := claimed(own); len(names) > 1 {
			return refuse(fmt.Sprintf("unprune deletion budget: %s is tracked by %s at once, so its operation cannot be told; nothing is deleted (pass the watch the Argo CD version)",
				o.Resource(), strings.Join(names, " and ")))
		}
		return allow("not tracked by any app")
	}
	namespace, name := s.ArgoCDNamespace, own.Instance
	if ns, n, ok := strings.Cut(own.Instance, "_"); ok {
		namespace, name = ns, n
	}
	app, err := s.listed(ctx, namespace, name, o)
	switch {
	case apierrors.IsNotFound(err):
		return allow(fmt.Sprintf("its app %s/%s does not exist", namespace, name))
	case err != nil:
		return refuse(fmt.Sprintf("unprune deletion budget: app %s/%s cannot be read (%v); Argo CD retries the deletion", namespace, name, err))
	}
	project, err := s.Reader.ProjectAnnotations(ctx, app.Project)
	if err != nil && !apierrors.IsNotFound(err) {
		return refuse(fmt.Sprintf("unprune deletion budget: project %s of app %s cannot be read (%v); Argo CD retries the deletion", app.Project, app.Ref(), err))
	}
	limit, limitErr := budget.LimitOf(app.Annotations, project, app.Project, s.Default)
	d := budget.Decide(budget.Request{
		Object: o, UID: obj.Metadata.UID, App: app, Rows: s.rows(ctx, app), Limit: limit, Approved: budget.Approved(app.Annotations),
		Version: s.Version, ArgoCDNamespace: s.ArgoCDNamespace, Approve: budget.ApproveCommand(app),
	})
	if limitErr != nil {
		d.Message += " (" + limitErr.Error() + ")"
	}
	if d.Allowed {
		return allow(d.Message)
	}
	if !dryRun(req) {
		if s.Metrics != nil {
			s.Metrics.refused(app.Ref(), d.Reason)
		}
		if s.Log != nil {
			s.Log("refused %s %s (app %s): %s", req.UserInfo.Username, o.Resource(), app.Ref(), d.Message)
		}
		s.event(ctx, Subject{Kind: "Application", Namespace: app.Namespace, Name: app.Name, UID: app.UID}, d.Reason, d.Deletes, d.Message)
	}
	return refuse(d.Message)
}

// ReasonAppSetOverBudget is the metric's reason for an ApplicationSet's refused deletions.
const ReasonAppSetOverBudget budget.Reason = "applicationset_over_budget"

// reviewAppSet judges a DELETE of an Application that ApplicationSet set owns: the set is read
// fresh, the verdict's record written on it when it changes (again after a conflict with another
// DELETE of the same reconcile, or the other replica), and the answer given. The set is found by
// name, as its controller finds the apps it owns (getCurrentApplications: the controller
// ownerReference's name), so that a set created again under an old one's name is judged too.
func (s *Server) reviewAppSet(ctx context.Context, req *admissionv1.AdmissionRequest, obj deleted, set string) *admissionv1.AdmissionResponse {
	namespace := obj.Metadata.Namespace
	ref := namespace + "/" + set
	if s.AppSets == nil {
		return refuse(fmt.Sprintf("unprune deletion budget: Application %s/%s belongs to ApplicationSet %s, which this webhook cannot read; nothing is deleted", namespace, obj.Metadata.Name, ref))
	}
	for attempt := 0; ; attempt++ {
		live, err := s.AppSets.ApplicationSet(ctx, namespace, set)
		switch {
		case apierrors.IsNotFound(err):
			// The set's controller reconciles only sets that exist: the garbage collector's.
			return allow(fmt.Sprintf("its ApplicationSet %s is gone", ref))
		case err != nil:
			return refuse(fmt.Sprintf("unprune deletion budget: ApplicationSet %s cannot be read (%v); its controller retries the deletion", ref, err))
		}
		d := budget.DecideAppSet(budget.AppSetRequest{Set: ref, Annotations: live.Annotations, App: obj.Metadata.Name, UID: obj.Metadata.UID,
			Default: s.Default, Now: s.now()})
		if d.Record != nil && !dryRun(req) {
			err := s.AppSets.Record(ctx, live, *d.Record)
			if apierrors.IsConflict(err) && attempt < 10 {
				continue
			}
			if err != nil {
				return refuse(fmt.Sprintf("unprune deletion budget: the deletions ApplicationSet %s asked cannot be recorded on it (%v); nothing is deleted, its controller retries", ref, err))
			}
			if d.Reason == budget.ReasonCounting {
				s.settleLater(namespace, set)
			}
		}
		if d.Allowed {
			return allow(d.Message)
		}
		if !dryRun(req) {
			if s.Log != nil {
				s.Log("refused %s Application %s/%s (ApplicationSet %s): %s", req.UserInfo.Username, namespace, obj.Metadata.Name, ref, d.Message)
			}
			// The first ask of each Application is refused only to be counted: no Event, no alert.
			if d.Reason == budget.ReasonOverBudget {
				if s.Metrics != nil {
					s.Metrics.refused(ref, ReasonAppSetOverBudget)
				}
				s.event(ctx, Subject{Kind: "ApplicationSet", Namespace: namespace, Name: set, UID: live.UID}, d.Reason, d.Deletes, d.Message)
			}
		}
		return refuse(d.Message)
	}
}

// claimed are the app instances the claims Argo CD reads (or may read) name.
func claimed(own argocd.Ownership) []string {
	var out []string
	for _, c := range own.Claims {
		if c.Tracks && c.Instance != "" && !slices.Contains(out, c.Instance) {
			out = append(out, c.Instance)
		}
	}
	return out
}

func dryRun(req *admissionv1.AdmissionRequest) bool { return req.DryRun != nil && *req.DryRun }

// listed reads the app until its status lists the object as one it deletes, for at most
// ListedWait: an automated sync starts before the controller writes the comparison that led to it.
// The app as last read is the answer either way (an object never listed counts as one more).
func (s *Server) listed(ctx context.Context, namespace, name string, o deletion.Object) (argocd.Application, error) {
	deadline := s.now().Add(s.ListedWait)
	for {
		app, err := s.Reader.Application(ctx, namespace, name)
		if err != nil || app.Deleting || lists(app.Pruning(), o) || !s.now().Before(deadline) {
			return app, err
		}
		select {
		case <-ctx.Done():
			return app, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func lists(rows []argocd.Resource, o deletion.Object) bool {
	for _, r := range rows {
		if r.Group == o.Group && r.Kind == o.Kind && r.Namespace == o.Namespace && r.Name == o.Name {
			return true
		}
	}
	return false
}

// rows are the operation's deletions as the app's status lists them, read live through the
// destination's reader where they can be: the prunes of a sync, or everything a cascade deletes.
func (s *Server) rows(ctx context.Context, app argocd.Application) []deletion.Object {
	listed := app.Pruning()
	if app.Deleting {
		listed = app.Resources
	}
	out := make([]deletion.Object, len(listed))
	for i := range listed {
		out[i] = deletion.FromRow(listed[i])
	}
	objects, err := s.Reader.Destination(ctx, app)
	if err != nil {
		return out
	}
	refs := make([]cluster.Ref, 0, len(listed))
	index := make([]int, 0, len(listed))
	for i, r := range listed {
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			continue
		}
		refs, index = append(refs, ref), append(index, i)
	}
	for j, res := range objects.Read(ctx, refs) {
		if res.Err == nil && res.Object != nil {
			row := listed[index[j]]
			out[index[j]] = deletion.FromLive(res.Object, &row)
		}
	}
	return out
}

// settleLater counts a set's new asks once budget.AppSetSettle has passed (budget.Settled), once
// per set at a time: the write makes the set's controller come back for its deletions. Until then
// the asks are refused, whatever the API server asks again.
func (s *Server) settleLater(namespace, set string) {
	key := namespace + "/" + set
	s.mu.Lock()
	if s.settling == nil {
		s.settling = map[string]bool{}
	}
	if s.settling[key] {
		s.mu.Unlock()
		return
	}
	s.settling[key] = true
	s.mu.Unlock()
	after := s.After
	if after == nil {
		after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	after(budget.AppSetSettle, func() {
		s.mu.Lock()
		delete(s.settling, key)
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for range 10 {
			live, err := s.AppSets.ApplicationSet(ctx, namespace, set)
			if err != nil {
				return
			}
			record := budget.Settled(live.Annotations, s.now())
			if record == nil {
				return
			}
			if err := s.AppSets.Record(ctx, live, *record); !apierrors.IsConflict(err) {
				if err != nil && s.Log != nil {
					s.Log("warning: counting the deletions ApplicationSet %s asked: %v (its controller's next attempt is refused until it is written)", key, err)
				}
				return
			}
		}
	})
}

// event records a refusal on an Application or ApplicationSet, once a minute per object, reason and
// count at most.
func (s *Server) event(ctx context.Context, on Subject, reason budget.Reason, deletes int, message string) {
	if s.Event == nil {
		return
	}
	key := fmt.Sprintf("%s|%s|%d", on.UID, reason, deletes)
	s.mu.Lock()
	if s.events == nil {
		s.events = map[string]time.Time{}
	}
	now := s.now()
	last, seen := s.events[key]
	if seen && now.Sub(last) < eventEvery {
		s.mu.Unlock()
		return
	}
	s.events[key] = now
	for k, t := range s.events {
		if now.Sub(t) >= eventEvery {
			delete(s.events, k)
		}
	}
	s.mu.Unlock()
	s.Event(context.WithoutCancel(ctx), on, message)
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Metrics are the webhook's: refusals by app and reason, and how long answers take.
type Metrics struct {
	refusals *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// Metric names.
const (
	MetricRefused  = "unprune_deletions_refused_total"
	MetricDuration = "unprune_admission_duration_seconds"
)

// NewMetrics registers the webhook's metrics.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefused,
			Help: "DELETE requests of Argo CD's controllers the deletion budget refused, by app (namespace/name of the Application, or of the ApplicationSet) and reason: over_budget (the operation deletes more than the app's budget), high_risk (a Namespace, CRD, PersistentVolumeClaim … not approved) or applicationset_over_budget (the set's controller asked to delete more Applications than its budget)."},
			[]string{"app", "reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricDuration,
			Help:    "How long the deletion budget took to answer an admission review, by whether it allowed the request.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"allowed"}),
	}
	for _, c := range []prometheus.Collector{m.refusals, m.latency} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *Metrics) refused(app string, reason budget.Reason) {
	m.refusals.WithLabelValues(app, string(reason)).Inc()
}

func (m *Metrics) observe(took time.Duration, allowed bool) {
	m.latency.WithLabelValues(fmt.Sprint(allowed)).Observe(took.Seconds())
}
