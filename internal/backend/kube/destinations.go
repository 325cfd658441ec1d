package kube

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

// LabelSecretType marks Argo CD's cluster Secrets (util/db/cluster.go).
const (
	LabelSecretType   = "argocd.argoproj.io/secret-type"
	SecretTypeCluster = "cluster"
)

var gvrSecret = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Destinations resolves Applications' destination clusters the way Argo CD does — by server URL, or
// by name through the cluster Secrets in Argo CD's namespace — and reaches each one either through
// the user's own kubeconfig (a context per cluster) or, only when asked, with the credentials in
// Argo CD's cluster Secret. Never silently: a cluster with neither is an error that says both ways.
type Destinations struct {
	// Management is the cluster Argo CD runs in, holding its cluster Secrets.
	Management *Objects
	// Namespace is Argo CD's namespace.
	Namespace string
	// Contexts maps a cluster's name or server URL to a kubeconfig context.
	Contexts map[string]string
	// ArgoCDCredentials allows using the credentials of Argo CD's cluster Secrets.
	ArgoCDCredentials bool
	// FromContext builds a client configuration from the user's kubeconfig with a context.
	FromContext  func(context string) (*rest.Config, error)
	Options      Options
	FieldManager string
	// Source, when set, returns Argo CD's cluster Secrets as they are now (a long-running watch's
	// informer) and is asked at every resolution: a new cluster, a changed config (a rotated token)
	// and a removed cluster take effect at once, and a failed listing is not failed for good. Unset,
	// the Secrets are listed once, on first use, as a one-off command needs.
	Source func() ([]*unstructured.Unstructured, error)

	mu      sync.Mutex
	secrets []clusterSecret
	read    bool
	readErr error
	// reached are the clients built, by name|server, with the route they were built for: a client
	// is reused only while its route (the context, or the Secret's config) is unchanged.
	reached map[string]reachedCluster
}

type reachedCluster struct {
	route   string
	objects *Objects
}

// clusterSecret is what unprune reads from an Argo CD cluster Secret. config holds credentials and
// never leaves this file except as a rest.Config.
type clusterSecret struct {
	secretName string
	name       string
	server     string
	config     []byte
}

var _ DestinationResolver = (*Destinations)(nil)

// Resolve returns the objects of a destination cluster.
func (d *Destinations) Resolve(ctx context.Context, dest argocd.Destination) (cluster.Objects, error) {
	name, server := dest.Name, strings.TrimRight(dest.Server, "/")
	secret, secretErr := d.find(ctx, name, server)
	if secret != nil {
		name, server = secret.name, secret.server
	}
	if name == "" && server == "" {
		return nil, fmt.Errorf("Application destination names no cluster")
	}
	key := name + "|" + server
	context, byContext := d.contextFor(name, server)
	var route string
	switch {
	case byContext:
		route = "context " + context
	case d.ArgoCDCredentials && secret != nil:
		route = secret.route()
	case d.ArgoCDCredentials:
		if secretErr == nil {
			// The cluster Secret is gone: so is the client built from it.
			d.drop(key)
		}
		return nil, d.notFound(name, server, secretErr)
	default:
		return nil, fmt.Errorf("cluster %s: reach it with %v %s=CONTEXT (a context of your kubeconfig for it), "+
			"or let unprune use Argo CD's own credentials for it with %v=argocd", describe(name, server), option.ClusterContext, keyOf(name, server), option.ClusterCredentials)
	}
	d.mu.Lock()
	if r, ok := d.reached[key]; ok && r.route == route {
		d.mu.Unlock()
		return r.objects, nil
	}
	d.mu.Unlock()
	info := cluster.Info{Name: name, Server: server}
	var cfg *rest.Config
	var err error
	if byContext {
		info.Via, info.Context = cluster.ViaKubeconfig, context
		cfg, err = d.FromContext(context)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: kubeconfig context %q: %w", describe(name, server), context, err)
		}
	} else {
		info.Via = cluster.ViaArgoCDCredentials
		if cfg, err = secret.restConfig(); err != nil {
			return nil, err
		}
	}
	clients, err := NewClients(cfg, info, nil, d.Options)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", describe(name, server), err)
	}
	o := NewObjects(clients, d.FieldManager)
	d.mu.Lock()
	if d.reached == nil {
		d.reached = map[string]reachedCluster{}
	}
	d.reached[key] = reachedCluster{route: route, objects: o}
	d.mu.Unlock()
	return o, nil
}

