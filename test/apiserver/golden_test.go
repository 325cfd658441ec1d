//go:build lab

package apiserver

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// generatedAt matches the time every document is stamped with, in YAML and in JSON.
var generatedAt = regexp.MustCompile(`("?generatedAt"?: "?)[0-9T:Z-]+("?)`)

// golden compares got with testdata/name.golden, after replacing the values that differ per run.
func golden(t *testing.T, name, got string, env *labtest.Env, journals string) {
	t.Helper()
	got = strings.NewReplacer(env.State.Server, "{{SERVER}}", journals, "{{JOURNALS}}").Replace(got)
	got = generatedAt.ReplaceAllString(got, "${1}{{TIME}}${2}")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestGoldenOutput pins what users and scripts read. Not parallel: scan lists every Application of
// the lab, so nothing else may seed apps meanwhile (parallel tests start after this one).
func TestGoldenOutput(t *testing.T) {
	env := labtest.Get(t)
	s := seed(t, env, "golden", "golden-a", "golden-b")
	// A row whose object is gone: scan shows it, unreadable, instead of failing.
	seedRow(t, env, s.App, "golden-gone")
	journals := labtest.TempDir(t)

	cases := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"scan-table", []string{"scan"}, cli.ExitFindings},
		{"scan-wide", []string{"scan", "-o", "wide"}, cli.ExitFindings},
		{"scan-yaml", []string{"scan", "-o", "yaml"}, cli.ExitFindings},
		{"scan-json", []string{"scan", "-o", "json"}, cli.ExitFindings},
		{"detach-preview", []string{"detach", "golden", "Namespace/golden-a", "Namespace/golden-b"}, cli.ExitFindings},
		{"detach-preview-keep-json", []string{"detach", "golden", "Namespace/golden-a", "--strategy=keep", "-o", "json"}, cli.ExitFindings},
		{"detach-unknown-resource", []string{"detach", "golden", "Namespace/nope"}, cli.ExitFailure},
		{"detach-bad-flags", []string{"detach", "golden", "--all", "Namespace/golden-a"}, cli.ExitFailure},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := unprune(t, env.State.Kubeconfig, journals, c.args...)
			if r.Code != c.wantCode {
				t.Errorf("exit %d, want %d", r.Code, c.wantCode)
			}
			golden(t, c.name, "# stdout\n"+r.Stdout+"# stderr\n"+r.Stderr, env, journals)
		})
	}
}

// TestScanForbiddenKindIsAWarning: a user who may read Applications but not Namespaces still gets
// the scan, with a warning instead of a failure.
func TestScanForbiddenKindIsAWarning(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	seed(t, env, "partial", "partial-a")
	ctx := labtest.Context(t)
	for _, obj := range []map[string]any{
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "unprune-test-apps-only"},
			"rules": []any{
				map[string]any{"apiGroups": []any{"argoproj.io"}, "resources": []any{"applications"}, "verbs": []any{"get", "list"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list"}},
			}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "unprune-test-apps-only"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "unprune-test-apps-only"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "apps-only"}}},
	} {
		if err := env.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	journals := labtest.TempDir(t)
	var r cmdtest.Result
	labtest.Eventually(t, 30*time.Second, "the binding to take effect", func() (bool, string) {
		r = unprune(t, env.State.Kubeconfig, journals, "--as=apps-only", "scan", "-o", "wide")
		return r.Code == cli.ExitFindings && strings.Contains(r.Stdout, "partial-a"), r.Stderr
	})
	if !strings.Contains(r.Stderr, "warning: forbidden to read Namespace") {
		t.Errorf("no warning about the forbidden kind:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stdout, "<unreadable: get Namespace/partial-a: forbidden") {
		t.Errorf("the row does not say why it is unreadable:\n%s", r.Stdout)
	}
}
