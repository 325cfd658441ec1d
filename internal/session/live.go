package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/journal/cmstore"
	"github.com/unprune/unprune/internal/printer"
)

// defaultArgoCDNamespace is where Argo CD's manifests install it.
const defaultArgoCDNamespace = "argocd"

// live is the Session of a real run: the kubeconfig, or argocd-server's API.
type live struct {
	cfg Config

	home     lazy[*kube.Clients]
	api      lazy[*argocdapi.Client]
	settings lazy[cluster.Settings]

	mu   sync.Mutex
	argo map[string]*lazy[cluster.ArgoCD] // by the namespace asked for ("" is found)
}

// New returns the Session of cfg. It connects to nothing until a method needs it.
func New(cfg Config) Session {
	if cfg.Warnings == nil {
		cfg.Warnings = os.Stderr
	}
	return &live{cfg: cfg, argo: map[string]*lazy[cluster.ArgoCD]{}}
}

func (s *live) Now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

func (s *live) Getenv(k string) string {
	if s.cfg.Getenv != nil {
		return s.cfg.Getenv(k)
	}
	return os.Getenv(k)
}

func (s *live) warn(msg string) { fmt.Fprintln(s.cfg.Warnings, "warning:", printer.Line(msg)) }

// clients connects to the cluster of the kubeconfig's context, checking with one request that it
// answers.
func (s *live) clients(ctx context.Context) (*kube.Clients, error) {
	return s.home.get(func() (*kube.Clients, error) {
		flags := s.cfg.Kubeconfig
		if err := s.kubeconfigExists(); err != nil {
			return nil, err
		}
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, fmt.Errorf("cannot build a client from your kubeconfig: %v (set --kubeconfig or --context)", err)
		}
		mapper, err := flags.ToRESTMapper()
		if err != nil {
			return nil, err
		}
		info := cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, URL: cfg.Host, Via: cluster.ViaKubeconfig, Context: s.contextName()}
		c, err := kube.NewClients(cfg, info, mapper, s.options())
		if err != nil {
			return nil, err
		}
		if err := c.Ping(ctx, s.cfg.RequestTimeout); err != nil {
			return nil, fmt.Errorf("%w (check --context/--kubeconfig, the network or VPN)", err)
		}
		return c, nil
	})
}

// kubeconfigExists names a kubeconfig file that is not there: client-go passes over files of
// $KUBECONFIG that do not exist and falls back to an in-cluster or localhost:8080 configuration, and
// the user then reads "cannot reach localhost:8080" for a mistyped path.
func (s *live) kubeconfigExists() error {
	if k := s.cfg.Kubeconfig.KubeConfig; k != nil && *k != "" {
		if _, err := os.Stat(*k); err != nil {
			return fmt.Errorf("the kubeconfig file %s (--kubeconfig) cannot be read: %v", *k, err)
		}
		return nil
	}
	env := s.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	if env == "" {
		return nil
	}
	paths := filepath.SplitList(env)
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("$KUBECONFIG names %s, and no such file exists: set KUBECONFIG to your kubeconfig file, or pass --kubeconfig", strings.Join(paths, string(filepath.ListSeparator)))
}

func (s *live) options() kube.Options { return kube.Options{QPS: s.cfg.QPS, Burst: s.cfg.Burst} }

func (s *live) contextName() string {
	flags := s.cfg.Kubeconfig
	if flags.Context != nil && *flags.Context != "" {
		return *flags.Context
	}
	if raw, err := flags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		return raw.CurrentContext
	}
	return ""
}

func (s *live) Home(ctx context.Context) (cluster.Objects, error) {
	c, err := s.clients(ctx)
	if err != nil {
		return nil, err
	}
	return kube.NewObjects(c, s.cfg.FieldManager), nil
}

func (s *live) ArgoCD(ctx context.Context) (cluster.ArgoCD, error) {
	return s.argoIn(ctx, s.cfg.ArgoCDNamespace)
}

// argoIn is the installation in namespace (found when empty), connected once per namespace.
func (s *live) argoIn(ctx context.Context, namespace string) (cluster.ArgoCD, error) {
	s.mu.Lock()
	l := s.argo[namespace]
	if l == nil {
		l = &lazy[cluster.ArgoCD]{}
		s.argo[namespace] = l
	}
	s.mu.Unlock()
	return l.get(func() (cluster.ArgoCD, error) {
		if s.cfg.Via == ViaArgoCD {
			c, err := s.apiClient()
			if err != nil {
				return nil, err
			}
			if namespace == "" {
				namespace = defaultArgoCDNamespace
			}
			return argocdapi.NewArgoCD(c, namespace), nil
		}
		c, err := s.clients(ctx)
		if err != nil {
			return nil, err
		}
		objects := kube.NewObjects(c, s.cfg.FieldManager)
		if namespace == "" {
			var note string
			namespace, note = kube.FindNamespace(ctx, objects, defaultArgoCDNamespace)
			if note != "" {
				s.warn(note)
			}
		}
		return &kube.ArgoCD{Objects: objects, Ns: namespace, Destinations: s.destinations(objects, namespace)}, nil
	})
}

