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
