package cli

import (
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
)

// apiConfigured reports whether argocd-server can be asked besides the Kubernetes API: its address
// given as a flag or in $ARGOCD_SERVER (the argocd CLI's saved login is used only with --via argocd
// or as `argocd unprune`).
func (g *GlobalOptions) apiConfigured() bool {
	return g.Via == ViaArgoCD || g.API.Server != "" || g.getenv("ARGOCD_SERVER") != ""
}

// oracle is argocd-server, when it can answer for Argo CD: the backend itself with --via argocd,
// else a client of the server the flags or the environment name. nil when none is configured.
func (g *GlobalOptions) oracle(argo cluster.ArgoCD) (check.Oracle, error) {
	if api, ok := argo.(*argocdapi.ArgoCD); ok {
		return api, nil
	}
	if !g.apiConfigured() {
		return nil, nil
	}
	opts := g.API
	opts.Getenv = g.getenv
	if opts.Context == "" {
		opts.Context = g.ArgoCDContext
	}
	if d, err := g.requestTimeout(); err == nil {
		opts.Timeout = d
	}
	c, err := argocdapi.Connect(opts)
	if err != nil {
		return nil, err
	}
	return argocdapi.NewArgoCD(c, argo.Namespace()), nil
}
