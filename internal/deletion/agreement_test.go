package deletion_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/watch/exposition"
)

// The three commands agree: on the same objects, audit's rows, check's items and the watch's
// summary (built from audit's public pieces, as the watch builds it) give the same answer to
// "does Argo CD delete it, and what stops it", for a prune and for a cascade.

// searching serves the fake cluster's every object, as the Kubernetes backend does.
type searching struct{ *clustertest.Cluster }

func (s searching) EachObject(ctx context.Context, fn func(*cluster.Object)) ([]string, error) {
	for _, name := range names {
		ref, err := s.Resolve(ctx, "", "Namespace", "", "", name)
		if err != nil {
			continue
		}
		if o, err := s.Get(ctx, ref); err == nil {
			fn(o)
		}
	}
	return nil, nil
}

// argo is the fake installation whose destination lists everything; it reads ApplicationSets (none).
type argo struct {
	*clustertest.ArgoCD
	objects searching
}

func (a argo) Destination(context.Context, argocd.Application) (cluster.Objects, error) {
	return a.objects, nil
}

func (a argo) GetApplicationSet(context.Context, string, string) (map[string]any, error) {
	return nil, fmt.Errorf("no ApplicationSet")
}

var names = []string{"plain", "prune-false", "delete-false", "helm-keep", "prune-confirm", "kube-system", "hooked", "owned", "copy"}

