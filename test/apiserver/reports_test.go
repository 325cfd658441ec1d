//go:build lab

package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

// journalName and createdAt vary per run; golden files hold placeholders.
var (
	journalName = regexp.MustCompile(`[0-9]{8}T[0-9]{6}Z-[a-z0-9.-]+-[0-9a-f]{4}`)
	timestamp   = regexp.MustCompile(`"?(createdAt|updatedAt)"?: "?[0-9T:.Z-]+"?`)
)

func goldenVarying(t *testing.T, name, got string, env *labtest.Env, journals string) {
	t.Helper()
	got = journalName.ReplaceAllString(got, "{{JOURNAL}}")
	got = timestamp.ReplaceAllString(got, "$1: {{TIME}}")
	golden(t, name, got, env, journals)
}

// TestGoldenReports pins one document of each kind not pinned elsewhere — UndoReport, GuardReport,
// JournalList, CheckReport (json, table, markdown) — and the jsonpath output of scan and audit.
// Not parallel: scan and audit list every Application of the lab.
func TestGoldenReports(t *testing.T) {
	env := labtest.Get(t)
	s := seed(t, env, "reports", "reports-a")
	journals := labtest.TempDir(t)
	run := func(name string, wantCode int, args ...string) {
		t.Helper()
		r := unprune(t, env.State.Kubeconfig, journals, args...)
		if r.Code != wantCode {
			t.Errorf("%s: exit %d, want %d", name, r.Code, wantCode)
		}
		goldenVarying(t, name, "# stdout\n"+r.Stdout+"# stderr\n"+r.Stderr, env, journals)
	}
	run("scan-jsonpath", cli.ExitFindings, "scan", "-o", "jsonpath={.items[*].resource.name}")
	run("audit-jsonpath", cli.ExitOK, "audit", "-o", "jsonpath={range .items[*]}{.resource.name} {.deleted} {.guarded}{\"\\n\"}{end}")
	run("guard-protect-preview-yaml", cli.ExitFindings, "guard", "protect", "ns/"+s.Namespaces[0], "-o", "yaml")
	if r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes", "--wait=false"); r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	run("undo-preview-yaml", cli.ExitFindings, "undo", "--latest", "-o", "yaml")
	run("journal-list-yaml", cli.ExitOK, "undo", "--list", "-o", "yaml")
}

// TestGoldenCheck pins check's outputs on a seeded app: an untracked namespace the change adopts,
// a hook it leaves alone, and a tracked ConfigMap it prunes; and --fail-on's exit codes.
func TestGoldenCheck(t *testing.T) {
	env := labtest.Get(t)
	ctx := labtest.Context(t)
	for _, ns := range []string{"check-adopt", "check-dest"} {
		if err := env.Create(ctx, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.DeleteNamespace(ns) })
	}
	// The golden counts check-adopt's contents, which kube-controller-manager adds to.
	env.WaitDefaultObjects(t, "check-adopt", "check-dest")
	for name, tracked := range map[string]bool{"check-settings": true, "check-gone-from-git": true, "check-hook": false} {
		meta := map[string]any{"name": name, "namespace": "check-dest"}
		if tracked {
			meta["labels"] = map[string]any{"app.kubernetes.io/instance": "checked"}
			meta["annotations"] = map[string]any{"argocd.argoproj.io/tracking-id": "checked:/ConfigMap:check-dest/" + name}
		}
		if err := env.Create(ctx, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}); err != nil {
			t.Fatal(err)
		}
	}
	env.SeedApplication(t, argocdNamespace, "checked", map[string]any{"automated": map[string]any{"prune": true}}, []any{
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "check-dest", "name": "check-settings", "status": "Synced"},
		map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "check-dest", "name": "check-gone-from-git", "status": "Synced"},
	})
	patch := []byte(`{"spec":{"destination":{"namespace":"check-dest"}}}`)
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(argocdNamespace).Patch(ctx, "checked", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	manifests := filepath.Join("testdata", "check", "after.yaml")
	journals := labtest.TempDir(t)
	for _, c := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"check-table", nil, cli.ExitOK},
		{"check-markdown", []string{"-o", "markdown"}, cli.ExitOK},
		{"check-json", []string{"-o", "json"}, cli.ExitOK},
		{"check-fail-on-adoption", []string{"--fail-on", "adoption", "-o", "name"}, cli.ExitFindings},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := unprune(t, env.State.Kubeconfig, journals, append([]string{"check", "checked", "--manifests", manifests}, c.args...)...)
			if r.Code != c.wantCode {
				t.Errorf("exit %d, want %d", r.Code, c.wantCode)
			}
			goldenVarying(t, c.name, "# stdout\n"+r.Stdout+"# stderr\n"+r.Stderr, env, journals)
		})
	}
	// Nothing high-risk is adopted or pruned unguarded? The namespace is: --fail-on high fails too.
	if r := unprune(t, env.State.Kubeconfig, journals, "check", "checked", "--manifests", manifests, "--fail-on", "high"); r.Code != cli.ExitFindings {
		t.Errorf("--fail-on high: exit %d", r.Code)
	}
}

