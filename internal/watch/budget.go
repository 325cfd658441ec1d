package watch

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/watch/admission"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// budgetReader is what the deletion budget's webhook reads through the watch: the app from the API
// server (never from the informers, which may not have seen the status that started the sync), the
// project's budget from the projects' informer, and the destination through the live cache.
type budgetReader struct{ mgr *manager }

func (r budgetReader) Application(ctx context.Context, namespace, name string) (argocd.Application, error) {
	return r.mgr.argo.ArgoCD.GetApplication(ctx, namespace, name)
}

func (r budgetReader) ProjectAnnotations(_ context.Context, name string) (map[string]string, error) {
	obj, ok, err := r.mgr.projects.GetStore().GetByKey(r.mgr.cfg.ArgoCDNamespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gvrAppProject.Group, Resource: gvrAppProject.Resource}, name)
	}
	u, _ := obj.(*unstructured.Unstructured)
	if u == nil {
		return nil, nil
	}
	return u.GetAnnotations(), nil
}

func (r budgetReader) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	objects, err := r.mgr.argo.Destination(ctx, app)
	if err != nil {
		return nil, err
	}
	// Read from the live cache alone: a webhook answers within the API server's timeout
	// (readcache.CachedOnly).
	only, ok := readcache.CachedOnly(objects)
	if !ok {
		return nil, fmt.Errorf("the destination of %s has no live cache", app.Ref())
	}
	return only, nil
}

// controllerUsers are the users Argo CD's application and ApplicationSet controllers act as in the
// cluster they run in: the ServiceAccounts its manifests run them as
// (manifests/base/application-controller, manifests/base/applicationset-controller).
func controllerUsers(namespace string) []string {
	return []string{"system:serviceaccount:" + namespace + ":argocd-application-controller",
		"system:serviceaccount:" + namespace + ":argocd-applicationset-controller"}
}

// budgetAppSets reads ApplicationSets from the API server and writes the budget's record on them.
type budgetAppSets struct{ mgr *manager }

func (r budgetAppSets) ApplicationSet(ctx context.Context, namespace, name string) (admission.AppSet, error) {
	u, err := r.mgr.dyn.Resource(kube.GVRApplicationSet).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return admission.AppSet{}, err
	}
	return admission.AppSet{Namespace: namespace, Name: name, UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
		Annotations: u.GetAnnotations()}, nil
}

// Record merge-patches the one annotation, with the resourceVersion the verdict read as a
// precondition: two DELETEs of one reconcile (or the other replica) must not overwrite each other.
func (r budgetAppSets) Record(ctx context.Context, set admission.AppSet, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": set.ResourceVersion,
		"annotations": map[string]any{budget.AnnotationAsked: value}}})
	if err != nil {
		return err
	}
	_, err = r.mgr.dyn.Resource(kube.GVRApplicationSet).Namespace(set.Namespace).Patch(ctx, set.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: EventComponent})
	return err
}

// serveBudget starts the deletion budget's webhook on its own TLS listener; nil when off.
func (mgr *manager) serveBudget() (*http.Server, error) {
	if mgr.cfg.DeletionBudget == nil {
		return nil, nil
	}
	m, err := admission.NewMetrics(mgr.metrics.Registry)
	if err != nil {
		return nil, err
	}
	users := map[string]bool{}
	for _, u := range mgr.cfg.BudgetUsers {
		users[u] = true
	}
	if len(users) == 0 {
		for _, u := range controllerUsers(mgr.cfg.ArgoCDNamespace) {
			users[u] = true
		}
	}
	certs := &admission.Certificate{CertFile: mgr.cfg.TLSCertFile, KeyFile: mgr.cfg.TLSKeyFile}
	if _, err := certs.Get(nil); err != nil {
		return nil, fmt.Errorf("%v/%v: %w", option.TLSCertFile, option.TLSPrivateKeyFile, err)
	}
	s := &admission.Server{
		Reader: budgetReader{mgr}, AppSets: budgetAppSets{mgr}, ArgoCDNamespace: mgr.cfg.ArgoCDNamespace, Default: *mgr.cfg.DeletionBudget, Users: users,
		Settings: mgr.settings.tracking, Version: mgr.cfg.Version, ListedWait: admission.DefaultListedWait,
		Event: mgr.budgetEvent, Metrics: m, Log: mgr.log.printf, Now: mgr.cfg.Now,
	}
	mux := http.NewServeMux()
	mux.Handle(admission.Path, s)
	ln, err := net.Listen("tcp", mgr.cfg.AdmissionAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %v %s: %w", option.AdmissionBindAddress, mgr.cfg.AdmissionAddr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.Get}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	mgr.log.printf("serving the deletion budget's webhook on https://%s%s (default budget %d; judging DELETEs of %v)", ln.Addr(), admission.Path, *mgr.cfg.DeletionBudget, mgr.cfg.BudgetUsersOrDefault())
	return srv, nil
}

// BudgetUsersOrDefault are the users whose DELETEs the webhook judges.
func (c Config) BudgetUsersOrDefault() []string {
	if len(c.BudgetUsers) > 0 {
		return c.BudgetUsers
	}
	return controllerUsers(c.ArgoCDNamespace)
}

// budgetEvent records a refusal on the Application or ApplicationSet. Every replica answers the API
// server, so each records its own refusals; the webhook sends one per object, reason and count a
// minute at most.
func (mgr *manager) budgetEvent(ctx context.Context, on admission.Subject, message string) {
	now := metav1.NewTime(mgr.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: on.Namespace, GenerateName: on.Name + ".deletion-refused."},
		InvolvedObject: corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: on.Kind,
			Namespace: on.Namespace, Name: on.Name, UID: types.UID(on.UID)},
		Reason: admission.EventReason, Message: message, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: EventComponent, Host: mgr.cfg.Identity},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := mgr.kube.CoreV1().Events(on.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		mgr.log.printf("warning: Event %s on %s %s/%s: %v", admission.EventReason, on.Kind, on.Namespace, on.Name, err)
	}
}
