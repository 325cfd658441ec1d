//go:build lab

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// policyOnce installs unprune's admission policy once per lab: it is cluster-wide and only denies
// deleting labelled objects, so the other tests are not affected. Every test that applies it
// applies policyArgs, so that none takes away a kind another relies on.
var policyOnce sync.Once

// policyArgs are the policy's kinds (ConfigMaps: TestForceReplaceOfASharedObject) and break-glass group.
var policyArgs = []string{"guard", "policy", "--kinds=namespaces,crds,configmaps", "--break-glass-group=lab-break-glass", "--apply", "--yes"}

func installPolicy(t *testing.T, env *labtest.Env) {
	t.Helper()
	policyOnce.Do(func() {
		r := unprune(t, env, labtest.TempDir(t), append([]string{"--argocd-namespace=argocd-v361-annotation"}, policyArgs...)...)
		if r.Code != cli.ExitOK {
			t.Fatalf("guard policy --apply exit %d", r.Code)
		}
	})
}

// auditRow runs audit --probe and returns the row for kind/name of app, if any.
func auditRow(t *testing.T, env *labtest.Env, install *labtest.Install, app *labtest.App, kind, name string) (printer.AuditItem, bool) {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "audit", "--probe", "-o", "json")
	if r.Code != cli.ExitOK {
		t.Fatalf("audit exit %d", r.Code)
	}
	var doc printer.AuditReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	for _, row := range doc.Items {
		if row.Application.Name == app.Name && row.Resource.Kind == kind && row.Resource.Name == name {
			return row, true
		}
	}
	return printer.AuditItem{}, false
}

// TestGuardPolicyStopsPrune: a tracked, reverted Namespace (and a CRD with custom resources)
// protected by `guard policy` + `guard protect` survives a manual sync with prune, which reports
// the denial; the same scenario without protection deletes them (the control). audit --probe calls
// the guard effective only once the API server enforces it.
func TestGuardPolicyStopsPrune(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	// Argo CD never writes tracking metadata onto a CRD it applies; a CRD is tracked (and so can be
	// pruned) when its manifest carries the instance label itself, as Helm-rendered CRDs do. Label
	// tracking is the mode where that happens.
	tracking := map[string]string{"Namespace": "annotation", "CustomResourceDefinition": "label"}
	for _, kind := range []string{"Namespace", "CustomResourceDefinition"} {
		t.Run(kind, func(t *testing.T) {
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: tracking[kind]})
			argocdNS := "--argocd-namespace=" + install.Namespace()
			type subject struct {
				app      *labtest.App
				name     string
				reverted string
			}
			// One protected, one not (the control).
			subjects := map[bool]*subject{}
			for _, protect := range []bool{true, false} {
				app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
				s := &subject{app: app}
				if kind == "Namespace" {
					s.name = labtest.UniqueName("guarded")
					t.Cleanup(func() { unprotectNamespace(env, s.name); env.DeleteNamespace(s.name) })
					s.reverted = app.Incident(t, s.name, nil)
				} else {
					s.name, s.reverted = crdIncident(t, env, app)
				}
				subjects[protect] = s
			}
			p := subjects[true]
			resource := "ns/" + p.name
			if kind != "Namespace" {
				resource = "crd/" + p.name
			}
			// Before any guard: the probe says the API server would delete it.
			row, ok := auditRow(t, env, install, p.app, kind, p.name)
			if !ok || row.Deleted != string(audit.Now) || row.Guarded || row.Probe == nil || row.Probe.Result != string(audit.ProbeAllowed) {
				t.Fatalf("audit before guarding: %+v (found %t); want an unguarded row the probe allows", row, ok)
			}
			installPolicy(t, env)
			if r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "protect", resource, "--yes"); r.Code != cli.ExitOK {
				t.Fatalf("guard protect exit %d", r.Code)
			}
			// A new policy takes a moment to be enforced: poll the probe, never sleep.
			labtest.Eventually(t, 60*time.Second, "audit --probe to see the guard enforced", func() (bool, string) {
				row, _ := auditRow(t, env, install, p.app, kind, p.name)
				return row.Guarded && row.Probe != nil && row.Probe.Result == string(audit.ProbeDenied) && hasGuard(row, guard.PolicyGuard), fmt.Sprintf("%+v", row)
			})

			op := p.app.Sync(t, true)
			if op.Phase == "Succeeded" || !strings.Contains(op.Message+resultMessages(op), "protected from deletion") {
				t.Errorf("prune sync of the protected %s: %s %q %s; want the policy's denial", kind, op.Phase, op.Message, resultMessages(op))
			}
			if !exists(t, env, kind, p.name) {
				t.Fatalf("the protected %s %s was deleted", kind, p.name)
			}

			c := subjects[false]
			if op := c.app.Sync(t, true); op.Phase != "Succeeded" {
				t.Errorf("prune sync of the unprotected %s: %s %s", kind, op.Phase, op.Message)
			}
			labtest.Eventually(t, 60*time.Second, "the unprotected "+kind+" to be deleted", func() (bool, string) {
				return !exists(t, env, kind, c.name), "still there"
			})
		})
	}
}

