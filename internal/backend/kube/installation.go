package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/parallel"
)

var (
	gvrConfigMap   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrStatefulSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	gvrDeployment  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	// GVRApplication is Argo CD's Application resource.
	GVRApplication = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// ArgoCD is an Argo CD installation read through the Kubernetes API of the cluster it runs in.
type ArgoCD struct {
	// Objects is the cluster Argo CD runs in (its Applications, argocd-cm, and the in-cluster
	// destination).
	Objects *Objects
	// Ns is the installation's namespace.
	Ns string
	// Destinations resolves apps deploying to other clusters; nil refuses them.
	Destinations DestinationResolver

	// version is the Argo CD version Settings found, which decides how to ask for a refresh.
	version *argocd.Version
}

// DestinationResolver returns the objects of a remote destination cluster.
type DestinationResolver interface {
	Resolve(ctx context.Context, d argocd.Destination) (cluster.Objects, error)
}

var _ cluster.ArgoCD = (*ArgoCD)(nil)

// FindNamespace finds the namespace of Argo CD's argocd-cm by the labels Argo CD's manifests put on
// it. It returns fallback, with a note, when nothing is found or the user may not search.
func FindNamespace(ctx context.Context, o *Objects, fallback string) (ns string, note string) {
	list, err := o.Metadata.Resource(gvrConfigMap).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/part-of=argocd,app.kubernetes.io/name=argocd-cm",
		Limit:         100,
	})
	if err != nil {
		return fallback, fmt.Sprintf("cannot search for Argo CD's namespace (%s); assuming %q (set %v)", short(err), fallback, option.ArgoCDNamespace)
	}
	var found []string
	for _, cm := range list.Items {
		if cm.Name == argocd.ConfigMapName {
			found = append(found, cm.Namespace)
		}
	}
	switch len(found) {
	case 0:
		return fallback, ""
	case 1:
		return found[0], ""
	}
	pick := found[0]
	if slices.Contains(found, fallback) {
		pick = fallback
	}
	return pick, fmt.Sprintf("several Argo CD installations found (%s); using %q (set %v)", strings.Join(found, ", "), pick, option.ArgoCDNamespace)
}

func short(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return string(s.Status().Reason)
	}
	return err.Error()
}

// Namespace is the installation's namespace.
func (a *ArgoCD) Namespace() string { return a.Ns }

// Cluster is where the Applications live.
func (a *ArgoCD) Cluster() cluster.Info { return a.Objects.Info() }

// Settings reads argocd-cm and the Argo CD version.
func (a *ArgoCD) Settings(ctx context.Context, version *argocd.Version) (cluster.Settings, error) {
	// The version is looked up while argocd-cm is read: both are a round trip each, and every
	// command waits for them before its first read of an app.
	type detected struct {
		version *argocd.Version
		note    string
	}
	var found chan detected
	if version == nil {
		found = make(chan detected, 1)
		go func() {
			v, note := a.DetectVersion(ctx)
			found <- detected{v, note}
		}()
	}
	cm, err := a.Objects.Dynamic.Resource(gvrConfigMap).Namespace(a.Ns).Get(ctx, argocd.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return cluster.Settings{}, fmt.Errorf("no ConfigMap %s in namespace %s: is Argo CD installed there? Set %v to the namespace Argo CD runs in",
				argocd.ConfigMapName, a.Ns, option.ArgoCDNamespace)
		}
		return cluster.Settings{}, cluster.Explain(err, fmt.Sprintf("read ConfigMap %s/%s (Argo CD's tracking settings)", a.Ns, argocd.ConfigMapName), a.Cluster())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	var warnings []string
	if found != nil {
		d := <-found
		if version = d.version; d.note != "" {
			warnings = append(warnings, d.note)
		}
	}
	a.version = version
	s := cluster.Settings{Settings: argocd.NewSettings(data, version), Warnings: warnings, FilterKnown: true}
	filter, problems, unknownSelectors := argocd.ReadFilter(data, version)
	s.Filter, s.Warnings = filter, append(s.Warnings, problems...)
	if unknownSelectors {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is set, and Argo CD reads it only from v3.6.0; the version is unknown, so objects it would hide "+
			"are reported too (pass %v to be exact)", argocd.ConfigMapName, argocd.SettingResourceSelectors, option.ArgoCDVersion))
	}
	if s.Ambiguous {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s; pass %v to be exact", s.MethodSource, option.ArgoCDVersion))
	}
	return s, nil
}

