package session

import (
	"io"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
)

// Via is how Argo CD and the clusters are reached.
type Via string

const (
	// ViaKube: the user's kubeconfig, for Argo CD's cluster and (by context, or with Argo CD's
	// credentials when allowed) its destinations.
	ViaKube Via = "kube"
	// ViaArgoCD: argocd-server's API, with its credentials and under its RBAC.
	ViaArgoCD Via = "argocd"
)

// Capabilities are what a backend can do. Commands ask them instead of asking which backend the
// session reaches Argo CD and the clusters through.
type Capabilities struct {
	// DryRun: a write can be sent as a server-side dry run, and a DELETE probed with one.
	DryRun bool
	// StoredObjects: objects are read as the cluster stores them (argocd-server masks Secrets' data).
	StoredObjects bool
	// Preconditions: Application objects can be created, and patched and deleted with uid and
	// resourceVersion preconditions.
	Preconditions bool
	// KubernetesAPI: the Kubernetes API itself — list and watch, objects of any kind (admission
	// policies, the guards' labels and annotations) — is reached, not only what Argo CD's API offers.
	KubernetesAPI bool
}

// Capabilities are what the backend v chooses can do: everything through the kubeconfig; through
// argocd-server's API only what it offers (its resource actions and patches, no dry run, no
// precondition, masked Secrets).
func (v Via) Capabilities() Capabilities {
	if v == ViaArgoCD {
		return Capabilities{}
	}
	return Capabilities{DryRun: true, StoredObjects: true, Preconditions: true, KubernetesAPI: true}
}

// ServerNamed reports whether argocd-server can be asked besides the Kubernetes API: the backend is
// its API, or its address is given as a flag or in $ARGOCD_SERVER (the argocd CLI's saved login is
// used only with ViaArgoCD).
func (c Config) ServerNamed(getenv func(string) string) bool {
	return c.Via == ViaArgoCD || c.API.Server != "" || getenv("ARGOCD_SERVER") != ""
}

// ConnectServer connects to argocd-server as the configuration says, reading the environment
// through getenv.
func (c Config) ConnectServer(getenv func(string) string) (*argocdapi.Client, error) {
	opts := c.API
	opts.Getenv, opts.Timeout = getenv, c.RequestTimeout
	if opts.Context == "" {
		opts.Context = c.ArgoCDContext
	}
	return argocdapi.Connect(opts)
}

// Config is the global configuration, parsed and checked from the flags before anything connects.
type Config struct {
	// Kubeconfig is kubectl's flags: --kubeconfig, --context, --request-timeout, --as, ….
	Kubeconfig *genericclioptions.ConfigFlags
	Via        Via
	// API is how argocd-server is reached, with ViaArgoCD.
	API argocdapi.Options

	// ArgoCDNamespace is where Argo CD runs; empty means found by argocd-cm's labels.
	ArgoCDNamespace string
	// ArgoCDContext names the argocd CLI's context with ViaArgoCD. With ViaKube the caller sets
	// Kubeconfig's context to it: Argo CD's cluster is the one commands start from.
	ArgoCDContext string
	// ArgoCDVersion is what the user said Argo CD runs; nil means detected.
	ArgoCDVersion *argocd.Version

	// QPS and Burst bound each API server client.
	QPS   float32
	Burst int
	// FieldManager names unprune's writes.
	FieldManager string
	// JournalDir is where journals are; empty means the default ($XDG_STATE_HOME/unprune/journal).
	JournalDir string

	// ClusterContexts maps destination clusters (Argo CD's name or server URL) to kubeconfig
	// contexts.
	ClusterContexts map[string]string
	// ArgoCDCredentials allows the credentials of Argo CD's cluster Secrets.
	ArgoCDCredentials bool

	// RequestTimeout bounds each request; 0 means client-go's default.
	RequestTimeout time.Duration
	// Warnings receives what the user should know but that does not stop the command.
	Warnings io.Writer
	// Now and Getenv are the clock and the environment; nil means the process's.
	Now    func() time.Time
	Getenv func(string) string
}