// route names how a Secret's cluster is reached: a changed config (a rotated token, another CA)
// is another route, and gets a new client.
func (s *clusterSecret) route() string {
	sum := sha256.Sum256(s.config)
	return "secret " + s.secretName + " " + hex.EncodeToString(sum[:])
}

func (d *Destinations) drop(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.reached, key)
}

// Current reports whether objects, returned by Resolve, are still how its cluster is reached: false
// once its cluster Secret was removed or its config changed (a caller keeping state per client then
// drops it; the next Resolve builds a new one). It drops such a client.
func (d *Destinations) Current(ctx context.Context, objects cluster.Objects) bool {
	d.mu.Lock()
	var key string
	var held reachedCluster
	for k, r := range d.reached {
		if r.objects == objects {
			key, held = k, r
		}
	}
	d.mu.Unlock()
	if key == "" {
		return false
	}
	info := held.objects.Info()
	if info.Via == cluster.ViaKubeconfig {
		return true
	}
	secret, err := d.find(ctx, info.Name, info.Server)
	if err == nil && secret != nil && secret.name == info.Name && secret.route() == held.route {
		return true
	}
	if err != nil {
		// The Secrets cannot be listed now: that says nothing about this one.
		return true
	}
	d.mu.Lock()
	if r, ok := d.reached[key]; ok && r.objects == objects {
		delete(d.reached, key)
	}
	d.mu.Unlock()
	return false
}

func describe(name, server string) string {
	switch {
	case name != "" && server != "":
		return fmt.Sprintf("%q (%s)", name, server)
	case name != "":
		return fmt.Sprintf("%q", name)
	}
	return server
}

func keyOf(name, server string) string {
	if name != "" {
		return name
	}
	return server
}

func (d *Destinations) contextFor(name, server string) (string, bool) {
	for _, k := range []string{name, server} {
		if c, ok := d.Contexts[k]; ok && k != "" {
			return c, true
		}
	}
	return "", false
}

func (d *Destinations) notFound(name, server string, readErr error) error {
	if readErr != nil {
		return fmt.Errorf("cluster %s: cannot read Argo CD's cluster Secrets in namespace %s (%v): use %v %s=CONTEXT instead",
			describe(name, server), d.Namespace, readErr, option.ClusterContext, keyOf(name, server))
	}
	return fmt.Errorf("cluster %s: Argo CD has no cluster Secret for it in namespace %s; use %v %s=CONTEXT",
		describe(name, server), d.Namespace, option.ClusterContext, keyOf(name, server))
}

