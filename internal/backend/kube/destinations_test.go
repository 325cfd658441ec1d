package kube

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// clusterSecretObject is an Argo CD cluster Secret as the API server stores it (data in base64).
func clusterSecretObject(secretName, name, server, config string) *unstructured.Unstructured {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": secretName, "namespace": "argocd", "labels": map[string]any{LabelSecretType: SecretTypeCluster}},
		"data":     map[string]any{"name": enc(name), "server": enc(server), "config": enc(config)},
	}}
}

// destinations resolves over a management cluster holding secrets; contexts maps clusters to
// kubeconfig contexts, and every context leads to 127.0.0.1.
func destinations(t *testing.T, credentials bool, contexts map[string]string, secrets ...runtime.Object) (*Destinations, *[]string) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvrSecret: "SecretList"}, secrets...)
	var asked []string
	d := &Destinations{
		Management:        &Objects{Clients: &Clients{Dynamic: dyn, Info: cluster.Info{Name: argocd.InClusterName}}},
		Namespace:         "argocd",
		Contexts:          contexts,
		ArgoCDCredentials: credentials,
		FromContext: func(context string) (*rest.Config, error) {
			asked = append(asked, context)
			return &rest.Config{Host: "https://127.0.0.1:7443"}, nil
		},
	}
	return d, &asked
}

func TestDestinationsReachAClusterByAContextMappedToEitherName(t *testing.T) {
	secret := clusterSecretObject("cluster-prod", "prod-eu", "https://127.0.0.2:6443", `{"bearerToken":"s3cret"}`)
	d, asked := destinations(t, false, map[string]string{"prod-eu": "prod-admin"}, secret)
	// The app names the cluster by server; the user mapped its name: the Secret links the two.
	objects, err := d.Resolve(context.Background(), argocd.Destination{Server: "https://127.0.0.2:6443/"})
	if err != nil {
		t.Fatal(err)
	}
	info := objects.Info()
	if info.Via != cluster.ViaKubeconfig || info.Context != "prod-admin" || info.Name != "prod-eu" || info.Server != "https://127.0.0.2:6443" {
		t.Errorf("info = %+v", info)
	}
	again, err := d.Resolve(context.Background(), argocd.Destination{Name: "prod-eu"})
	if err != nil || again != objects || len(*asked) != 1 {
		t.Errorf("second resolve: %v, same clients %v, contexts asked %v: a cluster is connected once", err, again == objects, *asked)
	}
}

func TestDestinationsUseArgoCDsCredentialsOnlyWhenAllowed(t *testing.T) {
	secret := clusterSecretObject("cluster-prod", "prod-eu", "https://127.0.0.2:6443", `{"bearerToken":"s3cret","tlsClientConfig":{"insecure":true}}`)
	d, _ := destinations(t, false, nil, secret)
	_, err := d.Resolve(context.Background(), argocd.Destination{Name: "prod-eu"})
	if err == nil || !strings.Contains(err.Error(), "prod-eu=CONTEXT") || !strings.Contains(err.Error(), "Argo CD's own credentials") {
		t.Errorf("without permission: %v; want both ways named", err)
	}
	d, _ = destinations(t, true, nil, secret)
	objects, err := d.Resolve(context.Background(), argocd.Destination{Name: "prod-eu"})
	if err != nil {
		t.Fatal(err)
	}
	o := objects.(*Objects)
	if o.Info().Via != cluster.ViaArgoCDCredentials || o.Clients.Config.BearerToken != "s3cret" || !o.Clients.Config.Insecure || o.Clients.Config.Host != "https://127.0.0.2:6443" {
		t.Errorf("info %+v, config host %s insecure %v", o.Info(), o.Clients.Config.Host, o.Clients.Config.Insecure)
	}
}