// apiClient connects to argocd-server.
func (s *live) apiClient() (*argocdapi.Client, error) {
	return s.api.get(func() (*argocdapi.Client, error) { return s.cfg.ConnectServer(s.Getenv) })
}

// Oracle shares the client of argocd-server with the backend, when that is its API.
func (s *live) Oracle(namespace string) (cluster.Oracle, error) {
	if !s.cfg.ServerNamed(s.Getenv) {
		return nil, nil
	}
	c, err := s.apiClient()
	if err != nil {
		return nil, err
	}
	return argocdapi.NewArgoCD(c, namespace), nil
}

// destinations resolves Argo CD's destination clusters the way the flags say.
func (s *live) destinations(management *kube.Objects, namespace string) *kube.Destinations {
	return &kube.Destinations{
		Management: management, Namespace: namespace, Contexts: s.cfg.ClusterContexts,
		ArgoCDCredentials: s.cfg.ArgoCDCredentials, FromContext: s.fromContext,
		Options: s.options(), FieldManager: s.cfg.FieldManager,
	}
}

// fromContext builds a client configuration from the user's kubeconfig with another context.
func (s *live) fromContext(context string) (*rest.Config, error) { return FromContext(s.cfg)(context) }

// FromContext returns what builds a client configuration from the kubeconfig of cfg with another
// context than its own: how destination clusters mapped to contexts are reached.
func FromContext(cfg Config) func(context string) (*rest.Config, error) {
	return func(context string) (*rest.Config, error) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if k := cfg.Kubeconfig.KubeConfig; k != nil && *k != "" {
			rules.ExplicitPath = *k
		}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
		if d := cfg.RequestTimeout; d > 0 {
			overrides.Timeout = d.String()
		}
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	}
}

func (s *live) Settings(ctx context.Context) (cluster.Settings, error) {
	return s.settings.get(func() (cluster.Settings, error) {
		argo, err := s.ArgoCD(ctx)
		if err != nil {
			return cluster.Settings{}, err
		}
		got, err := argo.Settings(ctx, s.cfg.ArgoCDVersion)
		if err != nil {
			return cluster.Settings{}, err
		}
		for _, w := range got.Warnings {
			s.warn(w)
		}
		return got, nil
	})
}

func (s *live) Destination(ctx context.Context, c cluster.Info) (cluster.Objects, error) {
	d := argocd.Destination{Name: c.Name, Server: c.Server}
	if d.InCluster() || c.Name == argocd.InClusterName {
		return s.Home(ctx)
	}
	argo, err := s.ArgoCD(ctx)
	if err != nil {
		return nil, err
	}
	return argo.Reach(ctx, d)
}

func (s *live) Journals() (*journal.Store, error) {
	dir := s.cfg.JournalDir
	if ns, ok := cmstore.Namespace(dir); ok {
		return s.configMapJournals(ns)
	}
	if dir == "" {
		var err error
		if dir, err = journal.DefaultDir(s.Getenv, os.UserHomeDir); err != nil {
			return nil, fmt.Errorf("%v (set --journal-dir)", err)
		}
	}
	return journal.NewStore(dir, s.Now), nil
}

// configMapJournals is the store of the journals of releases made in Argo CD's UI (package
// cmstore): ConfigMaps in a namespace of the kubeconfig's cluster, written by the UI extension's
// backend. Building it connects to nothing.
func (s *live) configMapJournals(namespace string) (*journal.Store, error) {
	if namespace == "" {
		return nil, fmt.Errorf("--journal-dir %sNAMESPACE: name the namespace of the journals' ConfigMaps", cmstore.Scheme)
	}
	cfg, err := s.cfg.Kubeconfig.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("journals in ConfigMaps: cannot build a client from your kubeconfig: %v (set --kubeconfig or --context)", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cms := cmstore.New(client, namespace)
	cms.FieldManager = s.cfg.FieldManager
	return journal.NewBackedStore(cms, s.Now), nil
}

// lazy is a value made on first use; a failure is not kept, so a later call tries again.
type lazy[T any] struct {
	mu   sync.Mutex
	done bool
	v    T
}

func (l *lazy[T]) get(make func() (T, error)) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return l.v, nil
	}
	v, err := make()
	if err != nil {
		var zero T
		return zero, err
	}
	l.v, l.done = v, true
	return v, nil
}
