//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// TestThroughArgoCDsAPI: an operator with only Argo CD access releases the incident through Argo CD's
// API, as the argocd plugin: the project-scoped user scans, detaches (the app Synced, the object
// intact, a prune sync deleting nothing) and undoes; the read-only user scans but is denied the
// patch by Argo CD; the project-scoped user is denied another project's app. It works for an app
// deploying to the remote cluster too.
func TestThroughArgoCDsAPI(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-api", Server: true})
	remote := env.Remote(t)
	install.RegisterRemote(t, remote, "remote")
	server := strings.TrimPrefix(install.ServerURL(t), "http://")
	as := func(t *testing.T, user lab.ServerUser, journals string, args ...string) cmdtest.Result {
		full := append([]string{"--server", server, "--plaintext", "--auth-token", install.Token(t, user)}, args...)
		return cmdtest.RunNamed(t, cli.NameArgoCDPlugin, journals, full...)
	}

	for _, tc := range []struct {
		name string
		opts labtest.AppOptions
	}{
		{"in-cluster", labtest.AppOptions{}},
		{"remote", labtest.AppOptions{DestName: "remote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Repo, opts.Automated, opts.Project = labtest.NewRepo(t), true, lab.ServerProject
			app := install.CreateApp(t, opts)
			ns := labtest.UniqueName("viaapi")
			t.Cleanup(func() { app.Cluster.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)
			before, err := app.Cluster.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			journals := labtest.TempDir(t)

			r := as(t, lab.ServerDeployer, journals, "scan", "-A", "-o", "json")
			var doc printer.ScanReport
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != cli.ExitFindings {
				t.Fatalf("scan as deployer: exit %d, %v", r.Code, err)
			}
			if !scanHas(doc, app.Name, ns) {
				t.Fatalf("scan through the API does not list %s", ns)
			}
			// The read-only user sees it too, but Argo CD denies the patch: nothing changes.
			if r := as(t, lab.ServerViewer, journals, "scan", "-A"); r.Code != cli.ExitFindings {
				t.Errorf("scan as viewer: exit %d", r.Code)
			}
			r = as(t, lab.ServerViewer, labtest.TempDir(t), "detach", app.Name, "--all", "--yes")
			if r.Code != cli.ExitFailure || !strings.Contains(r.Stdout+r.Stderr, "Argo CD denied") {
				t.Errorf("detach as viewer: exit %d; want %d and Argo CD's denial", r.Code, cli.ExitFailure)
			}
			if got, _ := app.Cluster.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{}); got.ResourceVersion != before.ResourceVersion {
				t.Fatalf("the viewer's denied detach changed the namespace")
			}

			r = as(t, lab.ServerDeployer, journals, "detach", app.Name, "--all", "--yes")
			if r.Code != cli.ExitOK || !strings.Contains(r.Stdout, "is Synced") {
				t.Fatalf("detach as deployer: exit %d", r.Code)
			}
			app.WaitSynced(t, reverted)
			after, _ := app.Cluster.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if after.UID != before.UID || after.Annotations[trackingID] != "" {
				t.Fatalf("after detach: uid %s → %s, tracking %q", before.UID, after.UID, after.Annotations[trackingID])
			}
			if op := app.Sync(t, true); op.Phase != "Succeeded" {
				t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
			}
			if got, err := app.Cluster.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{}); err != nil || got.UID != before.UID {
				t.Fatalf("the prune sync touched the released namespace: %v", err)
			}
			// Released, the object is no longer the app's, and Argo CD's API reaches only an app's
			// resources: undo through it says so and how to do it otherwise, changing nothing.
			r = as(t, lab.ServerDeployer, journals, "undo", "--latest", "--yes")
			if r.Code != cli.ExitFailure || !strings.Contains(r.Stdout, "reaches only Application") {
				t.Fatalf("undo through the API: exit %d; want %d and the way to undo it", r.Code, cli.ExitFailure)
			}
			// With a kubeconfig for the cluster, the same journal is undone exactly.
			reach := []string{}
			if tc.opts.DestName != "" {
				reach = []string{"--cluster-context", "remote=remote-admin"}
			}
			r = cmdtest.Run(t, mergedKubeconfig(t, env, remote), journals, append([]string{"--argocd-namespace=" + install.Namespace(), "undo", "--latest", "--yes"}, reach...)...)
			if r.Code != cli.ExitOK {
				t.Fatalf("undo with the kubeconfig: exit %d", r.Code)
			}
			restored, _ := app.Cluster.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if fmt.Sprint(restored.Labels, restored.Annotations) != fmt.Sprint(before.Labels, before.Annotations) {
				t.Errorf("undo: %v %v; want %v %v", restored.Labels, restored.Annotations, before.Labels, before.Annotations)
			}
		})
	}

	t.Run("another project", func(t *testing.T) {
		app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
		ns := labtest.UniqueName("otherproj")
		t.Cleanup(func() { env.DeleteNamespace(ns) })
		app.Incident(t, ns, nil)
		r := as(t, lab.ServerDeployer, labtest.TempDir(t), "detach", app.Name, "--all", "--yes")
		if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "Argo CD denied") {
			t.Errorf("deployer on a default-project app: exit %d; want %d and Argo CD's denial", r.Code, cli.ExitFailure)
		}
	})

	t.Run("write between plan and patch", func(t *testing.T) {
		app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, Project: lab.ServerProject})
		ns := labtest.UniqueName("apirace")
		t.Cleanup(func() { env.DeleteNamespace(ns) })
		app.Incident(t, ns, nil)
		c, err := argocdapi.Connect(argocdapi.Options{Server: server, PlainText: true, AuthToken: install.Token(t, lab.ServerDeployer)})
		if err != nil {
			t.Fatal(err)
		}
		argo := argocdapi.NewArgoCD(c, install.Namespace())
		s, err := argo.Settings(labtest.Context(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		e := &engine.Engine{ArgoCD: argo, Settings: s.Settings, Journals: journal.NewStore(labtest.TempDir(t), nil), ToolVersion: "test"}
		run, err := e.PlanDetach(labtest.Context(t), engine.DetachRequest{Apps: []engine.AppName{{Name: app.Name}}, All: true, Strategy: plan.StrategyUntrack})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"someone":"else"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		done, err := e.Execute(labtest.Context(t), run, engine.DryRunNone)
		if err != nil {
			t.Fatal(err)
		}
		it, via := done.Items[0], run.Items[0].Objects.Info().Via
		if it.Outcome != engine.OutcomeApplied || it.Attempts != 2 || via != cluster.ViaArgoCDAPI {
			t.Fatalf("%s after %d attempts (%s) via %s; want applied after a conflict and a re-plan", it.Outcome, it.Attempts, it.Message, via)
		}
		got, _ := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		if got.Labels["someone"] != "else" || got.Annotations[trackingID] != "" {
			t.Fatalf("after the raced detach: labels %v annotations %v", got.Labels, got.Annotations)
		}
		labtest.Eventually(t, 60*time.Second, "the app to drop the namespace", func() (bool, string) {
			_, listed := app.Status(t).Find("Namespace", ns)
			return !listed, "still listed"
		})
	})
}

func scanHas(doc printer.ScanReport, app, ns string) bool {
	for _, it := range doc.Items {
		if it.Application.Name == app && it.Resource.Name == ns {
			return true
		}
	}
	return false
}
