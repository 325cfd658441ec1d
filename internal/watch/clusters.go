package watch

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
)

var gvrSecret = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// watchClusterSecrets sets up the informer of Argo CD's cluster Secrets (the label
// argocd.argoproj.io/secret-type=cluster, in Argo CD's namespace) that the destinations resolve
// through: a cluster added, a Secret whose config changed (a rotated token) and a cluster removed
// take effect at once, without a restart. The informer keeps of each Secret only the name, server
// and config. It runs when the watch may use Argo CD's credentials (--cluster-credentials=argocd);
// with kubeconfig contexts only, the Secrets only give a cluster its other name (server or name) and
// are listed once, a ServiceAccount that may not list them being no less able to judge.
func (mgr *manager) watchClusterSecrets() {
	d := mgr.destinations
	if d == nil || !mgr.cfg.ArgoCDCredentials {
		return
	}
	inf := mgr.newDynamicInformer(gvrSecret, mgr.cfg.ArgoCDNamespace, func(o *metav1.ListOptions) {
		o.AllowWatchBookmarks = true
		o.LabelSelector = kube.LabelSecretType + "=" + kube.SecretTypeCluster
	}, nil)
	_ = inf.SetTransform(kube.TrimClusterSecret)
	name := informerName(gvrSecret, mgr.cfg.ArgoCDNamespace)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { mgr.clustersChanged() },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*unstructured.Unstructured); ok && o.GetResourceVersion() == obj.(*unstructured.Unstructured).GetResourceVersion() {
				return
			}
			mgr.clustersChanged()
		},
		DeleteFunc: func(any) { mgr.clustersChanged() },
	})
	d.Source = func() ([]*unstructured.Unstructured, error) {
		if !inf.HasSynced() {
			return nil, fmt.Errorf("not listed yet (see unprune_informer_healthy{informer=%q})", name)
		}
		var out []*unstructured.Unstructured
		for _, obj := range inf.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				out = append(out, u)
			}
		}
		return out, nil
	}
	mgr.clusterSecrets = inf
}

// clustersChanged follows a cluster Secret's change: the clients (and the caches of their answers)
// of a cluster whose Secret changed or went are dropped, and every app deploying to another cluster
// than Argo CD's is evaluated again — a cluster's name or server may have changed with it.
func (mgr *manager) clustersChanged() {
	if mgr.destinations == nil {
		return
	}
	mgr.argo.Retain(func(o cluster.Objects) bool { return mgr.destinations.Current(context.Background(), o) })
	for _, inf := range mgr.apps {
		for _, obj := range inf.GetStore().List() {
			if a := mgr.informed.AsApp(obj); a != nil && laneOf(a.Unstructured) != inClusterLane {
				mgr.enqueue(obj)
			}
		}
	}
}
