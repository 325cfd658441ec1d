package argocdapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

// ArgoCD is an installation seen through argocd-server.
type ArgoCD struct {
	c *Client
	// Fallback is the namespace used when the server does not say its own (it does only to users
	// logged in).
	Fallback string

	mu sync.Mutex
	ns string
	// settled: Settings has read the endpoint that may name the namespace.
	settled bool
	// version is the server's, read once (versionRead).
	version     *argocd.Version
	versionRead bool
}

var (
	_ cluster.ArgoCD            = (*ArgoCD)(nil)
	_ cluster.SettlingNamespace = (*ArgoCD)(nil)
)

// NamespaceSettled reports whether Namespace is the server's answer (or, the server not saying, the
// fallback for good) rather than the fallback before Settings asked.
func (a *ArgoCD) NamespaceSettled() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.settled
}

// NewArgoCD returns the installation behind a client.
func NewArgoCD(c *Client, fallbackNamespace string) *ArgoCD {
	return &ArgoCD{c: c, Fallback: fallbackNamespace}
}

// Client is the API client.
func (a *ArgoCD) Client() *Client { return a.c }

// Namespace is the controller's namespace, as the settings endpoint tells logged-in users.
func (a *ArgoCD) Namespace() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ns != "" {
		return a.ns
	}
	return a.Fallback
}

// Cluster names Argo CD's API as where the Applications are read.
func (a *ArgoCD) Cluster() cluster.Info {
	return cluster.Info{Name: "argocd-api", Server: a.c.base.String(), Via: cluster.ViaArgoCDAPI, ArgoCDServer: a.c.server}
}

// settingsResponse is the part of GET /api/v1/settings unprune reads (server/settings/settings.go).
type settingsResponse struct {
	AppLabelKey         string `json:"appLabelKey"`
	TrackingMethod      string `json:"trackingMethod"`
	InstallationID      string `json:"installationID"`
	ControllerNamespace string `json:"controllerNamespace"`
}

// Settings reads the tracking settings from the settings endpoint and the version from
// /api/version. The endpoint gives the method as Argo CD resolves it.
func (a *ArgoCD) Settings(ctx context.Context, v *argocd.Version) (cluster.Settings, error) {
	var s settingsResponse
	if err := a.c.do(ctx, "GET", "/api/v1/settings", nil, nil, &s); err != nil {
		return cluster.Settings{}, cluster.Explain(err, "read Argo CD's settings", a.Cluster())
	}
	a.mu.Lock()
	if s.ControllerNamespace != "" {
		a.ns = s.ControllerNamespace
	}
	a.settled = true
	a.mu.Unlock()
	var warnings []string
	if v == nil {
		var ver struct {
			Version string `json:"Version"`
		}
		if err := a.c.do(ctx, "GET", "/api/version", nil, nil, &ver); err == nil {
			if parsed, err := argocd.ParseVersion(ver.Version); err == nil {
				v = &parsed
			}
		}
		if v == nil {
			warnings = append(warnings, fmt.Sprintf("Argo CD version unknown (the server did not tell it): pass %v to be exact", option.ArgoCDVersion))
		}
	}
	data := map[string]string{argocd.SettingInstanceLabelKey: s.AppLabelKey, argocd.SettingInstallationID: s.InstallationID}
	if s.TrackingMethod != "" {
		data[argocd.SettingTrackingMethod] = s.TrackingMethod
	}
	return cluster.Settings{Settings: argocd.NewSettings(data, v), Warnings: warnings}, nil
}

// Project reads an AppProject.
func (a *ArgoCD) Project(ctx context.Context, name string) (argocd.Project, error) {
	var raw json.RawMessage
	if err := a.c.do(ctx, "GET", "/api/v1/projects/"+url.PathEscape(name), nil, nil, &raw); err != nil {
		return argocd.Project{}, cluster.Explain(err, "get AppProject "+name, a.Cluster())
	}
	return argocd.ParseProject(raw)
}

