//go:build lab

package apiserver

import (
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/lab/labtest"
)

// labEngine is the engine on the kube backend against the lab's API server, as the CLI builds it.
func labEngine(t *testing.T, env *labtest.Env) (*engine.Engine, *journal.Store) {
	t.Helper()
	info := cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, URL: env.REST.Host, Via: cluster.ViaKubeconfig}
	clients, err := kube.NewClients(env.REST, info, nil, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	argo := &kube.ArgoCD{Objects: kube.NewObjects(clients, ""), Ns: argocdNamespace}
	s, err := argo.Settings(labtest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := journal.NewStore(labtest.TempDir(t)+"/journal", nil)
	return &engine.Engine{ArgoCD: argo, Settings: s.Settings, Journals: store, ToolVersion: "test"}, store
}
