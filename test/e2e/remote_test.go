//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// mergedKubeconfig writes one kubeconfig with the lab's admin context ("lab", current) and the
// remote's contexts ("remote-admin", "remote-noaccess"), as an operator's kubeconfig holds several.
func mergedKubeconfig(t *testing.T, env *labtest.Env, remote *labtest.Remote) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for _, src := range []struct{ path, name string }{
		{env.State.Kubeconfig, "lab"}, {remote.Kubeconfig, "remote-admin"}, {remote.NoAccessKubeconfig, "remote-noaccess"},
	} {
		cfg, err := clientcmd.LoadFromFile(src.path)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[src.name] = cfg.Clusters[c.Cluster]
		merged.AuthInfos[src.name] = cfg.AuthInfos[c.AuthInfo]
		merged.Contexts[src.name] = &clientcmdapi.Context{Cluster: src.name, AuthInfo: src.name}
	}
	merged.CurrentContext = "lab"
	path := filepath.Join(labtest.TempDir(t), "kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// remoteToken is the bearer token of Argo CD's cluster Secret for the remote: no output may hold it.
func remoteToken(t *testing.T, env *labtest.Env, install *labtest.Install) string {
	t.Helper()
	secrets, err := env.Kube.CoreV1().Secrets(install.Namespace()).List(labtest.Context(t), metav1.ListOptions{LabelSelector: "argocd.argoproj.io/secret-type=cluster"})
	if err != nil || len(secrets.Items) == 0 {
		t.Fatalf("cluster Secrets: %v (%d)", err, len(secrets.Items))
	}
	var cfg struct {
		BearerToken string `json:"bearerToken"`
	}
	if err := json.Unmarshal(secrets.Items[0].Data["config"], &cfg); err != nil || cfg.BearerToken == "" {
		t.Fatalf("cluster Secret config: %v", err)
	}
	return cfg.BearerToken
}

// TestRemoteDestination is the incident in a destination cluster other than Argo CD's: scan shows it
// with its cluster; detach through the user's own context for that cluster (by server) and through
// Argo CD's credentials (by name) release it, the app Synced and the object intact; a prune sync
// deletes nothing; undo restores exactly. A user without rights there is refused by that cluster,
// nothing changed. No output or journal holds Argo CD's bearer token.
func TestRemoteDestination(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-remote"})
	install.RegisterRemote(t, remote, "remote")
	kubeconfig := mergedKubeconfig(t, env, remote)
	token := remoteToken(t, env, install)
	argocdNS := "--argocd-namespace=" + install.Namespace()
	var outputs []string
	run := func(t *testing.T, journals string, args ...string) cmdtest.Result {
		r := cmdtest.Run(t, kubeconfig, journals, args...)
		outputs = append(outputs, r.Stdout, r.Stderr)
		return r
	}
	t.Cleanup(func() {
		for _, o := range outputs {
			if strings.Contains(o, token) {
				t.Errorf("an output holds the remote's bearer token")
			}
		}
		for _, f := range journalFiles {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), token) {
				t.Errorf("journal %s holds the remote's bearer token", f)
			}
		}
	})

	for _, tc := range []struct {
		name  string
		opts  labtest.AppOptions
		reach []string
	}{
		{"own context, by server", labtest.AppOptions{DestServer: remote.Server}, []string{"--cluster-context", remote.Server + "=remote-admin"}},
		{"Argo CD's credentials, by name", labtest.AppOptions{DestName: "remote"}, []string{"--cluster-credentials=argocd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Repo, opts.Automated = labtest.NewRepo(t), true
			app := install.CreateApp(t, opts)
			ns := labtest.UniqueName("far")
			t.Cleanup(func() { remote.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)
			before, err := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			journals := labtest.TempDir(t)

			r := run(t, journals, append([]string{argocdNS, "scan", "-A", "-o", "json"}, tc.reach...)...)
			var doc printer.ScanReport
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, it := range doc.Items {
				if it.Application.Name == app.Name && it.Resource.Name == ns {
					found = it.Cluster.Name == "remote" && len(it.Tracking) > 0 && it.Error == ""
				}
			}
			if !found {
				t.Fatalf("scan does not show %s in cluster remote with its tracking:\n%s", ns, r.Stdout)
			}
			// Without a way to reach the cluster, detach says how, and changes nothing.
			if r := run(t, journals, argocdNS, "detach", app.Name, "--all", "--yes"); r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "--cluster-context") {
				t.Fatalf("detach without a way to the remote: exit %d", r.Code)
			}
			r = run(t, journals, append([]string{argocdNS, "detach", app.Name, "--all", "--yes"}, tc.reach...)...)
			if r.Code != cli.ExitOK || !strings.Contains(r.Stdout, "is Synced") {
				t.Fatalf("detach exit %d", r.Code)
			}
			app.WaitSynced(t, reverted)
			after, err := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil || after.UID != before.UID || after.Annotations[trackingID] != "" {
				t.Fatalf("namespace in the remote after detach: %v, uid %s → %s, tracking %q", err, before.UID, after.UID, after.Annotations[trackingID])
			}
			if op := app.Sync(t, true); op.Phase != "Succeeded" {
				t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
			}
			if got, err := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{}); err != nil || got.UID != before.UID || got.DeletionTimestamp != nil {
				t.Fatalf("the prune sync touched the released namespace: %v", err)
			}
			paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
			journalFiles = append(journalFiles, paths...)
			r = run(t, journals, append([]string{argocdNS, "undo", "--latest", "--yes"}, tc.reach...)...)
			if r.Code != cli.ExitOK {
				t.Fatalf("undo exit %d", r.Code)
			}
			restored, _ := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if fmt.Sprint(restored.Labels, restored.Annotations) != fmt.Sprint(before.Labels, before.Annotations) {
				t.Errorf("undo: %v %v; want %v %v", restored.Labels, restored.Annotations, before.Labels, before.Annotations)
			}
			app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning again", labtest.RequiresPruningAt(reverted, "Namespace", ns))
		})
	}

	t.Run("no rights in the remote", func(t *testing.T) {
		app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), DestServer: remote.Server, Automated: true})
		ns := labtest.UniqueName("norights")
		t.Cleanup(func() { remote.DeleteNamespace(ns) })
		app.Incident(t, ns, nil)
		before, _ := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		journals := labtest.TempDir(t)
		r := run(t, journals, argocdNS, "--cluster-context", "remote="+"remote-noaccess", "detach", app.Name, "--all", "--yes")
		if r.Code != cli.ExitFailure || !strings.Contains(r.Stdout+r.Stderr, "forbidden") || !strings.Contains(r.Stdout+r.Stderr, "remote") {
			t.Fatalf("exit %d; want %d, forbidden, naming the cluster", r.Code, cli.ExitFailure)
		}
		after, _ := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the namespace changed")
		}
		paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
		if len(paths) != 0 {
			t.Errorf("a refused run left journals %v", paths)
		}
	})

	t.Run("guard and audit in the remote", func(t *testing.T) {
		reach := []string{"--cluster-context", "remote=remote-admin"}
		subjects := map[bool]*labtest.App{}
		names := map[bool]string{}
		for _, protect := range []bool{true, false} {
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), DestName: "remote", Automated: true})
			ns := labtest.UniqueName("farguard")
			t.Cleanup(func() {
				_, _ = remote.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), ns, "application/merge-patch+json",
					[]byte(`{"metadata":{"labels":{"unprune.dev/protected":null}}}`), metav1.PatchOptions{})
				remote.DeleteNamespace(ns)
			})
			app.Incident(t, ns, nil)
			subjects[protect], names[protect] = app, ns
		}
		journals := labtest.TempDir(t)
		if r := run(t, journals, append([]string{argocdNS, "guard", "policy", "--cluster", "remote", "--apply", "--yes"}, reach...)...); r.Code != cli.ExitOK {
			t.Fatalf("guard policy in the remote: exit %d", r.Code)
		}
		if r := run(t, journals, append([]string{argocdNS, "guard", "protect", "--cluster", "remote", "ns/" + names[true], "--yes"}, reach...)...); r.Code != cli.ExitOK {
			t.Fatalf("guard protect in the remote: exit %d", r.Code)
		}
		labtest.Eventually(t, 60*time.Second, "audit --probe to see the remote's policy enforced", func() (bool, string) {
			r := run(t, journals, append([]string{argocdNS, "audit", "-A", "--probe", "-o", "json"}, reach...)...)
			var doc printer.AuditReport
			_ = json.Unmarshal([]byte(r.Stdout), &doc)
			for _, it := range doc.Items {
				if it.Resource.Name == names[true] {
					return it.Cluster.Name == "remote" && it.Guarded && it.Probe != nil && it.Probe.Result == "Denied", fmt.Sprintf("%+v", it)
				}
			}
			return false, "no row"
		})
		op := subjects[true].Sync(t, true)
		if op.Phase == "Succeeded" || !strings.Contains(op.Message+resultMessages(op), "protected from deletion") {
			t.Errorf("prune sync of the protected namespace in the remote: %s %q %s", op.Phase, op.Message, resultMessages(op))
		}
		if _, err := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), names[true], metav1.GetOptions{}); err != nil {
			t.Fatalf("the protected namespace is gone: %v", err)
		}
		if op := subjects[false].Sync(t, true); op.Phase != "Succeeded" {
			t.Errorf("prune sync of the unprotected namespace: %s %s", op.Phase, op.Message)
		}
		labtest.Eventually(t, 90*time.Second, "the unprotected namespace to be deleted in the remote", func() (bool, string) {
			_, err := remote.Kube.CoreV1().Namespaces().Get(labtest.Context(t), names[false], metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

// journalFiles collects the journals the remote tests wrote, to check none holds a credential.
var journalFiles []string
