package session

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/journal"
)

// argoAt is an Argo CD whose Applications are read at info.
type argoAt struct {
	*clustertest.ArgoCD
	info cluster.Info
}

func (a argoAt) Cluster() cluster.Info { return a.info }

// TestUndoReadsAppsWhereTheJournalsArgoCDRuns: undo reads Applications only in the installation the
// journal recorded — its namespace, and the API server (or argocd-server) it was reached at.
func TestUndoReadsAppsWhereTheJournalsArgoCDRuns(t *testing.T) {
	const hostA, hostB = "https://127.0.0.1:6443", "https://127.0.0.1:7443"
	kubeAt := func(url string) cluster.Info {
		return cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, URL: url, Via: cluster.ViaKubeconfig, Context: "ctx"}
	}
	apiAt := func(server string) cluster.Info {
		return cluster.Info{Name: "argocd-api", Server: server, Via: cluster.ViaArgoCDAPI}
	}
	tests := []struct {
		name             string
		recorded, actual cluster.Info
		namespaceFlag    string
		wantErr          string
	}{
		{name: "same API server", recorded: kubeAt(hostA), actual: kubeAt(hostA)},
		{name: "another API server", recorded: kubeAt(hostA), actual: kubeAt(hostB), wantErr: "--argocd-context"},
		{name: "another namespace", recorded: kubeAt(hostA), actual: kubeAt(hostA), namespaceFlag: "other", wantErr: "--argocd-namespace"},
		{name: "same argocd-server", recorded: apiAt("https://argocd.example"), actual: apiAt("https://argocd.example")},
		{name: "another argocd-server", recorded: apiAt("https://argocd.example"), actual: apiAt("https://other.example"), wantErr: "--argocd-server"},
		{name: "written through the API, read with the kubeconfig", recorded: apiAt("https://argocd.example"), actual: kubeAt(hostB)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := journal.New("detach", "untrack", "test")
			j.ArgoCD = &journal.ArgoCDRef{Namespace: "gitops", Cluster: j.AddCluster(tc.recorded)}
			fake := argoAt{clustertest.NewArgoCD("gitops", clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer), argocd.Settings{}), tc.actual}
			// Only the journal's namespace holds an installation: asking for any other would
			// connect, and the kubeconfig leads nowhere.
			flags := genericclioptions.NewConfigFlags(false)
			nowhere := filepath.Join(t.TempDir(), "kubeconfig")
			flags.KubeConfig = &nowhere
			s := New(Config{Kubeconfig: flags, ArgoCDNamespace: tc.namespaceFlag, Warnings: io.Discard}).(*live)
			s.argo["gitops"] = &lazy[cluster.ArgoCD]{done: true, v: fake}
			got, err := s.JournalArgoCD(context.Background(), j)
			switch {
			case tc.wantErr == "" && (err != nil || got != cluster.ArgoCD(fake)):
				t.Fatalf("got %v, %v; want the journal's installation", got, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v; want one naming %s", err, tc.wantErr)
			}
		})
	}
}
