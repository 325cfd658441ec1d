package check

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

func TestFoldMoves(t *testing.T) {
	in := cluster.Info{Name: "in-cluster", Server: argocd.InClusterServer}
	remote := cluster.Info{Name: "remote", Server: "https://remote"}
	cm := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	other := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "other"}
	a := Report{App: argocd.Application{Namespace: "argocd", Name: "shop-old"}, Instance: "shop-old", Items: []Item{
		{Kind: Prune, Reason: DeletedAtNextSync, Resource: cm, Cluster: in},
		{Kind: Prune, Reason: DeletedAtNextSync, Resource: other, Cluster: in},
	}}
	b := Report{App: argocd.Application{Namespace: "team", Name: "shop"}, Instance: "team_shop", Items: []Item{
		{Kind: Adoption, Reason: TrackedByOtherApp, OtherInstance: "shop-old", Resource: cm, Cluster: in},
		// the same object name on another cluster is another object: not a move
		{Kind: Adoption, Reason: TrackedByOtherApp, OtherInstance: "shop-old", Resource: other, Cluster: remote},
	}}
	out := FoldMoves(context.Background(), []Report{a, b}, "argocd")
	if len(out[0].Items) != 1 || out[0].Items[0].Resource != other {
		t.Fatalf("the source app's report: %+v", out[0].Items)
	}
	m := out[1].Items[0]
	if m.Kind != Move || m.Reason != Moved {
		t.Fatalf("the move: %+v", m)
	}
	want := "unprune move shop-old ConfigMap/shop/settings <To> team/shop <Prepare> <Yes>"
	if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, want) }) {
		t.Errorf("notes %q lack %q", m.Notes, want)
	}
	if out[1].Items[1].Kind != Adoption {
		t.Errorf("an adoption from another cluster was folded: %+v", out[1].Items[1])
	}
	if len(a.Items) != 2 || b.Items[0].Kind != Adoption {
		t.Error("FoldMoves changed its input")
	}
}

func TestNoteMoves(t *testing.T) {
	cm := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	rep := Report{App: argocd.Application{Namespace: "argocd", Name: "shop"}, Items: []Item{
		{Kind: Adoption, Reason: TrackedByOtherApp, OtherInstance: "team_shop-old", Resource: cm},
		{Kind: Adoption, Reason: Untracked, Resource: cm},
	}}
	NoteMoves(option.WithProgram(context.Background(), "kubectl unprune"), &rep, "argocd")
	want := "kubectl unprune move team/shop-old ConfigMap/shop/settings <To> shop <Prepare> <Yes>"
	if n := rep.Items[0].Notes; len(n) != 1 || !strings.Contains(n[0], want) {
		t.Errorf("notes %q, want the recipe %q", n, want)
	}
	if len(rep.Items[1].Notes) != 0 {
		t.Errorf("an untracked adoption got a recipe: %q", rep.Items[1].Notes)
	}
}
