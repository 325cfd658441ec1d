package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// OwnedApplications lists the Applications of namespace that the object of uid owns, a page at a
// time, as the ApplicationSet controller finds its apps (by ownerReference).
func (a *ArgoCD) OwnedApplications(ctx context.Context, namespace, uid string) ([]argocd.Whole, error) {
	var out []argocd.Whole
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := a.Objects.Dynamic.Resource(GVRApplication).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, cluster.Explain(err, "list the Applications of namespace "+namespace, a.Objects.Info())
		}
		for _, item := range list.Items {
			for _, o := range item.GetOwnerReferences() {
				if string(o.UID) == uid {
					out = append(out, argocd.ParseWhole(item.Object))
					break
				}
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
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
