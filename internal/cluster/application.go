// Package cluster reads what unprune needs from the Kubernetes API: Argo CD's Applications (into small
// local structs, not Argo CD's Go types), its settings and version, and the live objects the apps list.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/argocd"
)

// GVRApplication is Argo CD's Application resource.
var GVRApplication = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// InClusterServer is the destination Argo CD uses for the cluster it runs in.
const InClusterServer = "https://kubernetes.default.svc"

// Application is the part of an Argo CD Application unprune reasons about.
type Application struct {
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Project         string
	DestServer      string
	DestName        string
	DestNamespace   string
	Automated       bool
	AutoPrune       bool
	SyncOptions     []string
	SyncStatus      string
	Revision        string
	// OperationPhase is the phase of the current or last operation; Operation is true when one is
	// requested or running, during which changing its resources races the sync.
	OperationPhase string
	Operation      bool
	// RefreshPending is true while a requested refresh has not been done (the controller removes
	// the annotation once it compared the app).
	RefreshPending bool
	Resources      []Resource
}

// Resource is one row of .status.resources.
type Resource struct {
	Group           string `json:"group,omitempty"`
	Version         string `json:"version"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	Status          string `json:"status,omitempty"`
	RequiresPruning bool   `json:"requiresPruning,omitempty"`
}

// GroupVersionKind of the row.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// String renders kind[.group]/[namespace/]name the way kubectl users read it.
func (r Resource) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace != "" {
		return fmt.Sprintf("%s/%s/%s", kind, r.Namespace, r.Name)
	}
	return kind + "/" + r.Name
}

// Pruning lists the rows that require pruning.
func (a Application) Pruning() []Resource {
	var out []Resource
	for _, r := range a.Resources {
		if r.RequiresPruning {
			out = append(out, r)
		}
	}
	return out
}

// InCluster reports whether the app deploys to the cluster unprune is talking to. Apps deploying
// elsewhere keep their live objects in another cluster, which a different --context must reach.
func (a Application) InCluster() bool {
	return (a.DestServer == "" && (a.DestName == "" || a.DestName == "in-cluster")) || a.DestServer == InClusterServer
}

// Ref is namespace/name.
func (a Application) Ref() string { return a.Namespace + "/" + a.Name }

type applicationDoc struct {
	Metadata struct {
		Namespace       string            `json:"namespace"`
		Name            string            `json:"name"`
		UID             string            `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Project     string `json:"project"`
		Destination struct {
			Server    string `json:"server"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"destination"`
		SyncPolicy *struct {
			Automated *struct {
				Enabled *bool `json:"enabled"`
				Prune   bool  `json:"prune"`
			} `json:"automated"`
			SyncOptions []string `json:"syncOptions"`
		} `json:"syncPolicy"`
	} `json:"spec"`
	Operation *json.RawMessage `json:"operation"`
	Status    struct {
		Sync struct {
			Status   string `json:"status"`
			Revision string `json:"revision"`
		} `json:"sync"`
		Resources      []Resource `json:"resources"`
		OperationState *struct {
			Phase string `json:"phase"`
		} `json:"operationState"`
	} `json:"status"`
}

// ParseApplication converts an Application object into the local struct.
func ParseApplication(u *unstructured.Unstructured) (Application, error) {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return Application{}, err
	}
	var d applicationDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return Application{}, fmt.Errorf("application %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	a := Application{
		Namespace:       d.Metadata.Namespace,
		Name:            d.Metadata.Name,
		UID:             d.Metadata.UID,
		ResourceVersion: d.Metadata.ResourceVersion,
		Project:         d.Spec.Project,
		DestServer:      d.Spec.Destination.Server,
		DestName:        d.Spec.Destination.Name,
		DestNamespace:   d.Spec.Destination.Namespace,
		SyncStatus:      d.Status.Sync.Status,
		Revision:        d.Status.Sync.Revision,
		Resources:       d.Status.Resources,
		Operation:       d.Operation != nil && string(*d.Operation) != "null",
	}
	_, a.RefreshPending = d.Metadata.Annotations[argocd.AnnotationRefresh]
	if p := d.Spec.SyncPolicy; p != nil {
		a.SyncOptions = p.SyncOptions
		// Argo CD v3.3+ can switch automation off while keeping its settings (enabled: false).
		if p.Automated != nil && (p.Automated.Enabled == nil || *p.Automated.Enabled) {
			a.Automated = true
			a.AutoPrune = p.Automated.Prune
		}
	}
	if s := d.Status.OperationState; s != nil {
		a.OperationPhase = s.Phase
		if s.Phase == "Running" || s.Phase == "Terminating" {
			a.Operation = true
		}
	}
	return a, nil
}

// ListApplications lists Applications in namespace ("" for all namespaces), a page at a time so that
// installations with thousands of apps do not load the API server with one huge response.
func (c *Client) ListApplications(ctx context.Context, namespace string) ([]Application, error) {
	var apps []Application
	opts := metav1.ListOptions{Limit: c.pageSize()}
	for {
		list, err := c.Dynamic.Resource(GVRApplication).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, explain(err, "list Argo CD Applications", namespaceScope(namespace))
		}
		for i := range list.Items {
			a, err := ParseApplication(&list.Items[i])
			if err != nil {
				return nil, err
			}
			apps = append(apps, a)
		}
		if list.GetContinue() == "" {
			return apps, nil
		}
		opts.Continue = list.GetContinue()
	}
}

// GetApplication reads one Application.
func (c *Client) GetApplication(ctx context.Context, namespace, name string) (Application, error) {
	u, err := c.Dynamic.Resource(GVRApplication).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Application{}, explain(err, fmt.Sprintf("get Application %s/%s", namespace, name), "")
	}
	return ParseApplication(u)
}

func namespaceScope(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
