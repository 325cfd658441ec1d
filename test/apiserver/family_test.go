//go:build lab

package apiserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab/labtest"
)

// seedWholeApp creates an Application as a parent (or an ApplicationSet) would have left it:
// tracked by parent when given, owned by owner when given, with finalizers, and a status listing
// rows. No controller runs here, so the cleanup removes the finalizers before deleting it.
func seedWholeApp(t *testing.T, env *labtest.Env, name, parent string, finalizers []any, owner map[string]any, dest string, rows []any) {
	t.Helper()
	meta := map[string]any{"name": name, "namespace": argocdNamespace, "finalizers": finalizers}
	if parent != "" {
		meta["labels"] = map[string]any{"app.kubernetes.io/instance": parent}
		meta["annotations"] = map[string]any{"argocd.argoproj.io/tracking-id": parent + ":argoproj.io/Application:" + argocdNamespace + "/" + name}
	}
	if owner != nil {
		meta["ownerReferences"] = []any{owner}
	}
	app := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta,
		"spec": map[string]any{"project": "default",
			"source":      map[string]any{"repoURL": "file:///nonexistent", "path": name, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": dest},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}}},
		"status": map[string]any{"sync": map[string]any{"status": "Synced"}, "resources": rows}}
	if err := env.Create(labtest.Context(t), app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ri := env.Dynamic.Resource(labtest.GVRApplication).Namespace(argocdNamespace)
		_, _ = ri.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = ri.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// seedTeam creates a namespace tracked by app (annotation+label) holding one ConfigMap.
func seedTeam(t *testing.T, env *labtest.Env, ns, app string) {
	t.Helper()
	ctx := labtest.Context(t)
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns,
			"labels":      map[string]any{"app.kubernetes.io/instance": app},
			"annotations": map[string]any{"argocd.argoproj.io/tracking-id": app + ":/Namespace:" + ns + "/" + ns}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "ledger", "namespace": ns}},
	} {
		if err := env.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	env.WaitDefaultObjects(t, ns)
}

func appRow(name string) map[string]any {
	return map[string]any{"group": "argoproj.io", "version": "v1alpha1", "kind": "Application", "namespace": argocdNamespace, "name": name, "status": "Synced"}
}

func namespaceRow(name string) map[string]any {
	return map[string]any{"version": "v1", "kind": "Namespace", "name": name, "status": "Synced"}
}

// TestGoldenFamily pins check's whole-app findings in every format — an app of apps whose commit
// drops a child with the resources finalizer (cascade into its namespace) and one without
// (orphaned) — the check of an ApplicationSet dropping an element, and audit's row for an app its
// parent may delete. Not parallel: audit and the set's owned apps are listed across the lab.
func TestGoldenFamily(t *testing.T) {
	env := labtest.Get(t)
	seedTeam(t, env, "family-payments", "family-payments")
	seedTeam(t, env, "family-search", "family-search")
	seedWholeApp(t, env, "family-payments", "family-root", []any{"resources-finalizer.argocd.argoproj.io"}, nil, "family-payments", []any{namespaceRow("family-payments")})
	seedWholeApp(t, env, "family-search", "family-root", nil, nil, "family-search", []any{namespaceRow("family-search")})
	seedWholeApp(t, env, "family-root", "", nil, nil, argocdNamespace, []any{appRow("family-payments"), appRow("family-search")})
	empty := filepath.Join(labtest.TempDir(t), "after.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	journals := labtest.TempDir(t)
	run := func(name string, wantCode int, args ...string) {
		t.Helper()
		r := unprune(t, env.State.Kubeconfig, journals, args...)
		if r.Code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s", name, r.Code, wantCode, r.Stderr)
		}
		goldenVarying(t, name, "# stdout\n"+r.Stdout+"# stderr\n"+r.Stderr, env, journals)
	}
	for _, c := range []struct{ name, format string }{{"family-check-table", ""}, {"family-check-markdown", "markdown"}, {"family-check-json", "json"}} {
		args := []string{"check", "family-root", "--manifests", empty, "--fail-on", "high"}
		if c.format != "" {
			args = append(args, "-o", c.format)
		}
		run(c.name, cli.ExitFindings, args...)
	}
	run("family-audit-json", cli.ExitFindings, "audit", "family-root", "family-payments", "family-search", "-o", "json", "--fail-on", "high")
	goldenSet(t, env, run)
}

// goldenSet seeds an ApplicationSet owning two apps and checks the change dropping one.
func goldenSet(t *testing.T, env *labtest.Env, run func(string, int, ...string)) {
	t.Helper()
	set := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": "family-teams", "namespace": argocdNamespace},
		"spec": map[string]any{
			"generators": []any{map[string]any{"list": map[string]any{"elements": []any{
				map[string]any{"team": "family-orders"}, map[string]any{"team": "family-billing"}}}}},
			"template": map[string]any{"metadata": map[string]any{"name": "{{team}}"}, "spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "{{team}}", "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "{{team}}"}}}}}
	if err := env.Create(labtest.Context(t), set); err != nil {
		t.Fatal(err)
	}
	ri := env.Dynamic.Resource(gvrApplicationSet).Namespace(argocdNamespace)
	t.Cleanup(func() { _ = ri.Delete(context.Background(), "family-teams", metav1.DeleteOptions{}) })
	live, err := ri.Get(labtest.Context(t), "family-teams", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "family-teams", "uid": string(live.GetUID()), "controller": true}
	for _, team := range []string{"family-orders", "family-billing"} {
		seedTeam(t, env, team, team)
		seedWholeApp(t, env, team, "", []any{"resources-finalizer.argocd.argoproj.io"}, owner, team, []any{namespaceRow(team)})
	}
	set["spec"].(map[string]any)["generators"] = []any{map[string]any{"list": map[string]any{"elements": []any{map[string]any{"team": "family-orders"}}}}}
	path := filepath.Join(labtest.TempDir(t), "set.yaml")
	if err := os.WriteFile(path, []byte(mustJSON(t, set)), 0o644); err != nil {
		t.Fatal(err)
	}
	run("family-set-markdown", cli.ExitFindings, "check", "applicationset/family-teams", "--manifests", path, "-o", "markdown", "--fail-on", "high")
}

