package cli

import (
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/session"
)

// Factory is what every command receives, as kubectl's commands receive cmdutil.Factory: the
// global flags, and what is made from them on first use. A command's complete step takes what it
// needs from it (completed); Validate and Run use only that.
type Factory interface {
	// RESTClientGetter is the kubeconfig's flags (--kubeconfig, --context, -n, …).
	genericclioptions.RESTClientGetter
	// Session is the session the global flags describe, made once: it reads the clusters file and
	// connects to nothing.
	Session() (session.Session, error)
	// Config is what the global flags were parsed into.
	Config() (session.Config, error)
	// SessionFor makes a session of a configuration a command adjusted (the watch's rate limits).
	SessionFor(session.Config) session.Session
	// NamespaceFlag is -n NAMESPACE, when the user gave one.
	NamespaceFlag() (string, bool)
	// Program is how the user runs this binary (unprune, kubectl unprune, argocd unprune), for the
	// command lines that messages recommend.
	Program() string
	// Capabilities are what the backend --via chose can do, known before anything connects.
	Capabilities() session.Capabilities
}

// factory is the binaries' Factory: the flags every command shares.
type factory struct {
	*genericclioptions.ConfigFlags
	ArgoCDNamespace string
	ArgoCDVersion   string
	QPS             float32
	Burst           int
	JournalDir      string
	FieldManager    string

	// Destination clusters: --cluster-context NAME_OR_SERVER=CONTEXT, a --clusters-file with many,
	// or --cluster-credentials=argocd to use Argo CD's own.
	ClusterContexts    []string
	ClustersFile       string
	ClusterCredentials string
	ArgoCDContext      string

	// Via is how Argo CD and the clusters are reached: "kube" (the kubeconfig) or "argocd"
	// (argocd-server's API, with its credentials and under its RBAC).
	Via string
	API argocdapi.Options

	// Injected for tests; nil means the real thing.
	Now    func() time.Time
	Getenv func(string) string
	// NewSession builds the session from the parsed flags; nil means session.New (the real
	// clusters). Tests give an in-memory one.
	NewSession func(session.Config) session.Session

	streams genericiooptions.IOStreams
	program string
	// cfg is what the flags were parsed into, once; session is made from it, once.
	cfg     session.Config
	parsed  bool
	session session.Session
}

// newFactory is the global flags' defaults for the binary name.
func newFactory(name string, streams genericiooptions.IOStreams) *factory {
	f := &factory{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		// No client-side rate limit, as controller-runtime sets none on SIG API Machinery's
		// advice (kubernetes-sigs/controller-runtime#3119): --workers bounds the requests in
		// flight, and the API server's Priority and Fairness paces them. --qps sets one.
		QPS:     -1,
		Burst:   2000,
		Via:     ViaKube,
		streams: streams,
		program: displayName(name),
	}
	if name == NameArgoCDPlugin {
		// As an argocd plugin, --server is the Argo CD server's, as for the argocd CLI.
		f.ConfigFlags.APIServer = nil
		f.Via = ViaArgoCD
	}
	return f
}

func (f *factory) Program() string { return f.program }

func (f *factory) Capabilities() session.Capabilities { return session.Via(f.Via).Capabilities() }

func (f *factory) NamespaceFlag() (string, bool) {
	if f.ConfigFlags.Namespace != nil && *f.ConfigFlags.Namespace != "" {
		return *f.ConfigFlags.Namespace, true
	}
	return "", false
}

func (f *factory) Config() (session.Config, error) {
	if !f.parsed {
		cfg, err := f.config()
		if err != nil {
			return cfg, err
		}
		f.cfg, f.parsed = cfg, true
	}
	return f.cfg, nil
}

func (f *factory) Session() (session.Session, error) {
	if f.session == nil {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		f.session = f.SessionFor(cfg)
	}
	return f.session, nil
}

func (f *factory) SessionFor(cfg session.Config) session.Session {
	if f.NewSession != nil {
		return f.NewSession(cfg)
	}
	return session.New(cfg)
}

// config checks the global flags and turns them into the session's configuration.
func (f *factory) config() (session.Config, error) {
	if f.ArgoCDContext != "" && f.Via == ViaKube {
		// Argo CD's cluster is the one commands start from: its context replaces --context.
		f.ConfigFlags.Context = &f.ArgoCDContext
	}
	cfg := session.Config{
		Kubeconfig: f.ConfigFlags, Via: session.Via(f.Via), API: f.API,
		ArgoCDNamespace: f.ArgoCDNamespace, ArgoCDContext: f.ArgoCDContext,
		QPS: f.QPS, Burst: f.Burst, FieldManager: f.FieldManager, JournalDir: f.JournalDir,
		ArgoCDCredentials: f.ClusterCredentials == "argocd",
		Warnings:          f.streams.ErrOut, Now: f.Now, Getenv: f.Getenv,
	}
	if (f.QPS <= 0 && f.QPS != -1) || f.Burst <= 0 {
		return cfg, usageError("--qps must be positive, or -1 for no client-side limit; --burst must be positive")
	}
	if err := f.validateClusterFlags(); err != nil {
		return cfg, err
	}
	contexts, err := f.clusterContexts()
	if err != nil {
		return cfg, err
	}
	cfg.ClusterContexts = contexts
	if f.ArgoCDVersion != "" {
		v, err := argocd.ParseVersion(f.ArgoCDVersion)
		if err != nil {
			return cfg, usageError("--argocd-version: %v", err)
		}
		cfg.ArgoCDVersion = &v
	}
	if t := f.ConfigFlags.Timeout; t != nil && *t != "" && *t != "0" {
		if cfg.RequestTimeout, err = clientcmd.ParseTimeout(*t); err != nil {
			return cfg, usageError("--request-timeout=%q: use a duration such as 30s or 1m", *t)
		}
	}
	return cfg, nil
}

// validateClusterFlags checks how Argo CD and the destination clusters are to be reached.
func (f *factory) validateClusterFlags() error {
	switch f.Via {
	case ViaKube:
	case ViaArgoCD:
		if len(f.ClusterContexts) > 0 || f.ClustersFile != "" || f.ClusterCredentials != "" {
			return usageError("--via argocd reaches every cluster through Argo CD's API: leave out --cluster-context, --clusters-file and --cluster-credentials")
		}
	default:
		return usageError(`--via=%q: use "kube" (your kubeconfig) or "argocd" (Argo CD's API)`, f.Via)
	}
	switch f.ClusterCredentials {
	case "", "argocd":
	default:
		return usageError(`--cluster-credentials=%q: the only value is "argocd" (use Argo CD's cluster Secrets); leave it out to use your kubeconfig`, f.ClusterCredentials)
	}
	return nil
}

// clusterContexts reads --cluster-context and --clusters-file.
func (f *factory) clusterContexts() (map[string]string, error) {
	out := map[string]string{}
	for _, m := range f.ClusterContexts {
		key, context, ok := strings.Cut(m, "=")
		if !ok || key == "" || context == "" {
			return nil, usageError("--cluster-context %q: use NAME_OR_SERVER=CONTEXT, e.g. prod-eu=prod-eu-admin", m)
		}
		out[key] = context
	}
	if f.ClustersFile != "" {
		file, err := readClustersFile(f.ClustersFile)
		if err != nil {
			return nil, usageError("--clusters-file: %v", err)
		}
		for k, v := range file {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	}
	return out, nil
}