// TestProbeActsAsTheController: the lab runs each controller as its ServiceAccount with Argo CD's
// own ClusterRole, and audit --probe asks the API server as that account. The admin (system:masters,
// who may impersonate) gets the controller's answer: allowed, then denied once unprune's policy
// protects the namespace. A user who may read but neither delete nor impersonate is refused the
// impersonation by the API server, and its own probe cannot judge; acting as that user with --as
// must not lend it the admin's right to impersonate. Exit codes are --fail-on any's: 1 while an
// unguarded (or unjudged) deletion exists, 0 once none does.
func TestProbeActsAsTheController(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	ns := labtest.UniqueName("probed")
	t.Cleanup(func() { unprotectNamespace(env, ns); env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	controller := "system:serviceaccount:" + install.Namespace() + ":" + lab.ControllerAccount
	reader := labtest.UniqueName("probe-reader")
	readerKubeconfig := env.ReaderKubeconfig(t, reader)

	probe := func(kubeconfig string, args ...string) (printer.AuditItem, int) {
		t.Helper()
		args = append(append([]string{"--argocd-namespace=" + install.Namespace()}, args...), "audit", app.Name, "--probe", "--fail-on=any", "-o", "json")
		r := cmdtest.Run(t, kubeconfig, labtest.TempDir(t), args...)
		var doc printer.AuditReport
		if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
			t.Fatalf("audit (exit %d): %v\n%s", r.Code, err, r.Stderr)
		}
		for _, row := range doc.Items {
			if row.Resource.Kind == "Namespace" && row.Resource.Name == ns {
				return row, r.Code
			}
		}
		t.Fatalf("audit does not list namespace %s:\n%s", ns, r.Stdout)
		return printer.AuditItem{}, r.Code
	}

	row, code := probe(env.State.Kubeconfig)
	if code != cli.ExitFindings || row.Guarded || row.Probe == nil || row.Probe.Result != string(audit.ProbeAllowed) || row.Probe.As != controller {
		t.Fatalf("admin: exit %d, row %+v; want exit %d and an unguarded row the probe as %s allows", code, row, cli.ExitFindings, controller)
	}
	for who, kubeconfig := range map[string][]string{
		"reader":            {readerKubeconfig},
		"admin --as reader": {env.State.Kubeconfig, "--as=system:serviceaccount:default:" + reader},
	} {
		row, code = probe(kubeconfig[0], kubeconfig[1:]...)
		if code != cli.ExitFindings || row.Guarded || row.Probe == nil || row.Probe.Result != string(audit.ProbeInconclusive) || row.Probe.As != "" {
			t.Fatalf("%s: exit %d, row %+v; want exit %d and an unguarded row the probe cannot judge", who, code, row, cli.ExitFindings)
		}
	}

	installPolicy(t, env)
	if r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "guard", "protect", "ns/"+ns, "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("guard protect exit %d", r.Code)
	}
	// A new policy takes a moment to be enforced: poll the probe, never sleep.
	labtest.Eventually(t, 60*time.Second, "the probe as the controller to be denied", func() (bool, string) {
		row, code = probe(env.State.Kubeconfig)
		return row.Probe != nil && row.Probe.Result == string(audit.ProbeDenied), fmt.Sprintf("exit %d, %+v", code, row)
	})
	if code != cli.ExitOK || !row.Guarded || row.Probe.As != controller || !hasGuard(row, audit.GuardProbeDenied) {
		t.Fatalf("admin with the policy: exit %d, row %+v; want exit %d and a row guarded by the denial to %s", code, row, cli.ExitOK, controller)
	}
}

