package argocdapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
)

// A 401 from argocd-server is a CredentialsError the command line can word, and still an
// authentication failure to everything that classifies failures.
func TestRejectedToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid session","code":16,"message":"invalid session"}`))
	}))
	defer srv.Close()
	c, err := Connect(Options{Server: srv.URL, AuthToken: "expired", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	err = c.do(context.Background(), "GET", "/api/version", nil, nil, &struct{}{})
	var creds *CredentialsError
	if !errors.As(err, &creds) || creds.Problem != TokenRejected || creds.Reason != "invalid session" {
		t.Fatalf("got %v, want a rejected token", err)
	}
	if f := cluster.Classify(err); f != cluster.FailureUnauthenticated {
		t.Errorf("classified %v, want unauthenticated", f)
	}
	if !strings.HasSuffix(creds.Say("--S", "--T"), "or pass another --T") {
		t.Errorf("Say names the token option as given: %q", creds.Say("--S", "--T"))
	}
}

func TestMissingCredentials(t *testing.T) {
	dir := t.TempDir() // no argocd CLI login to fall back on
	env := func(k string) string {
		if k == "ARGOCD_CONFIG_DIR" {
			return dir
		}
		return ""
	}
	_, err := Connect(Options{Getenv: env})
	var creds *CredentialsError
	if !errors.As(err, &creds) || creds.Problem != NoServer {
		t.Fatalf("no server: got %v", err)
	}
	_, err = Connect(Options{Server: "argocd.example", Getenv: env})
	if !errors.As(err, &creds) || creds.Problem != NoToken || creds.Server != "argocd.example" {
		t.Fatalf("no token: got %v", err)
	}
	if cluster.Classify(err) == cluster.FailureUnauthenticated {
		t.Errorf("a missing token is bad input, not a rejection")
	}
}
