package argocdapi

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
)

var set = map[string]any{"metadata": map[string]any{"name": "teams", "namespace": "argocd", "uid": "u", "resourceVersion": "7"},
	"spec": map[string]any{"generators": []any{}}, "status": map[string]any{"conditions": []any{}}}

// TestGenerateApplicationSet: the generation is POST /api/v1/applicationsets/generate with the set's
// identity and spec; the apps come back as they are.
func TestGenerateApplicationSet(t *testing.T) {
	s := newServer(t, map[string]answer{
		"GET /api/version":                      {200, `{"Version":"v3.6.1+abc"}`},
		"POST /api/v1/applicationsets/generate": {200, `{"applications":[{"metadata":{"name":"a","finalizers":["resources-finalizer.argocd.argoproj.io"]},"spec":{"project":"default"}}]}`},
	})
	apps, err := s.argocd(t).GenerateApplicationSet(context.Background(), set)
	if err != nil || len(apps) != 1 || argocd.ParseWhole(apps[0]).Name != "a" {
		t.Fatalf("apps %v, %v", apps, err)
	}
	var body struct {
		ApplicationSet map[string]any `json:"applicationSet"`
	}
	reqs := s.requests()
	if err := json.Unmarshal([]byte(reqs[len(reqs)-1].Body), &body); err != nil {
		t.Fatal(err)
	}
	meta := body.ApplicationSet["metadata"].(map[string]any)
	if meta["name"] != "teams" || meta["uid"] != nil || body.ApplicationSet["status"] != nil || body.ApplicationSet["spec"] == nil {
		t.Errorf("request %v: want the set's name, namespace and spec only", body.ApplicationSet)
	}
}

// TestGenerateRefusals: a server older than v2.13.3 is refused before anything is posted (v2.13.0–2
// served the generation at the path that creates sets); the generators' own error is
// appset.GenerationFailed; RBAC's refusal says what it takes.
func TestGenerateRefusals(t *testing.T) {
	old := newServer(t, map[string]answer{"GET /api/version": {200, `{"Version":"v2.13.2"}`}})
	if _, err := old.argocd(t).GenerateApplicationSet(context.Background(), set); err == nil || !strings.Contains(err.Error(), "from v2.13.3") {
		t.Errorf("v2.13.2: %v", err)
	}
	for _, r := range old.requests() {
		if r.Method == "POST" {
			t.Errorf("posted %s to a server too old", r.Path)
		}
	}
	failing := newServer(t, map[string]answer{
		"GET /api/version":                      {200, `{"Version":"v3.0.23"}`},
		"POST /api/v1/applicationsets/generate": {500, `{"code":2,"message":"unable to generate Applications of ApplicationSet: error generating params from git: boom\nlogs"}`},
	})
	_, err := failing.argocd(t).GenerateApplicationSet(context.Background(), set)
	var failed *appset.GenerationFailed
	if !errors.As(err, &failed) || failed.Message != "error generating params from git: boom" {
		t.Errorf("failing generation: %v", err)
	}
	denied := newServer(t, map[string]answer{
		"GET /api/version":                      {200, `{"Version":"v3.6.1"}`},
		"POST /api/v1/applicationsets/generate": {403, `{"code":7,"message":"permission denied"}`},
	})
	if _, err := denied.argocd(t).GenerateApplicationSet(context.Background(), set); err == nil || !strings.Contains(err.Error(), "applicationsets, create") {
		t.Errorf("denied: %v", err)
	}
}
