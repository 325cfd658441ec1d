package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// extension serves until interrupted (it is tested in the lab: test/e2e/ui_test.go, and its API
// in internal/extension). Here only what it decides before serving: without the token argocd-server
// sends it refuses to start, it journals nowhere near Argo CD's settings, and Argo CD's API is not
// its way in.
func TestGoldenExtension(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "extension-no-token", args: []string{"extension"}},
		{name: "extension-args", args: []string{"extension", "extra"}},
		{name: "extension-via-argocd", args: []string{"extension", "--via", "argocd"}},
		{name: "extension-missing-token-file", args: []string{"extension", "--token-file", "/nonexistent/token"}},
		// Wherever it journals it may write ConfigMaps: never in Argo CD's namespace.
		{name: "extension-journals-in-argocd", args: []string{"extension", "--argocd-namespace", "argocd", "--journal-namespace", "argocd"}, setup: func(w *world) {
			w.env["UNPRUNE_EXTENSION_TOKEN"] = "secret"
		}},
		{name: "extension-empty-token-file", args: []string{"extension", "--token-file", "{{ .Dir }}/empty-token"}, setup: func(w *world) {
			if err := os.WriteFile(filepath.Join(w.dir, "empty-token"), []byte("\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	})
}
