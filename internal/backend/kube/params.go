package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// CmdParams reads argocd-cmd-params-cm in Argo CD's namespace: every key is optional, and a missing
// ConfigMap means every component runs with its defaults (the manifests mark each reference
// optional).
func (a *ArgoCD) CmdParams(ctx context.Context) (map[string]string, error) {
	u, err := a.Objects.Dynamic.Resource(gvrConfigMap).Namespace(a.Ns).Get(ctx, argocd.CmdParamsConfigMap, metav1.GetOptions{})
	if cluster.IsNotFound(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, cluster.Explain(err, "read ConfigMap "+a.Ns+"/"+argocd.CmdParamsConfigMap, a.Objects.Info())
	}
	data, _ := u.Object["data"].(map[string]any)
	out := make(map[string]string, len(data))
	for k, v := range data {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}
