package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// GVRApplicationSet is Argo CD's ApplicationSet resource.
var GVRApplicationSet = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// GetApplicationSet reads an ApplicationSet in full.
func (a *ArgoCD) GetApplicationSet(ctx context.Context, namespace, name string) (map[string]any, error) {
	u, err := a.Objects.Dynamic.Resource(GVRApplicationSet).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, cluster.Explain(err, "read ApplicationSet "+namespace+"/"+name, a.Objects.Info())
	}
	return u.Object, nil
}

// OwnedApplications lists the Applications of namespace whose controller ownerReference is the
// ApplicationSet named set, a page at a time: the apps the set controller considers its own
// (applicationset_controller.go getCurrentApplications, through its .metadata.controller index:
// metav1.GetControllerOf, apiVersion argoproj.io/v1alpha1, kind ApplicationSet, by name).
func (a *ArgoCD) OwnedApplications(ctx context.Context, namespace, set string) ([]argocd.Whole, error) {
	var out []argocd.Whole
	ri := a.Objects.Dynamic.Resource(GVRApplication).Namespace(namespace)
	p := pager.New(resumingPages(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, opts) }))
	p.PageSize = 500
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		item := obj.(*unstructured.Unstructured)
		owner := metav1.GetControllerOf(item)
		if owner != nil && owner.APIVersion == "argoproj.io/v1alpha1" && owner.Kind == "ApplicationSet" && owner.Name == set {
			out = append(out, argocd.ParseWhole(item.Object))
		}
		return nil
	})
	if err != nil {
		return nil, cluster.Explain(err, "list the Applications of namespace "+namespace, a.Objects.Info())
	}
	return out, nil
}

// ClusterSecrets reads what the clusters generator reads of Argo CD's cluster Secrets: name,
// server, project, labels and annotations. Credentials are never read into it.
func (a *ArgoCD) ClusterSecrets(ctx context.Context) ([]appset.Cluster, error) {
	list, err := a.Objects.Dynamic.Resource(gvrSecret).Namespace(a.Ns).List(ctx, metav1.ListOptions{LabelSelector: LabelSecretType + "=" + SecretTypeCluster})
	if err != nil {
		return nil, cluster.Explain(err, "list Argo CD's cluster Secrets", a.Objects.Info())
	}
	out := []appset.Cluster{}
	for _, item := range list.Items {
		data, _ := item.Object["data"].(map[string]any)
		out = append(out, appset.Cluster{Name: decode(data["name"]), Server: decode(data["server"]), Project: decode(data["project"]),
			Labels: item.GetLabels(), Annotations: item.GetAnnotations()})
	}
	return out, nil
}
