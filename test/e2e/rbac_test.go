//go:build lab

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// applyRBAC creates deploy/rbac's ClusterRoles in the lab, as `kubectl apply -k deploy/rbac` does.
func applyRBAC(t *testing.T, env *labtest.Env) {
	t.Helper()
	dir := filepath.Join("..", "..", "deploy", "rbac")
	var k struct{ Resources []string }
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(raw, &k)
	}
	if err != nil || len(k.Resources) == 0 {
		t.Fatalf("deploy/rbac/kustomization.yaml: %v (%d resources)", err, len(k.Resources))
	}
	for _, f := range k.Resources {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := env.Create(labtest.Context(t), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// TestEachVerbRunsUnderItsRole: each verb, run as a ServiceAccount bound to deploy/rbac's role for
// it and to nothing else, does its whole job — and the read-only role cannot release. A role that
// lacks a right its verb uses fails here: the API server, not unprune, judges every request.
func TestEachVerbRunsUnderItsRole(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	applyRBAC(t, env)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	ns := labtest.UniqueName("rbac")
	t.Cleanup(func() { unprotectNamespace(env, ns); env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)

	as := func(role string) func(args ...string) cmdtest.Result {
		user := labtest.UniqueName(strings.TrimPrefix(role, "unprune-"))
		kubeconfig := filepath.Join(labtest.TempDir(t), user+".kubeconfig")
		if err := env.State.ServiceAccountKubeconfig(labtest.Context(t), "default", user, role, kubeconfig); err != nil {
			t.Fatal(err)
		}
		journals := labtest.TempDir(t)
		return func(args ...string) cmdtest.Result {
			t.Helper()
			return cmdtest.Run(t, kubeconfig, journals, append([]string{"--argocd-namespace=" + install.Namespace()}, args...)...)
		}
	}
	tracked := func() bool {
		_, annotations, _ := metadataOf(t, env, ns)
		_, ok := annotations[trackingID]
		return ok
	}
	ok := func(r cmdtest.Result, what string, codes ...int) {
		t.Helper()
		for _, c := range codes {
			if r.Code == c {
				return
			}
		}
		t.Fatalf("%s: exit %d, want one of %v\n%s", what, r.Code, codes, r.Stderr)
	}

	manifests := filepath.Join(labtest.TempDir(t), "after.yaml")
	if err := os.WriteFile(manifests, []byte(""), 0o600); err != nil {
		t.Fatal(err)
	}
	view := as("unprune-view")
	ok(view("scan", app.Name), "scan as unprune-view", cli.ExitFindings)
	ok(view("audit", app.Name, "--fail-on=any"), "audit as unprune-view", cli.ExitFindings)
	ok(view("check", app.Name, "--manifests", manifests, "--fail-on=high"), "check as unprune-view", cli.ExitFindings)
	ok(view("undo", "--list"), "undo --list as unprune-view", cli.ExitOK)
	if r := view("detach", app.Name, "Namespace/"+ns, "--yes"); r.Code == cli.ExitOK || !tracked() {
		t.Fatalf("detach as unprune-view: exit %d, tracked %t; want it refused by the API server and nothing changed", r.Code, tracked())
	}

	probe := as("unprune-probe")
	r := probe("audit", app.Name, "--probe", "-o", "json")
	ok(r, "audit --probe as unprune-probe", cli.ExitOK, cli.ExitFindings)
	var doc printer.AuditReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("audit --probe -o json: %v\n%s", err, r.Stdout)
	}
	controller := "system:serviceaccount:" + install.Namespace() + ":" + lab.ControllerAccount
	probed := false
	for _, row := range doc.Items {
		if row.Resource.Kind == "Namespace" && row.Resource.Name == ns {
			probed = row.Probe != nil && row.Probe.Result == string(audit.ProbeAllowed) && row.Probe.As == controller
		}
	}
	if !probed {
		t.Fatalf("audit --probe as unprune-probe did not probe Namespace %s as %s:\n%s", ns, controller, r.Stdout)
	}

	release := as("unprune-release")
	ok(release("detach", app.Name, "Namespace/"+ns, "--yes"), "detach as unprune-release", cli.ExitOK)
	if tracked() {
		t.Fatal("detach as unprune-release: still tracked")
	}
	ok(release("undo", "--latest", "--yes"), "undo as unprune-release", cli.ExitOK)
	if !tracked() {
		t.Fatal("undo as unprune-release: tracking not back")
	}
	ok(release("guard", "confirm", "ns/"+ns, "--yes"), "guard confirm as unprune-release", cli.ExitOK)
	ok(release("guard", "protect", "ns/"+ns, "--yes"), "guard protect as unprune-release", cli.ExitOK)
	if labels, annotations, _ := metadataOf(t, env, ns); labels["unprune.dev/protected"] != "true" || !strings.Contains(annotations["argocd.argoproj.io/sync-options"], "Prune=confirm") {
		t.Fatalf("guards as unprune-release: labels %v, annotations %v", labels, annotations)
	}

	policy := as("unprune-guard-policy")
	ok(policy(policyArgs...),
		"guard policy --apply as unprune-guard-policy", cli.ExitOK)

	renamed := labtest.NewRepo(t)
	old := install.CreateApp(t, labtest.AppOptions{Repo: renamed})
	head := renamed.Head(t)
	old.RefreshUntil(t, labtest.ControllerTimeout, "to see "+head, func(s labtest.Status) bool { return s.Revision == head })
	if op := old.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync: %s %s", op.Phase, op.Message)
	}
	old.WaitSynced(t, head)
	newName := labtest.UniqueName("rbac-renamed")
	t.Cleanup(func() { dropApp(env, old.Namespace, newName) })
	if r := release("rename", old.Name, newName, "--yes"); r.Code == cli.ExitOK {
		t.Fatal("rename as unprune-release succeeded; it may not create or delete Applications")
	}
	if _, exists := appExists(t, env, old.Namespace, newName); exists {
		t.Fatal("rename as unprune-release left the new app behind")
	}
	rename := as("unprune-rename")
	ok(rename("rename", old.Name, newName, "--yes", "--timeout=3m"), "rename as unprune-rename", cli.ExitOK)
	labtest.Eventually(t, time.Minute, "the old Application to be gone", func() (bool, string) {
		_, exists := appExists(t, env, old.Namespace, old.Name)
		return !exists, "still there"
	})
}