// find returns the cluster Secret for a destination — the Secrets listed once, or as the Source
// holds them now — for the cluster's name and server (a destination gives one of them, --cluster-context may name the other) and for
// --cluster-credentials=argocd. Only metadata and the name and server are kept out of a Secret,
// besides the config the credentials option needs.
func (d *Destinations) find(ctx context.Context, name, server string) (*clusterSecret, error) {
	secrets, err := d.readSecrets(ctx)
	if err != nil {
		if _, ok := d.contextFor(name, server); ok && !d.ArgoCDCredentials {
			// The Secrets only add Argo CD's other name for the cluster: reports show fewer words.
			return nil, nil
		}
		return nil, err
	}
	var matches []*clusterSecret
	for i := range secrets {
		s := &secrets[i]
		if (server != "" && s.server == server) || (server == "" && name != "" && s.name == name) {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return matches[0], nil
	}
	var names []string
	for _, m := range matches {
		names = append(names, m.secretName)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("cluster %s matches several cluster Secrets (%s), as it does for Argo CD, which refuses such a destination", describe(name, server), strings.Join(names, ", "))
}

// readSecrets returns the cluster Secrets: as the Source holds them now, or as listed once.
func (d *Destinations) readSecrets(ctx context.Context) ([]clusterSecret, error) {
	if d.Source != nil {
		items, err := d.Source()
		if err != nil {
			return nil, fmt.Errorf("Argo CD's cluster Secrets: %w", err)
		}
		out := make([]clusterSecret, 0, len(items))
		for _, item := range items {
			out = append(out, parseClusterSecret(item))
		}
		return out, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.read {
		return d.secrets, d.readErr
	}
	d.read = true
	list, err := d.Management.Dynamic.Resource(gvrSecret).Namespace(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSecretType + "=" + SecretTypeCluster})
	if err != nil {
		d.readErr = cluster.Explain(err, "list Argo CD's cluster Secrets", d.Management.Info())
		return nil, d.readErr
	}
	for i := range list.Items {
		d.secrets = append(d.secrets, parseClusterSecret(&list.Items[i]))
	}
	return d.secrets, nil
}

func parseClusterSecret(item *unstructured.Unstructured) clusterSecret {
	data, _ := item.Object["data"].(map[string]any)
	s := clusterSecret{secretName: item.GetName(), name: decode(data["name"]), server: strings.TrimRight(decode(data["server"]), "/")}
	s.config = []byte(decode(data["config"]))
	return s
}

// TrimClusterSecret keeps of a cluster Secret only what Resolve reads — its name, its labels and
// the name, server and config keys of its data — for a watch's informer to hold.
func TrimClusterSecret(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	data, _ := u.Object["data"].(map[string]any)
	kept := map[string]any{}
	for _, k := range []string{"name", "server", "config"} {
		if v, ok := data[k]; ok {
			kept[k] = v
		}
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "data": kept}}
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetUID(u.GetUID())
	out.SetLabels(u.GetLabels())
	return out, nil
}

// decode reads a base64 Secret value as the dynamic client returns it.
func decode(v any) string {
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}

// clusterConfig is the part of Argo CD's ClusterConfig (pkg/apis/application/v1alpha1) unprune
// can honour.
type clusterConfig struct {
	Username        string `json:"username"`
	Password        string `json:"password"`
	BearerToken     string `json:"bearerToken"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName"`
		CertData   []byte `json:"certData"`
		KeyData    []byte `json:"keyData"`
		CAData     []byte `json:"caData"`
	} `json:"tlsClientConfig"`
	AWSAuthConfig      json.RawMessage `json:"awsAuthConfig"`
	ExecProviderConfig *struct {
		Command            string            `json:"command"`
		Args               []string          `json:"args"`
		Env                map[string]string `json:"env"`
		APIVersion         string            `json:"apiVersion"`
		InstallHint        string            `json:"installHint"`
		ProvideClusterInfo bool              `json:"provideClusterInfo"`
	} `json:"execProviderConfig"`
	DisableCompression bool   `json:"disableCompression"`
	ProxyURL           string `json:"proxyUrl"`
}

// restConfig builds a client configuration from the Secret's credentials. Errors name the cluster
// and what is missing, never a credential.
func (s *clusterSecret) restConfig() (*rest.Config, error) {
	var c clusterConfig
	if len(s.config) > 0 {
		if err := json.Unmarshal(s.config, &c); err != nil {
			return nil, fmt.Errorf("cluster %s: the config of Argo CD's cluster Secret %s is not valid JSON", describe(s.name, s.server), s.secretName)
		}
	}
	if len(c.AWSAuthConfig) > 0 && string(c.AWSAuthConfig) != "null" {
		return nil, fmt.Errorf("cluster %s authenticates with AWS IAM (awsAuthConfig in Secret %s), which unprune cannot do for Argo CD: use %v %s=CONTEXT with a kubeconfig context for it",
			describe(s.name, s.server), s.secretName, option.ClusterContext, keyOf(s.name, s.server))
	}
	cfg := &rest.Config{
		Host: s.server, Username: c.Username, Password: c.Password, BearerToken: c.BearerToken,
		DisableCompression: c.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{Insecure: c.TLSClientConfig.Insecure, ServerName: c.TLSClientConfig.ServerName,
			CertData: c.TLSClientConfig.CertData, KeyData: c.TLSClientConfig.KeyData, CAData: c.TLSClientConfig.CAData},
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: proxyUrl in Secret %s does not parse", describe(s.name, s.server), s.secretName)
		}
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return u, nil }
	}
	if e := c.ExecProviderConfig; e != nil {
		exec := &clientcmdapi.ExecConfig{Command: e.Command, Args: e.Args, APIVersion: e.APIVersion, InstallHint: e.InstallHint,
			ProvideClusterInfo: e.ProvideClusterInfo, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		for k, v := range e.Env {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
		}
		sort.Slice(exec.Env, func(i, j int) bool { return exec.Env[i].Name < exec.Env[j].Name })
		cfg.ExecProvider = exec
	}
	return cfg, nil
}