func TestThreeCommandsAgree(t *testing.T) {
	ctx := context.Background()
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := cluster.Settings{Settings: argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v), FilterKnown: true}
	c := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, append([]clustertest.Kind{
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true}}, clustertest.DefaultKinds...)...)
	fake := clustertest.NewArgoCD("argocd", c, s.Settings)
	a := argo{ArgoCD: fake, objects: searching{c}}
	id := func(name string) string { return "team:/Namespace:team/" + name }
	extra := map[string]map[string]string{
		"prune-false":   {argocd.AnnotationSyncOptions: "Prune=false"},
		"delete-false":  {argocd.AnnotationSyncOptions: "Delete=false"},
		"helm-keep":     {argocd.AnnotationHelmResourcePolicy: "keep"},
		"prune-confirm": {argocd.AnnotationSyncOptions: "Prune=confirm"},
		"hooked":        {argocd.AnnotationHook: "PostSync"},
	}
	team := argocd.Application{Namespace: "argocd", Name: "team", Project: "default", AutoPrune: true, Automated: true,
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"}}
	for _, n := range names {
		ann := map[string]string{argocd.AnnotationTrackingID: id(n)}
		if n == "copy" {
			ann[argocd.AnnotationTrackingID] = id("plain") // copied from plain: not listed, still cascaded
		}
		for k, v := range extra[n] {
			ann[k] = v
		}
		ref := c.Add("", "Namespace", "", n, nil, ann)
		if n == "owned" {
			c.Update(ref, func(o *cluster.Object) { o.Owners = []string{"Team/owned"} })
		}
		if n != "copy" && n != "owned" {
			team.Resources = append(team.Resources, argocd.Resource{Version: "v1", Kind: "Namespace", Name: n, RequiresPruning: true, Hook: n == "hooked"})
		}
	}
	// The parent prunes team automatically: its cascade is the whole-app question.
	child := c.Add("argoproj.io", "Application", "argocd", "team", nil, map[string]string{argocd.AnnotationTrackingID: "root:argoproj.io/Application:argocd/team"})
	c.Update(child, func(o *cluster.Object) {
		o.Content = map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": "team", "finalizers": []any{argocd.FinalizerResources}},
			"spec": map[string]any{"source": map[string]any{"repoURL": "file:///r", "path": "team"}, "destination": map[string]any{"server": argocd.InClusterServer, "namespace": "team"}}}
	})
	fake.AddApp(team)
	root := argocd.Application{Namespace: "argocd", Name: "root", Project: "default", AutoPrune: true, Automated: true,
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "argocd"},
		Resources:   []argocd.Resource{{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application", Namespace: "argocd", Name: "team"}}}
	fake.AddApp(root)

	// Prunes: audit's rows (Now) and check's prune items for the same objects.
	rep, err := audit.Run(ctx, a, s.Settings, []argocd.Application{team, root}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	auditPrune := map[string]bool{}
	for _, r := range rep.Rows {
		if r.When == audit.Now {
			auditPrune[r.Resource.Name] = r.Guarded
		}
	}
	checked, err := check.Run(ctx, a, s, team, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkPrune := map[string]bool{}
	for _, it := range checked.Items {
		if it.Kind == check.Prune {
			checkPrune[it.Resource.Name] = it.Guarded
		}
	}
	want := map[string]bool{"plain": false, "prune-false": true, "delete-false": false, "helm-keep": false, "prune-confirm": true, "kube-system": true}
	for _, got := range []map[string]bool{auditPrune, checkPrune} {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("prunes (name: guarded): audit %v, check %v; want %v", auditPrune, checkPrune, want)
			break
		}
	}
	sum := exposition.Summarize(team, rep.Rows, audit.CascadeHighRisk(ctx, a.objects, s.Settings, team, "argocd"))
	unguardedNow := 0
	for name, guarded := range want {
		if !guarded && name != "hooked" {
			unguardedNow++
		}
	}
	if got := sum.Unguarded["now"]["high"]; got != unguardedNow {
		t.Errorf("watch: %d unguarded high-risk prunes now; want %d, as audit and check", got, unguardedNow)
	}

	// Cascades: what deleting team deletes, by check (the parent's prune of it), audit (its
	// whole-app row), audit.CascadeHighRisk and the watch. With prune-confirm's Prune=confirm the
	// whole cascade waits for approval (finalizeApplicationDeletion deletes nothing before it);
	// without it, the copy and the hook go, Delete=false, helm's keep, the immortal namespace and
	// the owned object stay.
	for _, tc := range []struct {
		confirm string
		want    string
	}{{"Prune=confirm", ""}, {"", "copy hooked plain prune-confirm prune-false"}} {
		ref, _ := c.Resolve(ctx, "", "Namespace", "", "", "prune-confirm")
		c.Update(ref, func(o *cluster.Object) { o.Annotations[argocd.AnnotationSyncOptions] = tc.confirm })
		rep, err := audit.Run(ctx, a, s.Settings, []argocd.Application{team, root}, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		parent, err := check.Run(ctx, a, s, root, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var checkCascade []string
		waits := false
		for _, app := range parent.Apps {
			if app.App.Name != "team" {
				continue
			}
			waits = app.Waits
			for _, it := range app.Resources {
				if it.Reason == check.DeletedWithApp && !app.Waits {
					checkCascade = append(checkCascade, it.Resource.Name)
				}
			}
		}
		var auditCascade []string
		for _, r := range rep.Rows {
			if r.When == audit.WhenItsAppIsDeleted && r.App.Name == "team" {
				for _, h := range r.Cascade.HighRisk {
					auditCascade = append(auditCascade, h.Name)
				}
			}
		}
		var highRisk []string
		for _, r := range audit.CascadeHighRisk(ctx, a.objects, s.Settings, team, "argocd") {
			highRisk = append(highRisk, r.Name)
		}
		sum := exposition.Summarize(team, rep.Rows, audit.CascadeHighRisk(ctx, a.objects, s.Settings, team, "argocd"))
		for _, l := range [][]string{checkCascade, auditCascade, highRisk} {
			sort.Strings(l)
		}
		got := []string{strings.Join(checkCascade, " "), strings.Join(auditCascade, " "), strings.Join(highRisk, " ")}
		if got[0] != tc.want || got[1] != tc.want || got[2] != tc.want || sum.CascadeHighRisk != len(strings.Fields(tc.want)) || waits != (tc.confirm != "") {
			t.Errorf("sync-options %q: cascade by check %q (waits %v), audit %q, CascadeHighRisk %q, watch %d; want %q", tc.confirm, got[0], waits, got[1], got[2], sum.CascadeHighRisk, tc.want)
		}
	}
}