// TestGuardConfirm: Prune=confirm added by guard makes a prune sync wait for approval on the
// Application; the approval lets it proceed.
func TestGuardConfirm(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("confirm")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	journals := labtest.TempDir(t)
	r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "guard", "confirm", "ns/"+ns, "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("guard confirm exit %d", r.Code)
	}
	_, annotations, _ := metadataOf(t, env, ns)
	if annotations["argocd.argoproj.io/sync-options"] != "Prune=confirm" {
		t.Fatalf("sync-options = %q", annotations["argocd.argoproj.io/sync-options"])
	}

	// The sync must start from a view of the namespace that has the new option. A refresh can be
	// consumed by a comparison already under way, whose view predates the annotation (seen once on a
	// loaded machine): a second one starts after the first has finished.
	app.RefreshAndWait(t)
	app.RefreshAndWait(t)
	app.RequestSync(t, true)
	s := app.WaitStatus(t, 60*time.Second, "to wait for pruning confirmation", func(s labtest.Status) bool {
		return s.Operation.Phase == "Running" && strings.Contains(s.Operation.Message, "waiting for pruning confirmation of /Namespace/"+ns)
	})
	if !exists(t, env, "Namespace", ns) {
		t.Fatalf("the namespace was pruned without confirmation: %s", s)
	}
	// Approve, as `argocd app confirm-deletion` would: the prune proceeds.
	approve := fmt.Sprintf(`{"metadata":{"annotations":{"argocd.argoproj.io/deletion-approved":%q}}}`, time.Now().UTC().Add(time.Second).Format(time.RFC3339))
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(app.Namespace).Patch(labtest.Context(t), app.Name, types.MergePatchType, []byte(approve), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	labtest.Eventually(t, 90*time.Second, "the approved prune to delete "+ns, func() (bool, string) {
		return !exists(t, env, "Namespace", ns), "still there"
	})
}

func hasGuard(row printer.AuditItem, g any) bool {
	for _, x := range row.Guards {
		if fmt.Sprint(x) == fmt.Sprint(g) {
			return true
		}
	}
	return false
}

func resultMessages(op labtest.Operation) string {
	var msgs []string
	for _, r := range op.Results {
		msgs = append(msgs, r.Kind+"/"+r.Name+": "+r.Message)
	}
	return strings.Join(msgs, "; ")
}

func exists(t *testing.T, env *labtest.Env, kind, name string) bool {
	t.Helper()
	gvr := labtest.GVRNamespace
	if kind != "Namespace" {
		gvr = gvrCRD
	}
	u, err := env.Dynamic.Resource(gvr).Get(labtest.Context(t), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.GetDeletionTimestamp() == nil
}

// crdIncident commits a CRD labelled with the app's instance, as a Helm chart whose release is named
// like the app renders it, creates one custom resource of it outside git, syncs and reverts.
func crdIncident(t *testing.T, env *labtest.Env, app *labtest.App) (name, reverted string) {
	t.Helper()
	group := strings.ReplaceAll(labtest.UniqueName("g"), "-", "") + ".example.com"
	name = "widgets." + group
	t.Cleanup(func() {
		unprotect(env, gvrCRD, name)
		_ = env.Dynamic.Resource(gvrCRD).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	app.Repo.Write(t, app.Path+"/crd.yaml", fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  labels:
    app.kubernetes.io/instance: %s
spec:
  group: %s
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, name, app.Instance(), group))
	added := app.Repo.Commit(t, "add CRD")
	// The API server defaults fields of a CRD, which Argo CD may show as a diff: wait for the sync
	// to have applied it rather than for Synced.
	app.RefreshUntil(t, labtest.ControllerTimeout, "to have synced the CRD", func(s labtest.Status) bool {
		_, listed := s.Find("CustomResourceDefinition", name)
		return s.Revision == added && s.Operation.Phase == "Succeeded" && listed
	})
	labtest.Eventually(t, 30*time.Second, "the CRD to be served", func() (bool, string) {
		err := env.Create(labtest.Context(t), map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": app.DestNamespace}})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	reverted = app.Repo.Revert(t)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning of the CRD", labtest.RequiresPruningAt(reverted, "CustomResourceDefinition", name))
	return name, reverted
}

func unprotectNamespace(env *labtest.Env, name string) { unprotect(env, labtest.GVRNamespace, name) }

// unprotect removes the protection label so cleanup can delete the object.
func unprotect(env *labtest.Env, gvr schema.GroupVersionResource, name string) {
	_, _ = env.Dynamic.Resource(gvr).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"unprune.dev/protected":null}}}`), metav1.PatchOptions{})
}
