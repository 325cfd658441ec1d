package check

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/risk"
)

func TestFoldMoves(t *testing.T) {
	in := cluster.Info{Name: "in-cluster", Server: argocd.InClusterServer}
	remote := cluster.Info{Name: "remote", Server: "https://remote"}
	cm := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	other := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "other"}
	a := Report{App: argocd.Application{Namespace: "argocd", Name: "shop-old"}, Instance: "shop-old", Items: []Item{
		{Kind: Prune, Reason: DeletedAtNextSync, Resource: cm, Cluster: in, Risk: risk.High, RiskWhy: "holds data"},
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
	// Nothing guards the object in shop-old: the move is the prune it folds, high-risk and unguarded.
	if m.Guarded || m.Risk != risk.High || m.RiskWhy != "holds data" || !strings.Contains(m.Notes[0], "not prepared") ||
		!strings.Contains(m.Notes[0], "shop-old's automated sync deletes it") {
		t.Errorf("the unprepared move does not carry the prune's verdict: %+v", m)
	}
	if want := []MovedOut{{Resource: cm, To: "team/shop"}}; !slices.Equal(out[0].MovedOut, want) {
		t.Errorf("the source app's MovedOut: %+v, want %+v", out[0].MovedOut, want)
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

// TestFoldMovesPrepared: a move whose object shop-old can no longer prune (move --prepare's marks)
// carries the guard, so reports do not count it as a prune.
func TestFoldMovesPrepared(t *testing.T) {
	cm := argocd.Resource{Version: "v1", Kind: "Namespace", Name: "shop"}
	a := Report{App: argocd.Application{Namespace: "argocd", Name: "shop-old"}, Instance: "shop-old", Items: []Item{
		{Kind: Prune, Reason: LeftRequiringPruning, Resource: cm, Risk: risk.High, Guards: []risk.Guard{risk.GuardPruneDisabled}, Guarded: true},
	}}
	b := Report{App: argocd.Application{Namespace: "argocd", Name: "shop"}, Instance: "shop", Items: []Item{
		{Kind: Adoption, Reason: TrackedByOtherApp, OtherInstance: "shop-old", Resource: cm, Risk: risk.High},
	}}
	m := FoldMoves(context.Background(), []Report{a, b}, "argocd")[1].Items[0]
	if m.Kind != Move || !m.Guarded || !slices.Equal(m.Guards, []risk.Guard{risk.GuardPruneDisabled}) || !strings.Contains(m.Notes[0], "guarded (PruneDisabled)") {
		t.Errorf("the prepared move: %+v", m)
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
