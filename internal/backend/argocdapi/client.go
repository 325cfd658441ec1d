// Package argocdapi is the Argo CD API backend: Applications, settings and refreshes from
// argocd-server's REST API, and the live objects of an app's destination read and patched through
// it (`argocd app patch-resource`'s endpoint), with Argo CD's own credentials for the cluster and
// under Argo CD's RBAC. For operators who reach clusters only through Argo CD. It speaks plain HTTP
// JSON: no Argo CD Go module is imported.
package argocdapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/version"
)

// Options say how to reach argocd-server, as the argocd CLI takes them: flags first, then
// ARGOCD_SERVER / ARGOCD_AUTH_TOKEN, then the argocd CLI's config file and its current context.
type Options struct {
	Server    string
	AuthToken string
	Insecure  bool
	PlainText bool
	// GRPCWeb is accepted for the argocd CLI's sake; the REST API needs no gRPC.
	GRPCWeb bool
	// ConfigPath is the argocd CLI's config; empty means its default place.
	ConfigPath string
	// Context is the argocd CLI context to use; empty means its current context.
	Context string
	Getenv  func(string) string
	Timeout time.Duration
}

// Client talks to argocd-server.
type Client struct {
	base   *url.URL
	token  string
	http   *http.Client
	server string
}

// argocdConfig is the part of the argocd CLI's config file unprune reads.
type argocdConfig struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name   string `json:"name"`
		Server string `json:"server"`
		User   string `json:"user"`
	} `json:"contexts"`
	Servers []struct {
		Server    string `json:"server"`
		Insecure  bool   `json:"insecure"`
		PlainText bool   `json:"plain-text"`
	} `json:"servers"`
	Users []struct {
		Name      string `json:"name"`
		AuthToken string `json:"auth-token"`
	} `json:"users"`
}

// Connect resolves the server and token and returns a client. It makes no request.
func Connect(o Options) (*Client, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Server == "" {
		o.Server = getenv("ARGOCD_SERVER")
	}
	if o.AuthToken == "" {
		o.AuthToken = getenv("ARGOCD_AUTH_TOKEN")
	}
	if o.Server == "" || o.AuthToken == "" {
		if err := fromConfig(&o, getenv); err != nil {
			return nil, err
		}
	}
	if o.Server == "" {
		return nil, &CredentialsError{Problem: NoServer}
	}
	if o.AuthToken == "" {
		return nil, &CredentialsError{Problem: NoToken, Server: o.Server}
	}
	raw := o.Server
	if !strings.Contains(raw, "://") {
		scheme := "https"
		if o.PlainText {
			scheme = "http"
		}
		raw = scheme + "://" + raw
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return nil, fmt.Errorf("Argo CD server %q: %w", o.Server, err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: o.Insecure} //nolint:gosec // the user asked with --insecure, as with the argocd CLI
	return &Client{base: base, token: o.AuthToken, server: o.Server, http: &http.Client{Timeout: timeout, Transport: transport}}, nil
}

// fromConfig fills server, token and TLS options from the argocd CLI's config file.
func fromConfig(o *Options, getenv func(string) string) error {
	path := o.ConfigPath
	if path == "" {
		dir := getenv("ARGOCD_CONFIG_DIR")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil
			}
			dir = filepath.Join(home, ".config", "argocd")
			if _, err := os.Stat(dir); err != nil {
				dir = filepath.Join(home, ".argocd")
			}
		}
		path = filepath.Join(dir, "config")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		if o.ConfigPath == "" && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("argocd config %s: %w", path, err)
	}
	var cfg argocdConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("argocd config %s: %w", path, err)
	}
	name := o.Context
	if name == "" {
		name = cfg.CurrentContext
	}
	for _, c := range cfg.Contexts {
		if c.Name != name {
			continue
		}
		if o.Server == "" {
			o.Server = c.Server
		}
		for _, s := range cfg.Servers {
			if s.Server == c.Server {
				o.Insecure, o.PlainText = o.Insecure || s.Insecure, o.PlainText || s.PlainText
			}
		}
		for _, u := range cfg.Users {
			if u.Name == c.User && o.AuthToken == "" {
				o.AuthToken = u.AuthToken
			}
		}
		return nil
	}
	if o.Context != "" {
		return fmt.Errorf("argocd config %s has no context %q", path, o.Context)
	}
	return nil
}

// Server is the server as the user named it.
func (c *Client) Server() string { return c.server }

// apiError is grpc-gateway's error body.
type apiError struct {
	Error   string `json:"error"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// do sends a request and decodes the JSON answer into out (when not nil). Errors are classified so
// that the engine treats them like the Kubernetes API's: NotFound, Conflict, Argo CD's RBAC
// refusal, unreachable server.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, out any) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", version.UserAgent())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &cluster.UnreachableError{Server: "Argo CD server " + c.server, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return c.classify(resp.StatusCode, data, path)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("Argo CD server %s answered %s with something that is not JSON: %w", c.server, path, err)
	}
	return nil
}

func (c *Client) classify(status int, data []byte, path string) error {
	var e apiError
	_ = json.Unmarshal(data, &e)
	msg := e.Message
	if msg == "" {
		msg = strings.TrimSpace(string(data))
	}
	gr := schema.GroupResource{Group: "argoproj.io", Resource: "applications"}
	switch {
	case status == http.StatusUnauthorized || e.Code == 16:
		return &CredentialsError{Problem: TokenRejected, Server: c.server, Reason: msg}
	case status == http.StatusForbidden || e.Code == 7:
		return &cluster.ArgoCDDeniedError{Server: c.server, Msg: msg}
	case strings.Contains(msg, "ValidatingAdmissionPolicy") || strings.Contains(msg, "admission webhook"):
		// The destination's API server refused Argo CD's patch by admission: keep it recognisable.
		return apierrors.NewForbidden(gr, "", errors.New(msg))
	case strings.Contains(msg, "the object has been modified"):
		return apierrors.NewConflict(gr, path, errors.New(msg))
	case status == http.StatusNotFound || e.Code == 5:
		return apierrors.NewNotFound(gr, msg)
	}
	return fmt.Errorf("Argo CD server %s: HTTP %d: %s", c.server, status, msg)
}
