package argocdapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// versionGenerate is the first release whose argocd-server generates an ApplicationSet's apps at
// POST /api/v1/applicationsets/generate (server/applicationset/applicationset.proto; argo-cd
// #16781). v2.13.0–v2.13.2 served the same call at POST /api/v1/applicationsets, the path that
// creates a set, which unprune never posts to.
var versionGenerate = argocd.Version{Major: 2, Minor: 13, Patch: 3}

// Version is the server's Argo CD version (GET /api/version), nil when it does not say.
func (a *ArgoCD) Version(ctx context.Context) *argocd.Version {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.versionRead {
		return a.version
	}
	var v struct {
		Version string `json:"Version"`
	}
	if err := a.c.do(ctx, "GET", "/api/version", nil, nil, &v); err == nil {
		if parsed, err := argocd.ParseVersion(v.Version); err == nil {
			a.version = &parsed
		}
	}
	a.versionRead = true
	return a.version
}

// Server names the argocd-server.
func (a *ArgoCD) Server() string { return a.c.server }

// GenerateApplicationSet asks argocd-server to generate the Applications of a set, as `argocd
// appset generate` does: Argo CD's own generators, every kind, nothing created. It needs RBAC
// `applicationsets, create` on the set's project. A server older than v2.13.3 is refused before
// anything is sent; the generators' own error comes back as appset.GenerationFailed.
func (a *ArgoCD) GenerateApplicationSet(ctx context.Context, set map[string]any) ([]map[string]any, error) {
	if v := a.Version(ctx); v != nil && !v.AtLeast(versionGenerate) {
		return nil, fmt.Errorf("Argo CD %s at %s cannot generate an ApplicationSet's apps: its API has that from v2.13.3 (argocd appset generate)", v, a.c.server)
	}
	body := map[string]any{"applicationSet": requestSet(set)}
	var resp struct {
		Applications []map[string]any `json:"applications"`
	}
	err := a.c.do(ctx, "POST", "/api/v1/applicationsets/generate", nil, body, &resp)
	var denied *cluster.ArgoCDDeniedError
	switch {
	case err == nil:
		return resp.Applications, nil
	case errors.As(err, &denied):
		return nil, fmt.Errorf("%w (generating an ApplicationSet's apps needs applicationsets, create on its project)", err)
	case cluster.IsNotFound(err) && strings.Contains(err.Error(), "Not Found"):
		return nil, fmt.Errorf("Argo CD at %s has no ApplicationSet generation API (POST /api/v1/applicationsets/generate, from v2.13.3)", a.c.server)
	case strings.Contains(err.Error(), "unable to generate Applications of ApplicationSet"):
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "unable to generate Applications of ApplicationSet: "); ok {
			msg = after
		}
		return nil, &appset.GenerationFailed{Message: strings.TrimSpace(firstLine(msg))}
	}
	return nil, err
}

// requestSet is the part of a set the generation reads: its identity and spec.
func requestSet(set map[string]any) map[string]any {
	meta, _ := set["metadata"].(map[string]any)
	out := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "spec": set["spec"]}
	m := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if v, ok := meta[k]; ok {
			m[k] = v
		}
	}
	out["metadata"] = m
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