// DetectVersion reads the Argo CD version from the application controller's workload: the image
// tag of the container that runs Argo CD (never a sidecar's), else the workload's
// app.kubernetes.io/version label. Nil, with a note saying why, when neither tells.
func (a *ArgoCD) DetectVersion(ctx context.Context) (*argocd.Version, string) {
	// Both kinds are listed at once; the StatefulSet, the controller's usual form, is judged first.
	kinds := []schema.GroupVersionResource{gvrStatefulSet, gvrDeployment}
	lists := make([]*unstructured.UnstructuredList, len(kinds))
	errs := make([]error, len(kinds))
	parallel.ForEach(len(kinds), len(kinds), func(i int) {
		lists[i], errs[i] = a.Objects.Dynamic.Resource(kinds[i]).Namespace(a.Ns).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=argocd-application-controller", Limit: 20,
		})
	})
	var seen []string
	for i, gvr := range kinds {
		list, err := lists[i], errs[i]
		if err != nil {
			seen = append(seen, fmt.Sprintf("cannot list %s (%s)", gvr.Resource, short(err)))
			continue
		}
		for _, w := range list.Items {
			if v, ok := argocd.VersionFromContainers(containers(w.Object)); ok {
				return &v, ""
			}
			if l := w.GetLabels()[argocd.LabelVersion]; l != "" {
				if v, err := argocd.ParseVersion(l); err == nil {
					return &v, ""
				}
			}
			seen = append(seen, fmt.Sprintf("%s %s runs no Argo CD image with a release tag", gvr.Resource, w.GetName()))
		}
	}
	why := "no application controller workload found"
	if len(seen) > 0 {
		why = strings.Join(seen, "; ")
	}
	return nil, fmt.Sprintf("Argo CD version unknown (%s): rules that changed between releases are applied conservatively; pass %v to be exact", why, option.ArgoCDVersion)
}

func containers(obj map[string]any) []argocd.Container {
	raw, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
	out := make([]argocd.Container, 0, len(raw))
	for _, c := range raw {
		m, _ := c.(map[string]any)
		ct := argocd.Container{}
		ct.Name, _ = m["name"].(string)
		ct.Image, _ = m["image"].(string)
		ct.Command, _, _ = unstructured.NestedStringSlice(m, "command")
		ct.Args, _, _ = unstructured.NestedStringSlice(m, "args")
		out = append(out, ct)
	}
	return out
}

func applicationsPath(namespace string) string {
	if namespace == "" {
		return "/apis/argoproj.io/v1alpha1/applications"
	}
	return "/apis/argoproj.io/v1alpha1/namespaces/" + url.PathEscape(namespace) + "/applications"
}

// ListApplications lists Applications a page at a time, decoding each page from the response body as
// it arrives, an Application at a time, straight into the local struct: thousands of Applications
// never sit in memory as bytes, maps, or a whole page.
func (a *ArgoCD) ListApplications(ctx context.Context, sel cluster.Selector) ([]argocd.Application, error) {
	var apps []argocd.Application
	keep := func(app argocd.Application) {
		if len(sel.Projects) == 0 || slices.Contains(sel.Projects, app.Project) {
			apps = append(apps, app)
		}
	}
	cont := ""
	for {
		req := a.Objects.raw.Get().AbsPath(applicationsPath(sel.Namespace)).
			Param("limit", strconv.FormatInt(a.Objects.options.PageSize, 10))
		if sel.LabelSelector != "" {
			req = req.Param("labelSelector", sel.LabelSelector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Stream(ctx)
		if token, ok := resumeToken(cont, rawError(err, nil)); ok {
			// The list outlived etcd's compaction window: resume after the last app read (eachPage).
			cont = token
			continue
		}
		if err != nil {
			return nil, cluster.Explain(rawError(err, nil), "list Argo CD Applications in "+scope(sel.Namespace), a.Cluster())
		}
		cont, err = argocd.DecodeApplicationList(body, keep)
		body.Close()
		if err != nil {
			return nil, cluster.Explain(err, "list Argo CD Applications in "+scope(sel.Namespace), a.Cluster())
		}
		if cont == "" {
			return apps, nil
		}
	}
}

// rawError turns a failed raw request into the API status it carries, so that it classifies as
// NotFound, Forbidden… like the typed clients' errors.
func rawError(err error, body []byte) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return err
}

func scope(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// GetApplication reads one Application.
func (a *ArgoCD) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	data, err := a.Objects.raw.Get().AbsPath(applicationsPath(namespace), url.PathEscape(name)).DoRaw(ctx)
	if err != nil {
		return argocd.Application{}, cluster.Explain(rawError(err, data), fmt.Sprintf("get Application %s/%s", namespace, name), a.Cluster())
	}
	return argocd.ParseApplication(data)
}

// Project reads an AppProject in Argo CD's namespace.
func (a *ArgoCD) Project(ctx context.Context, name string) (argocd.Project, error) {
	data, err := a.Objects.raw.Get().AbsPath("/apis/argoproj.io/v1alpha1/namespaces/"+url.PathEscape(a.Ns)+"/appprojects", url.PathEscape(name)).DoRaw(ctx)
	if err != nil {
		return argocd.Project{}, cluster.Explain(rawError(err, data), "get AppProject "+a.Ns+"/"+name, a.Cluster())
	}
	return argocd.ParseProject(data)
}

// Refresh asks the controller to compare the app again, the way `argocd app get --refresh` does:
// the controller removes the annotation when it has done so. A pending hard refresh is left as it
// is (a normal one would downgrade it): the annotation is read fresh, whatever app says. From v3.6
// the request also carries refresh-timestamp, with which the controller tells a request made during
// a comparison from the one it answers.
//
// A request is renewed only when it changes the object: a patch that changes nothing sends no
// watch event, and the controller, which acts on events, never sees it. From v3.6 the new
// timestamp is the change; before, a request already pending is taken off first and set again.
//
// The requests go through the metadata client: an Application's status can hold thousands of rows,
// which neither the read nor the patch's response needs to carry.
func (a *ArgoCD) Refresh(ctx context.Context, app argocd.Application, hard bool) error {
	apps := a.Objects.Metadata.Resource(GVRApplication).Namespace(app.Namespace)
	current, err := apps.Get(ctx, app.Name, metav1.GetOptions{})
	if err != nil {
		return cluster.Explain(err, "read Application "+app.Ref()+" to request a refresh", a.Cluster())
	}
	pending := current.Annotations[argocd.AnnotationRefresh]
	kind := "normal"
	if hard || pending == "hard" {
		kind = "hard"
	}
	annotations := map[string]any{argocd.AnnotationRefresh: kind}
	patch := func(annotations map[string]any) error {
		data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		if err != nil {
			return err
		}
		if _, err = apps.Patch(ctx, app.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: a.Objects.FieldManager}); err != nil {
			return cluster.Explain(err, "request a refresh of Application "+app.Ref(), a.Cluster())
		}
		return nil
	}
	switch {
	case argocd.RefreshTimestampSupported(a.version):
		annotations[argocd.AnnotationRefreshTimestamp] = time.Now().UTC().Format(time.RFC3339Nano)
	case pending == kind:
		if err := patch(map[string]any{argocd.AnnotationRefresh: nil}); err != nil {
			return err
		}
	}
	return patch(annotations)
}

