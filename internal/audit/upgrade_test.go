package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

// TestUpgradeRows: in a cluster two installations share, an object the other installation applied
// (its installation-id) whose tracking-id names this installation's app gets a row while this
// installation runs a release that ignores it and sets no installationID — not once it runs v3.6, not
// with an installationID of its own, not under label tracking, not when the app declares the object,
// and not for an app that deploys to another cluster.
func TestUpgradeRows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  argocd.Version
		settings map[string]string
		declares bool
		dest     string
		want     bool
	}{
		{name: "v3.5 without installationID", version: argocd.Version{Major: 3, Minor: 5, Patch: 7}, want: true},
		{name: "v2.14 without installationID", version: argocd.Version{Major: 2, Minor: 14, Patch: 11}, want: true},
		{name: "v3.6 already", version: argocd.Version{Major: 3, Minor: 6, Patch: 1}},
		{name: "own installationID", version: argocd.Version{Major: 3, Minor: 5, Patch: 7}, settings: map[string]string{argocd.SettingInstallationID: "mine"}},
		{name: "label tracking", version: argocd.Version{Major: 3, Minor: 5, Patch: 7}, settings: map[string]string{argocd.SettingTrackingMethod: "label"}},
		{name: "declared by the app", version: argocd.Version{Major: 3, Minor: 5, Patch: 7}, declares: true},
		{name: "app deploys elsewhere", version: argocd.Version{Major: 3, Minor: 5, Patch: 7}, dest: "https://remote.example:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string]string{argocd.SettingTrackingMethod: "annotation"}
			for k, v := range tc.settings {
				data[k] = v
			}
			s := argocd.NewSettings(data, &tc.version)
			c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, clustertest.DefaultKinds...)
			remote := clustertest.NewCluster("remote", "https://remote.example:6443", clustertest.DefaultKinds...)
			argo := clustertest.NewArgoCD("argocd-a", c, s)
			argo.Remote = map[string]*clustertest.Cluster{remote.Info().Server: remote, remote.Info().Name: remote}
			c.Add("", "ConfigMap", "team-b", "settings", nil, map[string]string{
				argocd.AnnotationTrackingID:     "web:/ConfigMap:team-b/settings",
				argocd.AnnotationInstallationID: "b",
			})
			row := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "settings"}
			theirs := argocd.Application{Namespace: "argocd-b", Name: "web", Destination: argocd.Destination{Server: argocd.InClusterServer}, Resources: []argocd.Resource{row}}
			dest := argocd.InClusterServer
			if tc.dest != "" {
				dest = tc.dest
			}
			ours := argocd.Application{Namespace: "argocd-a", Name: "web", AutoPrune: true, Destination: argocd.Destination{Server: dest, Namespace: "team-a"}}
			if tc.declares {
				ours.Resources = []argocd.Resource{row}
			}
			argo.AddApp(theirs)
			argo.AddApp(ours)
			rows, warnings := upgradeRows(context.Background(), argo, s, []argocd.Application{ours, theirs}, Options{Upgrade: true})
			if len(warnings) > 0 {
				t.Fatalf("warnings: %v", warnings)
			}
			if quiet, _ := upgradeRows(context.Background(), argo, s, []argocd.Application{ours}, Options{}); len(quiet) > 0 {
				t.Fatalf("rows without Options.Upgrade (the watch's per-app audit): %+v", quiet)
			}
			if got := len(rows) == 1; got != tc.want || len(rows) > 1 {
				t.Fatalf("rows %+v, want a row: %v", rows, tc.want)
			}
			if !tc.want {
				return
			}
			r := rows[0]
			if r.When != WhenArgoCDUpgraded || r.App.Ref() != "argocd-a/web" || r.Resource.Name != "settings" || r.Guarded ||
				len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "argocd-b/web") || !strings.Contains(r.Notes[0], `installation-id="b"`) {
				t.Fatalf("row %+v", r)
			}
		})
	}
}