func TestDestinationsRefuseWhatArgoCDRefusesAndNeverSayACredential(t *testing.T) {
	tests := []struct {
		name    string
		secrets []runtime.Object
		dest    argocd.Destination
		want    string
	}{
		{"two Secrets for one server", []runtime.Object{
			clusterSecretObject("a", "prod", "https://127.0.0.2:6443", `{}`),
			clusterSecretObject("b", "prod-again", "https://127.0.0.2:6443", `{}`),
		}, argocd.Destination{Server: "https://127.0.0.2:6443"}, "matches several cluster Secrets (a, b)"},
		{"no Secret", nil, argocd.Destination{Name: "prod"}, "Argo CD has no cluster Secret for it"},
		{"AWS IAM", []runtime.Object{clusterSecretObject("a", "eks", "https://127.0.0.3", `{"awsAuthConfig":{"clusterName":"eks","roleARN":"arn:s3cret"}}`)},
			argocd.Destination{Name: "eks"}, "authenticates with AWS IAM"},
		{"config not JSON", []runtime.Object{clusterSecretObject("a", "bad", "https://127.0.0.4", `{"bearerToken":"s3cret"`)},
			argocd.Destination{Name: "bad"}, "is not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := destinations(t, true, nil, tc.secrets...)
			_, err := d.Resolve(context.Background(), tc.dest)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}

func TestExecProviderAndProxyComeFromTheSecret(t *testing.T) {
	s := clusterSecret{secretName: "a", name: "gke", server: "https://127.0.0.5",
		config: []byte(`{"execProviderConfig":{"command":"argocd-k8s-auth","args":["gcp"],"env":{"B":"2","A":"1"},"apiVersion":"client.authentication.k8s.io/v1beta1"},"proxyUrl":"http://127.0.0.9:3128"}`)}
	cfg, err := s.restConfig()
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.ExecProvider
	if e == nil || e.Command != "argocd-k8s-auth" || len(e.Env) != 2 || e.Env[0].Name != "A" || e.InteractiveMode != "Never" {
		t.Fatalf("exec = %+v", e)
	}
	u, err := cfg.Proxy(nil)
	if err != nil || u.String() != "http://127.0.0.9:3128" {
		t.Errorf("proxy = %v, %v", u, err)
	}
	s.config = []byte(`{"proxyUrl":"::not a url"}`)
	if _, err := s.restConfig(); err == nil || !strings.Contains(err.Error(), "proxyUrl in Secret a does not parse") {
		t.Errorf("bad proxy: %v", err)
	}
}

// TestDestinationsFollowTheirSource: with a Source (a watch's informer), a cluster Secret added
// later is found, a changed config gets a new client and a removed Secret fails the cluster —
// without a new Destinations; a failed listing is asked again.
func TestDestinationsFollowTheirSource(t *testing.T) {
	var items []*unstructured.Unstructured
	var listErr error
	d, _ := destinations(t, true, nil)
	d.Source = func() ([]*unstructured.Unstructured, error) { return items, listErr }
	ctx := context.Background()
	far := argocd.Destination{Name: "far"}

	listErr = errors.New("not listed yet")
	if _, err := d.Resolve(ctx, far); err == nil || !strings.Contains(err.Error(), "not listed yet") {
		t.Fatalf("listing failed: %v", err)
	}
	listErr = nil
	if _, err := d.Resolve(ctx, far); err == nil || !strings.Contains(err.Error(), "no cluster Secret") {
		t.Fatalf("no Secret yet: %v", err)
	}
	items = []*unstructured.Unstructured{clusterSecretObject("cluster-far", "far", "https://127.0.0.2:6443", `{"bearerToken":"one"}`)}
	first, err := d.Resolve(ctx, far)
	if err != nil {
		t.Fatalf("Secret added: %v", err)
	}
	if again, _ := d.Resolve(ctx, far); again != first || !d.Current(ctx, first) {
		t.Errorf("an unchanged Secret must keep its client")
	}
	items = []*unstructured.Unstructured{clusterSecretObject("cluster-far", "far", "https://127.0.0.2:6443", `{"bearerToken":"two"}`)}
	if d.Current(ctx, first) {
		t.Errorf("a client built from a rotated token is still current")
	}
	rotated, err := d.Resolve(ctx, far)
	if err != nil || rotated == first || rotated.(*Objects).Clients.Config.BearerToken != "two" {
		t.Fatalf("token rotated: %v, new client %v", err, rotated != first)
	}
	items = nil
	if d.Current(ctx, rotated) {
		t.Errorf("a client of a removed Secret is still current")
	}
	if _, err := d.Resolve(ctx, far); err == nil || !strings.Contains(err.Error(), "no cluster Secret") {
		t.Errorf("Secret removed: %v", err)
	}
}

func TestNewClientsTimeout(t *testing.T) {
	c, err := NewClients(&rest.Config{Host: "https://127.0.0.1:1"}, cluster.Info{}, nil, Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.Timeout != 3*time.Second {
		t.Errorf("timeout %s", c.Config.Timeout)
	}
}

func TestTrimClusterSecretKeepsOnlyWhatResolveReads(t *testing.T) {
	s := clusterSecretObject("cluster-far", "far", "https://127.0.0.2:6443", `{"bearerToken":"one"}`)
	s.Object["data"].(map[string]any)["other"] = "eA=="
	s.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
	out, err := TrimClusterSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*unstructured.Unstructured)
	data := u.Object["data"].(map[string]any)
	if len(data) != 3 || data["other"] != nil || u.GetManagedFields() != nil || u.GetName() != "cluster-far" || parseClusterSecret(u).name != "far" {
		t.Errorf("trimmed: %v", u.Object)
	}
}
