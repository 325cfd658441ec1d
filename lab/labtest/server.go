package labtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/unprune/unprune/lab"
)

// ServerURL is the installation's argocd-server (plain HTTP on 127.0.0.1); the installation must
// have been asked for with lab.ArgoCDConfig.Server.
func (i *Install) ServerURL(t testing.TB) string {
	t.Helper()
	if i.State.ServerURL == "" {
		t.Fatalf("the Argo CD in %s runs no argocd-server: ask for it with lab.ArgoCDConfig{Server: true}", i.Namespace())
	}
	return i.State.ServerURL
}

// Token logs user in to argocd-server (POST /api/v1/session) and returns the session token (a JWT
// for "Authorization: Bearer"); tokens are kept per user for the installation's life.
func (i *Install) Token(t testing.TB, user lab.ServerUser) string {
	t.Helper()
	i.mu.Lock()
	tok, ok := i.tokens[user.Name]
	i.mu.Unlock()
	if ok {
		return tok
	}
	code, body := i.API(t, "", http.MethodPost, "/api/v1/session", map[string]string{"username": user.Name, "password": user.Password})
	var resp struct {
		Token string `json:"token"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &resp) != nil || resp.Token == "" {
		t.Fatalf("log in to argocd-server as %s: HTTP %d %s", user.Name, code, body)
	}
	i.mu.Lock()
	if i.tokens == nil {
		i.tokens = map[string]string{}
	}
	i.tokens[user.Name] = resp.Token
	i.mu.Unlock()
	return resp.Token
}

// API sends a request to argocd-server's REST API (path like /api/v1/applications) with token
// ("" for none) and body (nil for none; JSON-encoded otherwise) and returns the HTTP status and
// body. It fails the test only when the server cannot be reached.
func (i *Install) API(t testing.TB, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(Context(t), method, i.ServerURL(t)+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}