// Manifests asks Argo CD to render an app's manifests at a revision (`argocd app manifests
// --revision`).
func (a *ArgoCD) Manifests(ctx context.Context, app argocd.Application, revision string) ([]string, error) {
	q := url.Values{}
	q.Set("appNamespace", app.Namespace)
	if revision != "" {
		q.Set("revision", revision)
	}
	var resp struct {
		Manifests []string `json:"manifests"`
	}
	if err := a.c.do(ctx, "GET", "/api/v1/applications/"+url.PathEscape(app.Name)+"/manifests", q, nil, &resp); err != nil {
		return nil, cluster.Explain(err, "render the manifests of Application "+app.Ref()+" at "+revision, a.Cluster())
	}
	return resp.Manifests, nil
}

// ListApplications lists the apps the token may see.
func (a *ArgoCD) ListApplications(ctx context.Context, sel cluster.Selector) ([]argocd.Application, error) {
	q := url.Values{}
	if sel.Namespace != "" {
		q.Set("appNamespace", sel.Namespace)
	}
	if sel.LabelSelector != "" {
		q.Set("selector", sel.LabelSelector)
	}
	for _, p := range sel.Projects {
		q.Add("projects", p)
	}
	var raw json.RawMessage
	if err := a.c.do(ctx, "GET", "/api/v1/applications", q, nil, &raw); err != nil {
		return nil, cluster.Explain(err, "list Argo CD Applications", a.Cluster())
	}
	list, err := argocd.ParseApplicationList(raw)
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// GetApplication reads one app.
func (a *ArgoCD) GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error) {
	return a.get(ctx, namespace, name, "")
}

func (a *ArgoCD) get(ctx context.Context, namespace, name, refresh string) (argocd.Application, error) {
	q := url.Values{}
	if namespace != "" {
		q.Set("appNamespace", namespace)
	}
	if refresh != "" {
		q.Set("refresh", refresh)
	}
	var raw json.RawMessage
	if err := a.c.do(ctx, "GET", "/api/v1/applications/"+url.PathEscape(name), q, nil, &raw); err != nil {
		return argocd.Application{}, cluster.Explain(err, "get Application "+namespace+"/"+name, a.Cluster())
	}
	return argocd.ParseApplication(raw)
}

// Refresh asks for a refresh the way `argocd app get --refresh` does; a pending hard refresh is
// kept: the app is read first, whatever app says, as the server would overwrite it.
func (a *ArgoCD) Refresh(ctx context.Context, app argocd.Application, hard bool) error {
	kind := "normal"
	if hard || app.Refresh == "hard" {
		kind = "hard"
	} else if current, err := a.get(ctx, app.Namespace, app.Name, ""); err != nil {
		return err
	} else if current.Refresh == "hard" {
		kind = "hard"
	}
	_, err := a.get(ctx, app.Namespace, app.Name, kind)
	return err
}

// Destination returns the app's objects as Argo CD's API serves them: only this app's resources,
// patched with Argo CD's credentials for the cluster.
func (a *ArgoCD) Destination(_ context.Context, app argocd.Application) (cluster.Objects, error) {
	return &Objects{c: a.c, app: app}, nil
}

// Reach cannot serve a cluster on its own: Argo CD's API reads and patches objects only as an
// Application's resources.
func (a *ArgoCD) Reach(_ context.Context, d argocd.Destination) (cluster.Objects, error) {
	return nil, fmt.Errorf("cluster %s: Argo CD's API reaches objects only as an Application's resources: %w", d, cluster.ErrUnsupported)
}

// ControllerIdentity is unknown through Argo CD's API, which does not say what the controller runs as.
func (a *ArgoCD) ControllerIdentity(context.Context) string { return "" }

// DestinationInfo names an app's destination cluster as reached through Argo CD's API.
func DestinationInfo(c *Client, d argocd.Destination) cluster.Info {
	name := d.Name
	if name == "" && d.InCluster() {
		name = argocd.InClusterName
	}
	server := d.Server
	if server == "" && d.InCluster() {
		server = argocd.InClusterServer
	}
	key := name
	if key == "" {
		key = server
	}
	return cluster.Info{Name: strings.TrimSpace(key), Server: server, Via: cluster.ViaArgoCDAPI, ArgoCDServer: c.server}
}
