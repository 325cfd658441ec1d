// Package sessiontest is a Session over the in-memory Argo CD and clusters of package clustertest,
// for running unprune's commands in process: every command's flags, output formats and exit codes
// can be tested without an API server. What only the API server and Argo CD decide (admission,
// dry runs, the controller's comparisons) stays in the lab's tests.
package sessiontest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/session"
)

// Session serves one fake Argo CD installation; its in-cluster destination is the home cluster.
type Session struct {
	Argo *clustertest.ArgoCD
	// Config is what the command line parsed, as the real session would receive it.
	Config session.Config
	// Env is the environment the commands see.
	Env map[string]string
	// Rand makes journal IDs' suffixes; Counter gives the same IDs on every run of a test.
	Rand io.Reader
}

var _ session.Session = (*Session)(nil)

// Factory returns what the cli package's factory takes as NewSession: every command run gets a Session over
// argo with the configuration its flags parsed into. env is the environment they see; rand makes
// journal IDs (see Counter).
func Factory(argo *clustertest.ArgoCD, env map[string]string, rand io.Reader) func(session.Config) session.Session {
	return func(cfg session.Config) session.Session {
		return &Session{Argo: argo, Config: cfg, Env: env, Rand: rand}
	}
}

// Oracle is a client of the argocd-server the configuration or Env names (a test's HTTP server),
// as the real session's.
func (s *Session) Oracle(namespace string) (cluster.Oracle, error) {
	if !s.Config.ServerNamed(s.Getenv) {
		return nil, nil
	}
	c, err := s.Config.ConnectServer(s.Getenv)
	if err != nil {
		return nil, err
	}
	return argocdapi.NewArgoCD(c, namespace), nil
}

// Counter is a reader of 0, 1, 2, … as big-endian 16-bit numbers: journal IDs that are the same on
// every run and differ within one.
func Counter() io.Reader { return &counter{} }

type counter struct {
	mu sync.Mutex
	n  uint16
}

func (c *counter) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range p {
		if i%2 == 0 {
			p[i] = byte(c.n >> 8)
		} else {
			p[i] = byte(c.n)
			c.n++
		}
	}
	return len(p), nil
}

// Now is the configured clock, else the fake controller's.
func (s *Session) Now() time.Time {
	if s.Config.Now != nil {
		return s.Config.Now()
	}
	return s.Argo.Now()
}

// Getenv reads Env.
func (s *Session) Getenv(k string) string { return s.Env[k] }

// Home is the installation's in-cluster destination.
func (s *Session) Home(context.Context) (cluster.Objects, error) { return s.Argo.InCluster, nil }

// ArgoCD is the fake installation, when the flags name its namespace or none.
func (s *Session) ArgoCD(context.Context) (cluster.ArgoCD, error) {
	if ns := s.Config.ArgoCDNamespace; ns != "" && ns != s.Argo.Ns {
		return nil, fmt.Errorf("no ConfigMap argocd-cm in namespace %s: is Argo CD installed there?", ns)
	}
	return s.Argo, nil
}

// Settings are the fake's, with the version the flags gave.
func (s *Session) Settings(ctx context.Context) (cluster.Settings, error) {
	return s.Argo.Settings(ctx, s.Config.ArgoCDVersion)
}

// Destination is the fake's cluster of that name or server.
func (s *Session) Destination(ctx context.Context, c cluster.Info) (cluster.Objects, error) {
	return s.Argo.Reach(ctx, argocd.Destination{Name: c.Name, Server: c.Server})
}

// Recorded is the fake's cluster of that name or server: the fake has one way to reach each.
func (s *Session) Recorded(ctx context.Context, c cluster.Info, _ *journal.AppRef) (cluster.Objects, error) {
	return s.Destination(ctx, c)
}

// JournalArgoCD is the fake installation when the journal recorded its namespace.
func (s *Session) JournalArgoCD(_ context.Context, j *journal.Journal) (cluster.ArgoCD, error) {
	if j.ArgoCD == nil || j.ArgoCD.Namespace != s.Argo.Ns {
		return nil, fmt.Errorf("the journal's Argo CD is not this fake's (namespace %s)", s.Argo.Ns)
	}
	return s.Argo, nil
}

// Journals is the store in the configured directory.
func (s *Session) Journals() (*journal.Store, error) {
	if s.Config.JournalDir == "" {
		return nil, fmt.Errorf("no journal directory: pass one to the command")
	}
	store := journal.NewStore(s.Config.JournalDir, s.Now)
	store.Rand = s.Rand
	return store, nil
}
