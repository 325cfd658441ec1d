package verify

import (
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
)

var (
	patched = time.Date(2026, 11, 30, 12, 0, 0, 400_000_000, time.UTC)
	teamA   = argocd.Resource{Version: "v1", Kind: "Namespace", Name: "team-a", Status: "OutOfSync", RequiresPruning: true}
	other   = argocd.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web", Status: "OutOfSync"}
	hook    = argocd.Resource{Group: "batch", Version: "v1", Kind: "Job", Namespace: "web", Name: "migrate", RequiresPruning: true, Hook: true}
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name      string
		app       argocd.Application
		want      Expectation
		verified  bool
		outOfSync int
	}{
		{name: "gone and synced", app: argocd.Application{SyncStatus: "Synced"}, want: Gone, verified: true},
		{name: "gone, other diff keeps it OutOfSync", app: argocd.Application{SyncStatus: "OutOfSync", Resources: []argocd.Resource{other, hook}},
			want: Gone, verified: true, outOfSync: 1},
		{name: "still listed though Synced", app: argocd.Application{SyncStatus: "Synced", Resources: []argocd.Resource{teamA}}, want: Gone},
		// A Synced read from a comparison that started in the patch's second proves nothing.
		{name: "keep, comparison in the same second", want: Ignored,
			app: argocd.Application{SyncStatus: "Synced", ReconciledAt: patched.Truncate(time.Second), Resources: []argocd.Resource{teamA}}},
		{name: "keep, later comparison", want: Ignored, verified: true,
			app: argocd.Application{SyncStatus: "Synced", ReconciledAt: patched.Add(time.Second).Truncate(time.Second), Resources: []argocd.Resource{teamA}}},
		{name: "keep, still counted", want: Ignored,
			app: argocd.Application{SyncStatus: "OutOfSync", ReconciledAt: patched.Add(2 * time.Second), Resources: []argocd.Resource{teamA}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Judge(tt.app, []argocd.Resource{teamA}, tt.want, patched)
			if o.Verified != tt.verified || len(o.OutOfSync) != tt.outOfSync {
				t.Fatalf("verified %v (want %v), outOfSync %v", o.Verified, tt.verified, o.OutOfSync)
			}
		})
	}
}

func TestJudgeAdopted(t *testing.T) {
	moved := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "settings"}
	later := patched.Add(time.Second).Truncate(time.Second)
	with := func(status string, pruning bool) []argocd.Resource {
		r := moved
		r.Status, r.RequiresPruning = status, pruning
		return []argocd.Resource{r}
	}
	tests := []struct {
		name     string
		app      argocd.Application
		verified bool
	}{
		{name: "listed and Synced after the patch", app: argocd.Application{ReconciledAt: later, Resources: with("Synced", false)}, verified: true},
		{name: "Synced, but compared before the patch", app: argocd.Application{ReconciledAt: patched.Truncate(time.Second), Resources: with("Synced", false)}},
		{name: "still OutOfSync", app: argocd.Application{ReconciledAt: later, Resources: with("OutOfSync", false)}},
		{name: "requires pruning", app: argocd.Application{ReconciledAt: later, Resources: with("OutOfSync", true)}},
		{name: "not listed", app: argocd.Application{ReconciledAt: later}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o := Judge(tt.app, []argocd.Resource{moved}, Adopted, patched); o.Verified != tt.verified {
				t.Fatalf("verified %v, want %v (lingering %v)", o.Verified, tt.verified, o.Lingering)
			}
		})
	}
}
