package scan

import (
	"context"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/risk"
)

var v361 = argocd.Version{Major: 3, Minor: 6, Patch: 1}

func settings(method string) argocd.Settings {
	return argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: method}, &v361)
}

// tracked adds an object tracked by app with annotation+label tracking.
func tracked(c *clustertest.Cluster, app, kind, namespace, name string, extra map[string]string) {
	id := argocd.TrackingID{Instance: app, Kind: kind, Namespace: namespace, Name: name}
	if namespace == "" {
		id.Namespace = app
	}
	ann := map[string]string{argocd.AnnotationTrackingID: id.String()}
	for k, v := range extra {
		ann[k] = v
	}
	c.Add("", kind, namespace, name, map[string]string{argocd.DefaultInstanceLabelKey: app}, ann)
}

func TestScanDescribesEveryPrunableRowFromItsLiveObject(t *testing.T) {
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	s := settings("annotation+label")
	argo := clustertest.NewArgoCD("argocd", home, s)
	tracked(home, "guestbook", "Namespace", "", "team-a", nil)
	tracked(home, "guestbook", "ConfigMap", "team-a", "settings", map[string]string{argocd.AnnotationSyncOptions: "Prune=false"})
	tracked(home, "guestbook", "ConfigMap", "team-a", "migrate", map[string]string{argocd.AnnotationHook: "PreSync"})
	// Released by hand: Argo CD has not compared since, so the row is still there.
	home.Add("", "ConfigMap", "team-a", "released", nil, nil)
	app := argocd.Application{Name: "guestbook", Destination: argocd.Destination{Server: argocd.InClusterServer}, Resources: []argocd.Resource{
		{Version: "v1", Kind: "Namespace", Name: "team-a", RequiresPruning: true},
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings", RequiresPruning: true},
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "migrate", RequiresPruning: true, Hook: true},
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "released", RequiresPruning: true},
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "gone", RequiresPruning: true},
		{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "in-git", Status: "Synced"},
	}}
	argo.AddApp(app)
	apps, _ := argo.ListApplications(context.Background(), argoSelector())
	rep, err := Run(context.Background(), argo, s, apps)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Finding{}
	for _, f := range rep.Findings {
		byName[f.Resource.Name] = f
	}
	if len(rep.Findings) != 4 || rep.StuckApps() != 1 || rep.AppsScanned != 1 {
		t.Fatalf("%d findings in %d stuck apps of %d: want the 4 prunable rows (no hook, nothing in git) of 1 app", len(rep.Findings), rep.StuckApps(), rep.AppsScanned)
	}
	ns := byName["team-a"]
	if ns.Risk != risk.High || len(ns.Tracking) != 2 || ns.ModelMismatch || ns.LiveError != "" {
		t.Errorf("namespace finding = %+v: want high risk, the annotation and the label", ns)
	}
	if cm := byName["settings"]; len(cm.Guards) == 0 {
		t.Errorf("Prune=false on the live object is not seen as a guard: %+v", cm)
	}
	rel := byName["released"]
	if !rel.ModelMismatch || len(rel.Tracking) != 0 || !strings.Contains(strings.Join(rel.Notes, " "), "has not compared since") {
		t.Errorf("released object = %+v: want a model mismatch that says Argo CD has not compared", rel)
	}
	if gone := byName["gone"]; gone.LiveError == "" {
		t.Errorf("a missing object has no live error: %+v", gone)
	}
}

func TestAnUnreachableDestinationIsAWarningNotAFailedScan(t *testing.T) {
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	s := settings("annotation")
	argo := clustertest.NewArgoCD("argocd", home, s)
	argo.AddApp(argocd.Application{Name: "remote-app", Destination: argocd.Destination{Name: "prod-eu"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "team-b", RequiresPruning: true}}})
	apps, _ := argo.ListApplications(context.Background(), argoSelector())
	rep, err := Run(context.Background(), argo, s, apps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].LiveError == "" || rep.Findings[0].Cluster.Name != "prod-eu" {
		t.Fatalf("findings = %+v: want the row, marked unreadable, in cluster prod-eu", rep.Findings)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "prod-eu") {
		t.Errorf("warnings = %q", rep.Warnings)
	}
}

func TestAnInstanceTooLongForALabelIsWarned(t *testing.T) {
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	s := settings("label")
	argo := clustertest.NewArgoCD("argocd", home, s)
	long := strings.Repeat("a", 64)
	argo.AddApp(argocd.Application{Name: long, Destination: argocd.Destination{Server: argocd.InClusterServer},
		Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "x", RequiresPruning: true}}})
	apps, _ := argo.ListApplications(context.Background(), argoSelector())
	rep, err := Run(context.Background(), argo, s, apps)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "longer than 63 characters") {
		t.Errorf("warnings = %q", rep.Warnings)
	}
}

func TestAnInterruptedScanReturnsTheContextsError(t *testing.T) {
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	s := settings("annotation")
	argo := clustertest.NewArgoCD("argocd", home, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, argo, s, nil); err == nil {
		t.Error("a canceled scan reported success")
	}
}

func argoSelector() cluster.Selector { return cluster.Selector{} }