// TestDetachManyApps: three stuck apps in two namespaces are released by one `detach -A --all --yes`
// with one journal, and one undo restores all three. Not parallel: -A selects every app of the lab.
func TestDetachManyApps(t *testing.T) {
	env := labtest.Get(t)
	const other = "team-apps"
	if err := env.Create(labtest.Context(t), map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": other}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.DeleteNamespace(other) })
	a := seed(t, env, "many-a", "many-a-ns")
	b := seed(t, env, "many-b", "many-b-ns")
	// An app outside Argo CD's namespace tracks by <namespace>_<name>.
	c := env.Seed(t, other, "many-c", "many-c-ns")
	instance := other + "_many-c"
	patch := fmt.Sprintf(`{"metadata":{"labels":{"app.kubernetes.io/instance":%q},"annotations":{"argocd.argoproj.io/tracking-id":"%s:/Namespace:default/many-c-ns"}}}`, instance, instance)
	if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), "many-c-ns", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, ns := range []string{a.Namespaces[0], b.Namespaces[0], c.Namespaces[0]} {
		u := namespace(t, env, ns)
		before[ns] = fmt.Sprint(u.GetLabels(), u.GetAnnotations())
	}
	journals := labtest.TempDir(t)
	// Argo CD reconciles Applications outside its namespace only where application.namespaces says
	// so: until then -A leaves many-c out, and says so.
	if r := unprune(t, env.State.Kubeconfig, journals, "scan", "-A", "-o", "json"); !strings.Contains(r.Stdout, "many-a") ||
		strings.Contains(r.Stdout, "many-c") || !strings.Contains(r.Stderr, "Application left out") {
		t.Fatalf("scan -A before %s enables %s: exit %d\n%s\n%s", argocd.CmdParamsConfigMap, other, r.Code, r.Stdout, r.Stderr)
	}
	params := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "argocd", "name": argocd.CmdParamsConfigMap},
		"data": map[string]any{argocd.ParamAppNamespaces: other}}
	if err := env.Create(labtest.Context(t), params); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().ConfigMaps("argocd").Delete(context.Background(), argocd.CmdParamsConfigMap, metav1.DeleteOptions{})
	})
	r := unprune(t, env.State.Kubeconfig, journals, "detach", "-A", "--all", "--yes", "--wait=false")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach -A --all: exit %d", r.Code)
	}
	for _, ns := range []string{a.Namespaces[0], b.Namespaces[0], c.Namespaces[0]} {
		if _, tracked := namespace(t, env, ns).GetAnnotations()["argocd.argoproj.io/tracking-id"]; tracked {
			t.Errorf("%s is still tracked", ns)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 || !strings.Contains(paths[0], "-3apps-") {
		t.Fatalf("want one journal for the three apps, got %v", paths)
	}
	if r := unprune(t, env.State.Kubeconfig, journals, "undo", paths[0], "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d", r.Code)
	}
	for ns, want := range before {
		u := namespace(t, env, ns)
		if got := fmt.Sprint(u.GetLabels(), u.GetAnnotations()); got != want {
			t.Errorf("%s after undo: %s, want %s", ns, got, want)
		}
	}
}
