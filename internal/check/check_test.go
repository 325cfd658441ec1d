package check

import (
	"context"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

func TestRun(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := cluster.Settings{Settings: argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v), FilterKnown: true,
		Filter: argocd.ResourceFilter{Exclusions: []argocd.FilteredResource{{APIGroups: []string{""}, Kinds: []string{"Secret"}}}}}
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	c.Add("", "Namespace", "", "untracked", nil, nil)
	c.Add("", "Namespace", "", "other", nil, map[string]string{argocd.AnnotationTrackingID: "other:/Namespace:dest/other"})
	c.Add("", "Namespace", "", "mine", nil, map[string]string{argocd.AnnotationTrackingID: "web:/Namespace:dest/mine"})
	c.Add("", "Namespace", "", "leaving", nil, map[string]string{argocd.AnnotationTrackingID: "web:/Namespace:dest/leaving"})
	c.Add("", "ConfigMap", "dest", "hook", nil, nil)
	// Live, untracked, but never an app's: owned by another object, or of an excluded kind.
	owned := c.Add("", "ConfigMap", "dest", "owned", nil, nil)
	c.Update(owned, func(o *cluster.Object) { o.Owners = []string{"Deployment/web"} })
	c.Add("", "Secret", "dest", "excluded", nil, nil)
	argo := clustertest.NewArgoCD("argocd", c, s.Settings)
	app := argocd.Application{Namespace: "argocd", Name: "web", Project: "default", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "dest"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "mine"}, {Version: "v1", Kind: "Namespace", Name: "leaving"}}}
	rep := runYAML(t, argo, s, app, `
apiVersion: v1
kind: Namespace
metadata: {name: untracked}
---
apiVersion: v1
kind: Namespace
metadata: {name: other}
---
apiVersion: v1
kind: Namespace
metadata: {name: mine}
---
apiVersion: v1
kind: Namespace
metadata: {name: brand-new}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: owned}
---
apiVersion: v1
kind: Secret
metadata: {name: excluded}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: hook, annotations: {helm.sh/hook: pre-install}}
`)
	got := map[string]string{}
	for _, it := range rep.Items {
		got[it.Resource.Name] = string(it.Kind) + "/" + string(it.Reason)
	}
	want := map[string]string{"untracked": "Adoption/Untracked", "other": "Adoption/TrackedByOtherApp", "leaving": "Prune/LeftRequiringPruning"}
	if len(got) != len(want) {
		t.Fatalf("items %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	skipped := strings.Join(rep.Skipped, "\n")
	if len(rep.Skipped) != 2 || !strings.Contains(skipped, "ConfigMap/dest/hook: a hook") || !strings.Contains(skipped, "Secret/dest/excluded: its kind is excluded") {
		t.Errorf("skipped %q; want the hook and the excluded Secret, namespaced into the destination", rep.Skipped)
	}
}

func TestReadManifestsRefusesNonObjects(t *testing.T) {
	if _, err := ReadManifests("-", strings.NewReader("just: a map\n")); err == nil || !strings.Contains(err.Error(), "not a Kubernetes object") {
		t.Fatalf("err %v", err)
	}
}

// TestRunGlobExclusions: resource.exclusions are Argo CD globs (util/glob), so an excluded kind is
// neither adopted nor pruned even when only `{a,b}` or a `*` across `/` names it, and a kind that
// path.Match alone would exclude (`[^a]` is no negation in Argo CD's glob) is still reported.
func TestRunGlobExclusions(t *testing.T) {
	const server = "https://host:6443/k8s/clusters/c-1"
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := cluster.Settings{Settings: argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v), FilterKnown: true,
		Filter: argocd.ResourceFilter{Exclusions: []argocd.FilteredResource{
			{APIGroups: []string{"{apps,extensions}"}, Kinds: []string{"Deployment"}, Clusters: []string{"https://*"}},
			{APIGroups: []string{"[^a]atch"}, Kinds: []string{"*"}},
		}}}
	remote := clustertest.NewCluster("c-1", server, append(clustertest.DefaultKinds,
		clustertest.Kind{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", Namespaced: true})...)
	for _, k := range []struct{ group, kind string }{{"apps", "Deployment"}, {"batch", "Job"}} {
		remote.Add(k.group, k.kind, "dest", "untracked", nil, nil)
		remote.Add(k.group, k.kind, "dest", "leaving", nil, map[string]string{argocd.AnnotationTrackingID: "web:" + k.group + "/" + k.kind + ":dest/leaving"})
	}
	argo := clustertest.NewArgoCD("argocd", clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer), s.Settings)
	argo.Remote[server] = remote
	app := argocd.Application{Namespace: "argocd", Name: "web", Project: "default", Destination: argocd.Destination{Server: server, Namespace: "dest"},
		Resources: []argocd.Resource{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "dest", Name: "leaving"},
			{Group: "batch", Version: "v1", Kind: "Job", Namespace: "dest", Name: "leaving"},
		}}
	rep := runYAML(t, argo, s, app, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: untracked}
---
apiVersion: batch/v1
kind: Job
metadata: {name: untracked}
`)
	got := map[string]bool{}
	for _, it := range rep.Items {
		got[it.Resource.Kind+"/"+it.Resource.Name+" "+string(it.Kind)] = true
	}
	want := map[string]bool{"Job/untracked Adoption": true, "Job/leaving Prune": true}
	if len(got) != len(want) || !got["Job/untracked Adoption"] || !got["Job/leaving Prune"] {
		t.Errorf("items %v, want %v: Deployments are excluded by {apps,extensions} on https://*, Jobs are not by [^a]atch", got, want)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], "Deployment.apps/dest/untracked: its kind is excluded") {
		t.Errorf("skipped %q; want only the excluded Deployment", rep.Skipped)
	}
}

// TestRunNamesRecreation: an app that syncs with Replace=true deletes and recreates what it adopts
// at a forced sync (at every sync with Force=true), Prune=false notwithstanding; a Namespace it
// updates instead (argocd.Recreated). The adoption says so.
func TestRunNamesRecreation(t *testing.T) {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := cluster.Settings{Settings: argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v), FilterKnown: true}
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	c.Add("", "Namespace", "", "shared", nil, map[string]string{argocd.AnnotationTrackingID: "other:/Namespace:dest/shared"})
	c.Add("", "ConfigMap", "dest", "settings", nil, map[string]string{argocd.AnnotationTrackingID: "other:/ConfigMap:dest/settings", argocd.AnnotationSyncOptions: "Prune=false"})
	c.Add("", "ConfigMap", "dest", "always", nil, nil)
	argo := clustertest.NewArgoCD("argocd", c, s.Settings)
	app := argocd.Application{Namespace: "argocd", Name: "web", Project: "default", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "dest"},
		SyncOptions: []string{"Replace=true"}}
	rep := runYAML(t, argo, s, app, `
apiVersion: v1
kind: Namespace
metadata: {name: shared}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {argocd.argoproj.io/sync-options: Prune=false}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: always, annotations: {argocd.argoproj.io/sync-options: "Force=true"}}
`)
	want := map[string]string{"shared": "", "settings": "a sync of this app with FORCE ticked deletes it", "always": "every sync of this app deletes it"}
	for _, it := range rep.Items {
		w, ok := want[it.Resource.Name]
		if !ok || it.Kind != Adoption {
			t.Errorf("unexpected item %s %s", it.Kind, it.Resource)
			continue
		}
		delete(want, it.Resource.Name)
		notes := strings.Join(it.Notes, "\n")
		switch {
		case w == "" && strings.Contains(notes, "Replace=true"):
			t.Errorf("%s: %q; a Namespace is updated, never replaced", it.Resource, notes)
		case w != "" && !strings.Contains(notes, w):
			t.Errorf("%s: %q; want %q", it.Resource, notes, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("no adoption of %v", want)
	}
}

// runYAML checks app against the manifests in yaml, as `check --manifests -` reads them.
func runYAML(t *testing.T, argo cluster.ArgoCD, s cluster.Settings, app argocd.Application, yaml string) Report {
	t.Helper()
	manifests, err := ReadManifests("-", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), argo, s, app, manifests, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
