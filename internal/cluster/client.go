package cluster

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/unprune/unprune/internal/argocd"
)

// Client reads the cluster. It holds no state beyond its clients, so one may serve concurrent calls.
type Client struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// PageSize bounds LIST responses; 0 means 500.
	PageSize int64
}

func (c *Client) pageSize() int64 {
	if c.PageSize > 0 {
		return c.PageSize
	}
	return 500
}

// explain turns API errors into messages that say what the user can do.
func explain(err error, action, scope string) error {
	switch {
	case apierrors.IsForbidden(err):
		where := ""
		if scope != "" {
			where = " in " + scope
		}
		return fmt.Errorf("%s: forbidden%s; your user needs RBAC permission for this (check with `kubectl auth can-i`): %w", action, where, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: not found: %w", action, err)
	}
	return fmt.Errorf("%s: %w", action, err)
}

var (
	gvrConfigMap   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrStatefulSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	gvrDeployment  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// FindArgoCDNamespace finds the namespace of Argo CD's argocd-cm by the labels Argo CD's manifests put
// on it. It returns fallback when nothing is found or the user may not list ConfigMaps cluster-wide.
func (c *Client) FindArgoCDNamespace(ctx context.Context, fallback string) (ns string, note string) {
	list, err := c.Dynamic.Resource(gvrConfigMap).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/part-of=argocd,app.kubernetes.io/name=argocd-cm",
		Limit:         c.pageSize(),
	})
	if err != nil {
		return fallback, fmt.Sprintf("cannot search for Argo CD's namespace (%v); assuming %q (set --argocd-namespace)", shortErr(err), fallback)
	}
	var found []string
	for _, cm := range list.Items {
		if cm.GetName() == argocd.ConfigMapName {
			found = append(found, cm.GetNamespace())
		}
	}
	switch len(found) {
	case 0:
		return fallback, ""
	case 1:
		return found[0], ""
	}
	for _, n := range found {
		if n == fallback {
			return n, fmt.Sprintf("several Argo CD installations found (%s); using %q (set --argocd-namespace)", strings.Join(found, ", "), n)
		}
	}
	return found[0], fmt.Sprintf("several Argo CD installations found (%s); using %q (set --argocd-namespace)", strings.Join(found, ", "), found[0])
}

// Settings reads argocd-cm in Argo CD's namespace and the Argo CD version, and combines them into the
// tracking settings. version, when not nil, is what the user said and wins over detection.
func (c *Client) Settings(ctx context.Context, argocdNamespace string, version *argocd.Version) (argocd.Settings, error) {
	cm, err := c.Dynamic.Resource(gvrConfigMap).Namespace(argocdNamespace).Get(ctx, argocd.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return argocd.Settings{}, fmt.Errorf("no ConfigMap %s in namespace %s: is Argo CD installed there? Set --argocd-namespace to the namespace Argo CD runs in",
				argocd.ConfigMapName, argocdNamespace)
		}
		return argocd.Settings{}, explain(err, fmt.Sprintf("read ConfigMap %s/%s (Argo CD's tracking settings)", argocdNamespace, argocd.ConfigMapName), "")
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if version == nil {
		version = c.DetectVersion(ctx, argocdNamespace)
	}
	return argocd.NewSettings(data, version), nil
}

// DetectVersion reads the Argo CD version from the application controller's workload: its image tag,
// else its app.kubernetes.io/version label. Nil when neither tells.
func (c *Client) DetectVersion(ctx context.Context, argocdNamespace string) *argocd.Version {
	for _, gvr := range []schema.GroupVersionResource{gvrStatefulSet, gvrDeployment} {
		list, err := c.Dynamic.Resource(gvr).Namespace(argocdNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=argocd-application-controller",
			Limit:         c.pageSize(),
		})
		if err != nil {
			continue
		}
		for _, w := range list.Items {
			containers, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "containers")
			for _, ct := range containers {
				m, _ := ct.(map[string]any)
				image, _ := m["image"].(string)
				if v, ok := argocd.VersionFromImage(image); ok {
					return &v
				}
			}
			if l := w.GetLabels()[argocd.LabelVersion]; l != "" {
				if v, err := argocd.ParseVersion(l); err == nil {
					return &v
				}
			}
		}
	}
	return nil
}

// Mapping resolves a status row's group/version/kind to its resource and scope.
func (c *Client) Mapping(r Resource) (*meta.RESTMapping, error) {
	gvk := r.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("the API server does not serve %s: %w", gvk, err)
	}
	return m, nil
}

// ResourceInterface is the dynamic client for the object a row names.
func (c *Client) ResourceInterface(m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(namespace)
	}
	return c.Dynamic.Resource(m.Resource)
}

// Live reads the object a status row names.
func (c *Client) Live(ctx context.Context, r Resource) (*unstructured.Unstructured, *meta.RESTMapping, error) {
	m, err := c.Mapping(r)
	if err != nil {
		return nil, nil, err
	}
	u, err := c.ResourceInterface(m, r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return nil, m, explain(err, "get "+r.String(), "")
	}
	return u, m, nil
}

// IsForbidden reports an RBAC refusal anywhere in err's chain.
func IsForbidden(err error) bool { return apierrors.IsForbidden(err) }

func shortErr(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return string(s.Status().Reason)
	}
	return err.Error()
}
