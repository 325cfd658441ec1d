package verify

import (
	"slices"
	"testing"

	"github.com/unprune/unprune/internal/cluster"
)

var (
	teamA    = cluster.Resource{Version: "v1", Kind: "Namespace", Name: "team-a"}
	settings = cluster.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}
	ui       = cluster.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	worker   = cluster.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "worker"}
)

func with(r cluster.Resource, status string, requiresPruning bool) cluster.Resource {
	r.Status, r.RequiresPruning = status, requiresPruning
	return r
}

func names(rs []cluster.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func TestJudge(t *testing.T) {
	released := []cluster.Resource{teamA, settings}
	tests := []struct {
		name          string
		app           cluster.Application
		want          Expectation
		wantSynced    bool
		wantLingering []string
		wantOutOfSync []string
	}{
		{
			name: "untracked objects gone, app Synced",
			app: cluster.Application{SyncStatus: "Synced", Resources: []cluster.Resource{
				with(ui, "Synced", false),
			}},
			want:       Gone,
			wantSynced: true,
		},
		{
			name: "untracked objects still listed: not done",
			app: cluster.Application{SyncStatus: "OutOfSync", Resources: []cluster.Resource{
				with(ui, "Synced", false),
				with(teamA, "OutOfSync", true),
			}},
			want:          Gone,
			wantLingering: []string{"Namespace/team-a"},
		},
		{
			name: "untracked objects still listed though Argo CD says Synced: not done",
			app: cluster.Application{SyncStatus: "Synced", Resources: []cluster.Resource{
				with(settings, "OutOfSync", true),
			}},
			want:          Gone,
			wantLingering: []string{"ConfigMap/guestbook/settings"},
		},
		{
			name: "kept objects still listed and ignored: Synced",
			app: cluster.Application{SyncStatus: "Synced", Resources: []cluster.Resource{
				with(ui, "Synced", false),
				with(teamA, "OutOfSync", true),
				with(settings, "OutOfSync", true),
			}},
			want:       Ignored,
			wantSynced: true,
		},
		{
			name: "kept objects, app not Synced yet",
			app: cluster.Application{SyncStatus: "OutOfSync", Resources: []cluster.Resource{
				with(teamA, "OutOfSync", true),
			}},
			want: Ignored,
		},
		{
			name: "other rows keep the app OutOfSync and are reported",
			app: cluster.Application{SyncStatus: "OutOfSync", Resources: []cluster.Resource{
				with(ui, "OutOfSync", false),
				with(worker, "", true),
				with(cluster.Resource{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "ui"}, "Synced", false),
			}},
			want:          Gone,
			wantOutOfSync: []string{"Deployment.apps/guestbook/ui", "Deployment.apps/guestbook/worker"},
		},
		{
			name: "released rows are never reported as other OutOfSync rows",
			app: cluster.Application{SyncStatus: "OutOfSync", Resources: []cluster.Resource{
				with(teamA, "OutOfSync", true),
				with(worker, "OutOfSync", false),
			}},
			want:          Ignored,
			wantOutOfSync: []string{"Deployment.apps/guestbook/worker"},
		},
		{
			name: "a same-named object of another kind is not the released one",
			app: cluster.Application{SyncStatus: "OutOfSync", Resources: []cluster.Resource{
				with(cluster.Resource{Version: "v1", Kind: "Secret", Namespace: "guestbook", Name: "settings"}, "OutOfSync", true),
			}},
			want:          Gone,
			wantOutOfSync: []string{"Secret/guestbook/settings"},
		},
		{
			name: "unknown sync status is not Synced",
			app:  cluster.Application{SyncStatus: "Unknown"},
			want: Gone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Judge(tt.app, released, tt.want)
			if o.Synced != tt.wantSynced {
				t.Errorf("Synced = %v, want %v", o.Synced, tt.wantSynced)
			}
			if got := names(o.Lingering); !slices.Equal(got, tt.wantLingering) {
				t.Errorf("Lingering = %q, want %q", got, tt.wantLingering)
			}
			if got := names(o.OutOfSync); !slices.Equal(got, tt.wantOutOfSync) {
				t.Errorf("OutOfSync = %q, want %q", got, tt.wantOutOfSync)
			}
			if o.App.SyncStatus != tt.app.SyncStatus || len(o.App.Resources) != len(tt.app.Resources) {
				t.Errorf("Outcome.App is not the judged app")
			}
		})
	}
}

// The released list is matched on group, kind, namespace and name, not on version or status.
func TestJudgeIgnoresVersion(t *testing.T) {
	app := cluster.Application{SyncStatus: "Synced", Resources: []cluster.Resource{
		{Group: "apps", Version: "v1beta2", Kind: "Deployment", Namespace: "guestbook", Name: "ui", Status: "OutOfSync", RequiresPruning: true},
	}}
	o := Judge(app, []cluster.Resource{ui}, Gone)
	if o.Synced || len(o.Lingering) != 1 {
		t.Errorf("Judge = synced %v, lingering %q; want not synced, ui lingering", o.Synced, names(o.Lingering))
	}
}
