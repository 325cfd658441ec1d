package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

// TestReplaceRows: an object two apps declare gets a row of the app that syncs it with Replace=true
// (argo-cd #29739: a forced sync of that app deletes and recreates it), its own Prune=false
// notwithstanding — not a Namespace (updated, never replaced), not an object one app alone declares,
// not when the apps deploy to different clusters, and not when nothing says Replace=true. The
// live object's Replace=true and Force=true make every sync of each app that declares it a row.
func TestReplaceRows(t *testing.T) {
	type want struct{ app, note string }
	for _, tc := range []struct {
		name        string
		kind        string
		annotations map[string]string
		bOptions    []string
		bDest       string
		onlyB       bool
		want        []want
	}{
		{name: "B replaces a shared ConfigMap", kind: "ConfigMap", bOptions: []string{"Replace=true"},
			want: []want{{"argocd/b", "a sync of argocd/b with FORCE ticked"}}},
		// The guard named is a policy of its kind that names the object (its namespace too).
		{name: "the policy that keeps it", kind: "ConfigMap", bOptions: []string{"Replace=true"},
			want: []want{{"argocd/b", "only an admission policy that denies its DELETE does (unprune guard policy <GuardMerge> <GuardKinds> namespaces,configmaps <GuardName> configmaps/team/shared <Apply>)"}}},
		{name: "Prune=false does not stop it", kind: "ConfigMap", bOptions: []string{"Replace=true"}, annotations: map[string]string{argocd.AnnotationSyncOptions: "Prune=false"},
			want: []want{{"argocd/b", "Prune=false, Delete=false and helm.sh/resource-policy: keep do not stop a forced replace"}}},
		{name: "a shared Namespace is updated", kind: "Namespace", bOptions: []string{"Replace=true"}},
		{name: "declared by B alone", kind: "ConfigMap", bOptions: []string{"Replace=true"}, onlyB: true},
		{name: "B deploys to another cluster", kind: "ConfigMap", bOptions: []string{"Replace=true"}, bDest: "https://remote.example:6443"},
		{name: "nothing says Replace=true", kind: "ConfigMap"},
		{name: "the live object says Replace=true,Force=true", kind: "ConfigMap", annotations: map[string]string{argocd.AnnotationSyncOptions: "Replace=true,Force=true"},
			want: []want{{"argocd/a", "every sync of argocd/a"}, {"argocd/b", "every sync of argocd/b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
			s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
			c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, clustertest.DefaultKinds...)
			remote := clustertest.NewCluster("remote", "https://remote.example:6443", clustertest.DefaultKinds...)
			argo := clustertest.NewArgoCD("argocd", c, s)
			argo.Remote = map[string]*clustertest.Cluster{remote.Info().Server: remote, remote.Info().Name: remote}
			namespace, name := "team", "shared"
			if tc.kind == "Namespace" {
				namespace, name = "", "team"
			}
			annotations := map[string]string{argocd.AnnotationTrackingID: "a:/" + tc.kind + ":" + namespace + "/" + name}
			for k, v := range tc.annotations {
				annotations[k] = v
			}
			for _, cl := range []*clustertest.Cluster{c, remote} {
				cl.Add("", tc.kind, namespace, name, nil, annotations)
			}
			row := argocd.Resource{Version: "v1", Kind: tc.kind, Namespace: namespace, Name: name}
			a := argocd.Application{Namespace: "argocd", Name: "a", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"}, Resources: []argocd.Resource{row}}
			if tc.onlyB {
				a.Resources = nil
			}
			bDest := argocd.Destination{Name: argocd.InClusterName, Namespace: "team"}
			if tc.bDest != "" {
				bDest = argocd.Destination{Server: tc.bDest, Namespace: "team"}
			}
			b := argocd.Application{Namespace: "argocd", Name: "b", SyncOptions: tc.bOptions, Destination: bDest, Resources: []argocd.Resource{row}}
			argo.AddApp(a)
			argo.AddApp(b)
			rows, warnings := replaceRows(context.Background(), argo, s, []argocd.Application{a, b}, Options{})
			if len(warnings) > 0 {
				t.Fatalf("warnings: %v", warnings)
			}
			if len(rows) != len(tc.want) {
				t.Fatalf("%d rows %+v, want %d", len(rows), rows, len(tc.want))
			}
			for i, w := range tc.want {
				r := rows[i]
				notes := strings.Join(r.Notes, "; ")
				if r.When != WhenForceSynced || r.App.Ref() != w.app || r.Resource.Name != name || r.Guarded || !strings.Contains(notes, w.note) {
					t.Errorf("row %d: %s %s %s guarded %v notes %q; want %s noting %q", i, r.When, r.App.Ref(), r.Resource, r.Guarded, notes, w.app, w.note)
				}
			}
		})
	}
}

// TestDryRunNote: before gitops-engine #623's fix (v3.0.16, v3.1.4, v3.2.0) a forced sync's dry run
// recreates the object already, which the row says; an unknown release says it as a possibility.
func TestDryRunNote(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    string // a fragment; "" for no note
	}{
		{"v2.14.11", "on Argo CD v2.14.11, the forced sync's dry run already deletes and creates it anew"},
		{"v3.0.15", "on Argo CD v3.0.15, the forced sync's dry run"},
		{"v3.0.16", ""},
		{"v3.1.3", "on Argo CD v3.1.3, the forced sync's dry run"},
		{"v3.1.4", ""},
		{"v3.2.0", ""},
		{"v3.6.1", ""},
		{"", "on Argo CD before v3.0.16, v3.1.4 and v3.2.0, the forced sync's dry run"},
	} {
		var v *argocd.Version
		if tc.version != "" {
			parsed, err := argocd.ParseVersion(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			v = &parsed
		}
		got := dryRunNote(v)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%q: note %q, want %q", tc.version, got, tc.want)
		}
	}
}
