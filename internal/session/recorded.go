package session

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// Recorded reaches a journal entry's cluster the way the entry was written: the same kubeconfig
// context (checked to talk to the same API server), Argo CD's credentials when the user allows them
// again, or Argo CD's API as the entry's Application.
func (s *live) Recorded(ctx context.Context, c cluster.Info, app *journal.AppRef) (cluster.Objects, error) {
	switch c.Via {
	case cluster.ViaArgoCDAPI:
		if s.cfg.Via == ViaArgoCD {
			return s.throughAPI(ctx, c, app)
		}
		// Changed through Argo CD's API, undone with the kubeconfig: the cluster is resolved as an
		// app's destination would be.
		return s.Destination(ctx, c)
	case cluster.ViaKubeconfig, "":
		if c.Name == argocd.InClusterName || c.Server == argocd.InClusterServer {
			clients, err := s.clients(ctx)
			if err != nil {
				return nil, err
			}
			if err := sameServer(c, clients.Config.Host, clients.Info.Context); err != nil {
				return nil, err
			}
			return kube.NewObjects(clients, s.cfg.FieldManager), nil
		}
		return s.throughContext(ctx, c)
	case cluster.ViaArgoCDCredentials:
		if !s.cfg.ArgoCDCredentials {
			return nil, fmt.Errorf("the journal reached cluster %s with Argo CD's credentials: add --cluster-credentials=argocd to use them again, or --cluster-context %s=CONTEXT",
				c.Name, c.Name)
		}
		if s.cfg.Via == ViaArgoCD {
			return nil, fmt.Errorf("the journal reached cluster %s with Argo CD's cluster credentials: undo it with your kubeconfig (without --via argocd)", c.Name)
		}
		argo, err := s.ArgoCD(ctx)
		if err != nil {
			return nil, err
		}
		return argo.Reach(ctx, argocd.Destination{Name: c.Name, Server: c.Server})
	}
	return nil, fmt.Errorf("the journal reached cluster %s %s; undo it the same way", c.Name, c.Via)
}

// throughAPI reaches an entry's object the way the journal did: through Argo CD's API, as the
// entry's Application's resource.
func (s *live) throughAPI(ctx context.Context, c cluster.Info, app *journal.AppRef) (cluster.Objects, error) {
	if app == nil {
		return nil, fmt.Errorf("the journal's entry in cluster %s names no Application, which Argo CD's API needs", c.Name)
	}
	argo, err := s.ArgoCD(ctx)
	if err != nil {
		return nil, err
	}
	a, err := argo.GetApplication(ctx, app.Namespace, app.Name)
	if err != nil {
		return nil, err
	}
	return argo.Destination(ctx, a)
}

// throughContext reaches a destination through a kubeconfig context: the one the journal recorded,
// unless --cluster-context maps the cluster to another.
func (s *live) throughContext(ctx context.Context, c cluster.Info) (cluster.Objects, error) {
	context := c.Context
	for _, k := range []string{c.Name, c.Server} {
		if mapped, ok := s.cfg.ClusterContexts[k]; ok && k != "" {
			context = mapped
		}
	}
	cfg, err := s.fromContext(context)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: kubeconfig context %q: %w (map it with --cluster-context %s=CONTEXT)", c.Name, context, err, c.Name)
	}
	if err := sameServer(c, cfg.Host, context); err != nil {
		return nil, err
	}
	info := c
	info.Context = context
	clients, err := kube.NewClients(cfg, info, nil, s.options())
	if err != nil {
		return nil, err
	}
	if err := clients.Ping(ctx, s.cfg.RequestTimeout); err != nil {
		return nil, err
	}
	return kube.NewObjects(clients, s.cfg.FieldManager), nil
}

// sameServer refuses to reach another API server than the one the journal changed.
func sameServer(c cluster.Info, host, context string) error {
	want := c.URL
	if want == "" {
		want = c.Server
	}
	if want != "" && want != argocd.InClusterServer && host != want {
		return fmt.Errorf("the journal's objects live in cluster %s at %s, but context %q talks to %s: switch with --context (or --cluster-context %s=CONTEXT)",
			c.Name, want, context, host, c.Name)
	}
	return nil
}

// JournalArgoCD reaches the installation a journal recorded, to read the Applications whose
// tracking undo would write back: through Argo CD's API with --via argocd, else in the cluster of
// --argocd-context (or --context), which must be the API server the journal recorded.
func (s *live) JournalArgoCD(ctx context.Context, j *journal.Journal) (cluster.ArgoCD, error) {
	if j.ArgoCD == nil {
		return nil, fmt.Errorf("the journal names no Argo CD installation")
	}
	if ns := s.cfg.ArgoCDNamespace; ns != "" && ns != j.ArgoCD.Namespace {
		return nil, fmt.Errorf("the journal's Argo CD runs in namespace %s, not --argocd-namespace %s: leave the flag out", j.ArgoCD.Namespace, ns)
	}
	argo, err := s.argoIn(ctx, j.ArgoCD.Namespace)
	if err != nil {
		return nil, err
	}
	recorded, _ := j.ClusterOf(journal.Entry{Cluster: j.ArgoCD.Cluster})
	got := argo.Cluster()
	switch {
	case recorded.Via == cluster.ViaKubeconfig && got.Via == cluster.ViaKubeconfig && recorded.URL != "" && got.URL != recorded.URL:
		return nil, fmt.Errorf("the journal's Argo CD runs in the cluster at %s, but context %q talks to %s: name its context with --argocd-context",
			recorded.URL, got.Context, got.URL)
	case recorded.Via == cluster.ViaArgoCDAPI && got.Via == cluster.ViaArgoCDAPI && got.Server != recorded.Server:
		return nil, fmt.Errorf("the journal was written through Argo CD's API at %s, but this run talks to %s: point --argocd-server (--server for argocd unprune) or $ARGOCD_SERVER at the journal's", recorded.Server, got.Server)
	}
	return argo, nil
}