// Destination returns the objects of the cluster the app deploys to.
func (a *ArgoCD) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	if app.Destination.InCluster() {
		return a.inCluster(), nil
	}
	if a.Destinations == nil {
		return nil, fmt.Errorf("Application %s deploys to cluster %s: reach it with %v %s=CONTEXT, or let unprune use Argo CD's own credentials for it with %v=argocd",
			app.Ref(), app.Destination, option.ClusterContext, clusterKey(app.Destination), option.ClusterCredentials)
	}
	objects, err := a.Destinations.Resolve(ctx, app.Destination)
	if err != nil {
		return nil, fmt.Errorf("Application %s deploys to %w", app.Ref(), err)
	}
	return objects, nil
}

// inCluster is the management cluster seen as Argo CD's "in-cluster" destination.
func (a *ArgoCD) inCluster() cluster.Objects {
	return a.Objects
}

func clusterKey(d argocd.Destination) string {
	if d.Name != "" {
		return d.Name
	}
	return d.Server
}

// Reach returns the objects of the cluster d names: the cluster Argo CD runs in, or a destination
// resolved as for an app.
func (a *ArgoCD) Reach(ctx context.Context, d argocd.Destination) (cluster.Objects, error) {
	if d.InCluster() || d.Name == argocd.InClusterName {
		return a.inCluster(), nil
	}
	if a.Destinations == nil {
		return nil, fmt.Errorf("cluster %s: no way to reach it was given", d)
	}
	return a.Destinations.Resolve(ctx, d)
}

// Manifests needs Argo CD's repo-server, which only Argo CD's API reaches.
func (a *ArgoCD) Manifests(context.Context, argocd.Application, string) ([]string, error) {
	return nil, fmt.Errorf("rendering an app's manifests at a revision needs Argo CD's repo-server: %w", cluster.ErrUnsupported)
}

// ControllerIdentity is the controller's ServiceAccount (ControllerServiceAccount).
func (a *ArgoCD) ControllerIdentity(ctx context.Context) string {
	return a.ControllerServiceAccount(ctx)
}

// ControllerServiceAccount is the user Argo CD's application controller acts as in the cluster it
// runs in: its service account, when one exists under the name Argo CD's manifests and Helm chart
// give it; empty otherwise (a controller run with other credentials).
func (a *ArgoCD) ControllerServiceAccount(ctx context.Context) string {
	const name = "argocd-application-controller"
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	if _, err := a.Objects.Metadata.Resource(gvr).Namespace(a.Ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return ""
	}
	return "system:serviceaccount:" + a.Ns + ":" + name
}
