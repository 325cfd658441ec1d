package watch

import (
	"context"
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
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/watch/exposition"
)

// swappingArgo is an installation whose one remote destination is reached by clients that a test
// replaces, as a rotated cluster Secret replaces them.
type swappingArgo struct {
	*clustertest.ArgoCD
	dest cluster.Objects
}

func (a *swappingArgo) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return a.dest, nil
}

// TestNewClientsDropTheirDestinationsCache: new clients for a destination (its Secret's config
// changed) get a new cache, and the stale answers the old one served are forgotten; retain drops
// the cache of clients no longer current (their Secret removed), never the cluster Argo CD runs in.
func TestNewClientsDropTheirDestinationsCache(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(nil, &v)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	first := clustertest.NewCluster("far", "https://127.0.0.2:6443")
	inner := &swappingArgo{ArgoCD: clustertest.NewArgoCD("argocd", home, s), dest: first}
	a := newCachingArgoCD(inner, 10, time.Minute, nil)
	app := argocd.Application{Name: "app", Destination: argocd.Destination{Name: "far"}}
	ctx := context.Background()

	c1, err := a.Destination(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	a.stale.serve("far|https://127.0.0.2:6443|meta|/v1/namespaces//x", time.Unix(1, 0))
	if again, _ := a.Destination(ctx, app); again != c1 {
		t.Fatalf("the same clients must keep their cache")
	}
	inner.dest = clustertest.NewCluster("far", "https://127.0.0.2:6443")
	c2, _ := a.Destination(ctx, app)
	if c2 == c1 || c2.(*cachedObjects).inner != inner.dest {
		t.Fatalf("new clients kept the old cache")
	}
	if !a.oldestStale().IsZero() {
		t.Errorf("the old cache's stale answers are still counted")
	}
	a.caches["in-cluster|"+argocd.InClusterServer] = newCachedObjects(home, 10, time.Minute, nil, a.stale)
	a.retain(func(o cluster.Objects) bool { return false })
	if _, ok := a.caches["far|https://127.0.0.2:6443"]; ok {
		t.Errorf("a destination whose clients are not current kept its cache")
	}
	if _, ok := a.caches["in-cluster|"+argocd.InClusterServer]; !ok {
		t.Errorf("the cluster Argo CD runs in lost its cache")
	}
}

// TestClusterSecretsInformerFeedsTheDestinations: with Argo CD's credentials, the destinations
// resolve through the watch's informer of cluster Secrets — a Secret created after the start is
// found, a rotated token is used, a removed Secret fails the cluster — and each change evaluates the
// apps of other clusters again.
func TestClusterSecretsInformerFeedsTheDestinations(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kube.GVRApplication: "ApplicationList", gvrConfigMap: "ConfigMapList", gvrAppProject: "AppProjectList", gvrSecret: "SecretList"})
	cfg := Config{ArgoCDNamespace: "argocd", ArgoCDCredentials: true, Workers: 1, CacheSize: 10, CacheTTL: time.Minute, Resync: time.Minute}
	w := &watcher{cfg: cfg, log: &logger{out: io.Discard}, metrics: exposition.NewMetrics(nil), dyn: dyn, listers: newListers(),
		ns: appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd"}}, argo: newCachingArgoCD(nil, 10, time.Minute, nil),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	d := &kube.Destinations{Namespace: "argocd", ArgoCDCredentials: true}
	w.destinations = d
	w.informers()
	if w.clusterSecrets == nil || !slices.Contains(w.informersToRun(), w.clusterSecrets) {
		t.Fatal("with Argo CD's credentials, the cluster Secrets' informer runs and is waited for")
	}
	ctx := t.Context()
	apps := dyn.Resource(kube.GVRApplication).Namespace("argocd")
	if _, err := apps.Create(ctx, applicationObject("far-app", argocd.Destination{Name: "far"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, inf := range w.informersToRun() {
		go inf.RunWithContext(ctx)
	}
	eventually(t, 10*time.Second, "informers synced", func() bool {
		for _, inf := range w.informersToRun() {
			if !inf.HasSynced() {
				return false
			}
		}
		return true
	})
	for w.queue.Len() > 0 {
		k, _ := w.queue.Get()
		w.queue.Done(k)
		w.queue.Forget(k)
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
	eventually(t, 10*time.Second, "the other cluster's app evaluated again", func() bool { return w.queue.Len() == 1 })
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
