// Package kube is the Kubernetes API backend: the user's kubeconfig (or Argo CD's cluster
// credentials) reaching the cluster where Argo CD keeps its Applications and the destination
// clusters that hold the live objects. Reads go in bulk (paginated metadata-only LISTs per kind and
// namespace), patches are JSON merge patches of metadata through the metadata client.
package kube

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/version"
)

// Options tune the clients.
type Options struct {
	// QPS and Burst bound the request rate of the client (client-go's token bucket); a negative
	// QPS sets no client-side limit (rest.RESTClientFor builds no limiter), 0 keeps the config's.
	QPS   float32
	Burst int
	// Workers bounds concurrent requests of bulk reads.
	Workers int
	// PageSize bounds LIST responses; 0 means 500.
	PageSize int64
	// WrapTransport wraps every request's transport (a long-running watch counts its requests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Timeout bounds each request (rest.Config.Timeout), when set: a destination that stops
	// answering fails a read after it instead of holding the caller. Not for clients that watch.
	Timeout time.Duration
	// Uncounted are kinds CountInNamespace leaves out without asking — Pods and ConfigMaps for a
	// watch whose ServiceAccount is not granted a cluster-wide list of them.
	Uncounted []schema.GroupResource
}

// Clients are the Kubernetes clients of one cluster.
type Clients struct {
	Info      cluster.Info
	Config    *rest.Config
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	Mapper    meta.RESTMapper
	// raw reads Applications as JSON, decoded straight into the local struct.
	raw     rest.Interface
	options Options
	// quietMetadata lists without printing the API server's deprecation warnings.
	quietMetadata metadata.Interface
}

// NewClients builds the clients for a REST config. mapper may be nil to discover with a cache in
// memory (kubectl's ConfigFlags give one cached on disk for the main cluster).
func NewClients(cfg *rest.Config, info cluster.Info, mapper meta.RESTMapper, opts Options) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	if opts.QPS != 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst != 0 {
		cfg.Burst = opts.Burst
	}
	if opts.Timeout > 0 {
		cfg.Timeout = opts.Timeout
	}
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	cfg.UserAgent = version.UserAgent()
	if opts.WrapTransport != nil {
		cfg.Wrap(opts.WrapTransport)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", info, err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	// Counting what a deletion takes with it lists every kind, deprecated ones (v1 Endpoints)
	// included: their deprecation warnings would only be noise.
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler = rest.NoWarnings{}
	countMD, err := metadata.NewForConfigAndClient(quiet, httpClient)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	if mapper == nil {
		// As kubectl's: short names (ns, crd) expand to their resources.
		cached := memory.NewMemCacheClient(disc)
		mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	}
	rawCfg := rest.CopyConfig(cfg)
	rawCfg.GroupVersion = nil
	rawCfg.APIPath = "/"
	rawCfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	raw, err := rest.UnversionedRESTClientForConfigAndClient(rawCfg, httpClient)
	if err != nil {
		return nil, err
	}
	if info.URL == "" && info.Server != cfg.Host {
		info.URL = cfg.Host
	}
	return &Clients{Info: info, Config: cfg, Dynamic: dyn, Metadata: md, Discovery: disc, Mapper: mapper, raw: raw, options: opts, quietMetadata: countMD}, nil
}

// Ping checks, with one request bounded by timeout, that the API server answers: a cluster that
// cannot be reached fails here with one clear line instead of a retrying discovery.
func (c *Clients) Ping(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var status int
	err := c.raw.Get().AbsPath("/version").Do(ctx).StatusCode(&status).Error()
	if err != nil && status == 0 {
		return &cluster.UnreachableError{Server: c.Config.Host, Err: err}
	}
	if status == http.StatusUnauthorized {
		return cluster.Explain(err, "connect", c.Info)
	}
	return nil
}
