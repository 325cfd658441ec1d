package watch

import (
	"encoding/base64"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/util/workqueue"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/internal/watch/readcache"
)

// TestClusterSecretsInformerFeedsTheDestinations: with Argo CD's credentials, the destinations
// resolve through the watch's informer of cluster Secrets — a Secret created after the start is
// found, a rotated token is used, a removed Secret fails the cluster — and each change evaluates the
// apps of other clusters again.
func TestClusterSecretsInformerFeedsTheDestinations(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.GVRApplication: "ApplicationList", gvrConfigMap: "ConfigMapList", gvrAppProject: "AppProjectList", gvrSecret: "SecretList"})
	cfg := Config{ArgoCDNamespace: "argocd", ArgoCDCredentials: true, Workers: 1, CacheSize: 10, CacheTTL: time.Minute, Resync: time.Minute}
	mgr := &manager{cfg: cfg, log: &logger{out: io.Discard}, metrics: exposition.NewMetrics(nil), dyn: dyn, listers: newListers(),
		ns: appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd"}}, argo: readcache.New(nil, readcache.Options{Size: 10, TTL: time.Minute}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	d := &kube.Destinations{Namespace: "argocd", ArgoCDCredentials: true}
	mgr.destinations = d
	mgr.informers()
	if mgr.clusterSecrets == nil || !slices.Contains(mgr.informersToRun(), mgr.clusterSecrets) {
		t.Fatal("with Argo CD's credentials, the cluster Secrets' informer runs and is waited for")
	}
	ctx := t.Context()
	apps := dyn.Resource(kube.GVRApplication).Namespace("argocd")
	if _, err := apps.Create(ctx, applicationObject("far-app", argocd.Destination{Name: "far"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, inf := range mgr.informersToRun() {
		go inf.RunWithContext(ctx)
	}
	eventually(t, 10*time.Second, "informers synced", func() bool {
		for _, inf := range mgr.informersToRun() {
			if !inf.HasSynced() {
				return false
			}
		}
		return true
	})
	for mgr.queue.Len() > 0 {
		k, _ := mgr.queue.Get()
		mgr.queue.Done(k)
		mgr.queue.Forget(k)
	}
	far := argocd.Destination{Name: "far"}
	if _, err := d.Resolve(ctx, far); err == nil {
		t.Fatal("no cluster Secret yet, yet resolved")
	}
	secrets := dyn.Resource(gvrSecret).Namespace("argocd")
	secret := func(token string) *unstructured.Unstructured {
		enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "cluster-far", "namespace": "argocd", "labels": map[string]any{kube.LabelSecretType: kube.SecretTypeCluster}},
			"data":     map[string]any{"name": enc("far"), "server": enc("https://127.0.0.2:6443"), "config": enc(`{"bearerToken":"` + token + `"}`)}}}
	}
	token := func() string {
		o, err := d.Resolve(ctx, far)
		if err != nil {
			return "error: " + err.Error()
		}
		return o.(*kube.Objects).Clients.Config.BearerToken
	}
	if _, err := secrets.Create(ctx, secret("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the Secret created after the start found", func() bool { return token() == "one" })
	eventually(t, 10*time.Second, "the other cluster's app evaluated again", func() bool { return mgr.queue.Len() == 1 })
	s := secret("two")
	s.SetResourceVersion("2")
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the rotated token used", func() bool { return token() == "two" })
	if err := secrets.Delete(ctx, "cluster-far", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the removed cluster failed", func() bool { return strings.Contains(token(), "no cluster Secret") })
}