var gvrApplicationSet = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// TestFamilyClustersGenerator: check applicationset/NAME reads Argo CD's cluster Secrets for a
// clusters generator — names, servers and labels, through the real API server — and a selector
// narrowed by the change drops the app of the cluster it no longer matches.
func TestFamilyClustersGenerator(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	ctx := labtest.Context(t)
	for _, c := range []struct{ name, region string }{{"family-eu", "eu"}, {"family-us", "us"}} {
		secret := map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": c.name, "namespace": argocdNamespace, "labels": map[string]any{
				"argocd.argoproj.io/secret-type": "cluster", "family-env": "prod", "family-region": c.region}},
			"stringData": map[string]any{"name": c.name, "server": "https://" + c.name + ".example"}}
		if err := env.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Kube.CoreV1().Secrets(argocdNamespace).Delete(context.Background(), c.name, metav1.DeleteOptions{})
		})
	}
	selector := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
			"metadata": map[string]any{"name": "family-clusters", "namespace": argocdNamespace},
			"spec": map[string]any{
				"generators": []any{map[string]any{"clusters": map[string]any{"selector": map[string]any{"matchLabels": labels}}}},
				"template": map[string]any{"metadata": map[string]any{"name": "{{name}}-app"}, "spec": map[string]any{"project": "default",
					"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "{{nameNormalized}}", "targetRevision": "main"},
					"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "{{name}}"}}}}}
	}
	set := selector(map[string]any{"family-env": "prod"})
	if err := env.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	ri := env.Dynamic.Resource(gvrApplicationSet).Namespace(argocdNamespace)
	t.Cleanup(func() { _ = ri.Delete(context.Background(), "family-clusters", metav1.DeleteOptions{}) })
	live, err := ri.Get(ctx, "family-clusters", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "family-clusters", "uid": string(live.GetUID()), "controller": true}
	for _, c := range []string{"family-eu", "family-us"} {
		seedWholeApp(t, env, c+"-app", "", []any{"resources-finalizer.argocd.argoproj.io"}, owner, c, nil)
	}
	path := filepath.Join(labtest.TempDir(t), "set.yaml")
	if err := os.WriteFile(path, []byte(mustJSON(t, selector(map[string]any{"family-env": "prod", "family-region": "eu"}))), 0o644); err != nil {
		t.Fatal(err)
	}
	r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "check", "applicationset/family-clusters", "--manifests", path, "-o", "json")
	var doc printer.CheckReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.ApplicationSet == nil {
		t.Fatalf("exit %d: %v\n%s", r.Code, err, r.Stderr)
	}
	if g := doc.ApplicationSet.Generated; len(g) != 1 || g[0] != "family-eu-app" || len(doc.ApplicationSet.NotEvaluated) != 0 {
		t.Errorf("generated %v, not evaluated %v; want only family-eu-app", g, doc.ApplicationSet.NotEvaluated)
	}
	if len(doc.Applications) != 1 || doc.Applications[0].Application.Name != "family-us-app" || doc.Applications[0].Fate != "Cascade" {
		t.Errorf("applications %+v; want family-us-app deleted with its finalizer", doc.Applications)
	}
}
