//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

const (
	installationIDKey = "argocd.argoproj.io/installation-id"
	customLabelKey    = "argocd.argoproj.io/instance"
)

// detachCell is one Argo CD configuration the full detach story is proven on.
type detachCell struct {
	name string
	cfg  lab.ArgoCDConfig
	// appNamespace puts the Application outside Argo CD's namespace (apps in any namespace).
	appNamespace string
	// namespace is the resource committed and reverted; empty means a fresh unique one.
	namespace string
	// wantLabels and wantAnnotations are the keys detach must remove, nothing more.
	wantLabels      []string
	wantAnnotations []string
}

var detachCells = []detachCell{
	{name: "v3.6.1/label", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "label"}, wantLabels: []string{instanceLabel}},
	{name: "v3.6.1/annotation", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"}, wantAnnotations: []string{trackingID}},
	{name: "v3.6.1/annotation+label", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation+label"},
		wantLabels: []string{instanceLabel}, wantAnnotations: []string{trackingID}},
	{name: "v3.6.1/label/custom-instanceLabelKey", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "label", InstanceLabelKey: customLabelKey},
		wantLabels: []string{customLabelKey}},
	{name: "v3.6.1/annotation/installationID", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", InstallationID: "lab-installation"},
		wantAnnotations: []string{trackingID, installationIDKey}},
	{name: "v3.6.1/annotation/apps-in-any-namespace", cfg: lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", AppNamespaces: []string{"team-apps"}},
		appNamespace: "team-apps", wantAnnotations: []string{trackingID}},
	{name: "v2.14.11/label", cfg: lab.ArgoCDConfig{Version: "v2.14.11", Tracking: "label"}, wantLabels: []string{instanceLabel}},
	// Tracking method unset: the default is the version's, which unprune reads from the controller's image.
	{name: "v3.6.1/default-tracking", cfg: lab.ArgoCDConfig{Version: "v3.6.1"}, wantAnnotations: []string{trackingID}},
	{name: "v2.14.11/default-tracking", cfg: lab.ArgoCDConfig{Version: "v2.14.11"}, wantLabels: []string{instanceLabel}},
	{name: "v2.14.11/annotation", cfg: lab.ArgoCDConfig{Version: "v2.14.11", Tracking: "annotation"}, wantAnnotations: []string{trackingID}},
}

// matrixDetachCells are, for `make test-matrix`, every tracking method on each release, and the
// method the release defaults to: label before v3.0, annotation from v3.0.0 (util/settings/settings.go,
// GetTrackingMethod).
func matrixDetachCells(versions []string) []detachCell {
	var cells []detachCell
	for _, v := range versions {
		label := detachCell{name: v + "/label", cfg: lab.ArgoCDConfig{Version: v, Tracking: "label"}, wantLabels: []string{instanceLabel}}
		annotation := detachCell{name: v + "/annotation", cfg: lab.ArgoCDConfig{Version: v, Tracking: "annotation"}, wantAnnotations: []string{trackingID}}
		both := detachCell{name: v + "/annotation+label", cfg: lab.ArgoCDConfig{Version: v, Tracking: "annotation+label"},
			wantLabels: []string{instanceLabel}, wantAnnotations: []string{trackingID}}
		def := annotation
		if strings.HasPrefix(v, "v2.") {
			def = label
		}
		def.name, def.cfg = v+"/default-tracking", lab.ArgoCDConfig{Version: v}
		cells = append(cells, label, annotation, both, def)
	}
	return cells
}

// TestDetachKubeSystem is the incident itself: kube-system committed and reverted with
// annotation+label tracking. It is not parallel: kube-system is shared by the whole lab.
func TestDetachKubeSystem(t *testing.T) {
	env := labtest.Get(t)
	t.Cleanup(func() { env.Untrack(t, "kube-system") })
	proveDetach(t, env, detachCell{
		cfg:       lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation+label"},
		namespace: "kube-system", wantLabels: []string{instanceLabel}, wantAnnotations: []string{trackingID},
	})
}

// TestDetach proves, on every cell: the incident → unprune scan shows it → preview and server-side
// dry-run change nothing → detach --yes → the app is Synced, the object is still there with every
// other label and annotation unchanged → a manual sync with prune deletes nothing.
func TestDetach(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	cells := detachCells
	if versions := labtest.Lines(); len(versions) > 0 {
		cells = matrixDetachCells(versions)
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			proveDetach(t, env, c)
		})
	}
}

func proveDetach(t *testing.T, env *labtest.Env, c detachCell) {
	install := env.ArgoCD(t, c.cfg)
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, Namespace: c.appNamespace})
	ns := c.namespace
	if ns == "" {
		ns = labtest.UniqueName("precious")
		t.Cleanup(func() { env.DeleteNamespace(ns) })
	}
	// Labels of other tools must survive untouched, part-of among them.
	reverted := app.Incident(t, ns, map[string]string{"app.kubernetes.io/part-of": "platform", "team": "storage"})
	labels, annotations, uid := metadataOf(t, env, ns)
	journals := labtest.TempDir(t)
	argocdNS := "--argocd-namespace=" + install.Namespace()
	appRef := app.Namespace + "/" + app.Name

	// scan finds it, with the tracking metadata that is really on the object.
	r := unprune(t, env, journals, "scan", "-A", argocdNS, "-o", "json")
	if r.Code != cli.ExitFindings {
		t.Fatalf("scan exit %d, want %d", r.Code, cli.ExitFindings)
	}
	var rep printer.ScanReport
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("scan -o json: %v", err)
	}
	found := false
	for _, f := range rep.Items {
		if f.Application.Name != app.Name || f.Resource.Kind != "Namespace" || f.Resource.Name != ns {
			continue
		}
		found = true
		if f.Risk != "High" || f.Instance != app.Instance() {
			t.Errorf("finding %+v: want risk high and instance %q", f, app.Instance())
		}
		// unprune's model of the release (its default tracking method above all) must agree with
		// what this Argo CD does: detach's fallback for a model that disagrees (it removes every
		// kind of tracking naming the app) would otherwise hide a rule on the wrong line.
		if f.ModelMismatch {
			t.Errorf("scan's model of Argo CD %s disagrees with it (tracking method %s from %s): %v", c.cfg.Version, rep.ArgoCD.TrackingMethod,
				rep.ArgoCD.TrackingMethodSource, f.Notes)
		}
		keys := map[string]bool{}
		for _, m := range f.Tracking {
			keys[m.Key] = true
		}
		for _, k := range append(append([]string{}, c.wantLabels...), c.wantAnnotations...) {
			if !keys[k] {
				t.Errorf("scan shows tracking %v, missing %s", f.Tracking, k)
			}
		}
	}
	if !found {
		t.Fatalf("scan did not report Namespace %s of %s", ns, appRef)
	}

	// Preview and server-side dry run: exit 1, nothing changes.
	for _, mode := range [][]string{nil, {"--dry-run=server"}} {
		r = unprune(t, env, journals, append([]string{"detach", appRef, "--all", argocdNS}, mode...)...)
		if r.Code != cli.ExitFindings {
			t.Fatalf("detach %v exit %d, want %d", mode, r.Code, cli.ExitFindings)
		}
		l, a, _ := metadataOf(t, env, ns)
		sameExcept(t, "label after "+fmt.Sprint(mode), labels, l, nil, nil)
		sameExcept(t, "annotation after "+fmt.Sprint(mode), annotations, a, nil, nil)
	}
	if s := app.Status(t); s.Sync != "OutOfSync" {
		t.Fatalf("a preview changed the app's status: %s", s)
	}

	// The real thing.
	r = unprune(t, env, journals, "detach", appRef, "--all", argocdNS, "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach --yes exit %d, want 0", r.Code)
	}
	if !strings.Contains(r.Stdout, "is Synced") {
		t.Errorf("detach did not show the app Synced:\n%s", r.Stdout)
	}
	s := app.WaitSynced(t, reverted)
	if _, listed := s.Find("Namespace", ns); listed {
		t.Errorf("the namespace is still listed: %s", s)
	}
	l, a, uidAfter := metadataOf(t, env, ns)
	if uidAfter != uid {
		t.Fatalf("namespace recreated: uid %s → %s", uid, uidAfter)
	}
	sameExcept(t, "label", labels, l, c.wantLabels, nil)
	sameExcept(t, "annotation", annotations, a, c.wantAnnotations, nil)

	// A prune sync now leaves it alone.
	if op := app.Sync(t, true); op.Phase != "Succeeded" {
		t.Errorf("prune sync after detach: %s %s", op.Phase, op.Message)
	}
	l2, a2, uid2 := metadataOf(t, env, ns)
	if uid2 != uid {
		t.Fatalf("namespace recreated by the prune sync")
	}
	sameExcept(t, "label after prune sync", l, l2, nil, nil)
	sameExcept(t, "annotation after prune sync", a, a2, nil, nil)
	app.WaitSynced(t, reverted)

	// Undo puts every key back on the same object, and Argo CD shows it requiring pruning again by a
	// comparison of its own: undo asks for no refresh. The controller requeues the app when it sees
	// the object tracked again; its periodic refresh (timeout.reconciliation, 120 s) cannot come
	// within 60 s of the comparison that ended the sync just above.
	r = unprune(t, env, journals, "undo", "--latest", "--yes", argocdNS)
	if r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d\n%s", r.Code, r.Stderr)
	}
	restoredExactly(t, env, ns, uid, labels, annotations)
	app.WaitStatus(t, 60*time.Second, fmt.Sprintf("to show Namespace %s requiring pruning again after undo, by itself", ns),
		labtest.RequiresPruningAt(reverted, "Namespace", ns))
}

// TestDetachKeep: --strategy keep leaves the namespace in the app but never pruned; undo brings the
// requires-pruning state back.
func TestDetachKeep(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("kept")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	// An option already present must be kept when Prune=false is merged in.
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/sync-options":"ServerSideApply=true"}}}`)
	if _, err := env.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	labels, annotations, _ := metadataOf(t, env, ns)
	journals := labtest.TempDir(t)
	argocdNS := "--argocd-namespace=" + install.Namespace()

	r := unprune(t, env, journals, "detach", app.Name, "Namespace/"+ns, "--strategy=keep", "--yes", argocdNS)
	if r.Code != cli.ExitOK {
		t.Fatalf("detach --strategy keep exit %d", r.Code)
	}
	l, a, _ := metadataOf(t, env, ns)
	sameExcept(t, "label", labels, l, nil, nil)
	sameExcept(t, "annotation", annotations, a, []string{"argocd.argoproj.io/sync-options"}, map[string]string{
		"argocd.argoproj.io/sync-options":    "ServerSideApply=true,Prune=false,Delete=false",
		"argocd.argoproj.io/compare-options": "IgnoreExtraneous",
	})
	s := app.WaitSynced(t, reverted)
	if row, listed := s.Find("Namespace", ns); !listed || !row.RequiresPruning {
		t.Errorf("with keep the namespace stays listed as requiring pruning; got %s", s)
	}
	if op := app.Sync(t, true); op.Phase != "Succeeded" {
		t.Errorf("prune sync: %s %s", op.Phase, op.Message)
	}
	metadataOf(t, env, ns) // still there and Active

	r = unprune(t, env, journals, "undo", "--latest", "--yes", argocdNS)
	if r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d", r.Code)
	}
	restoredExactly(t, env, ns, "", labels, annotations)
	app.WaitRequiresPruning(t, reverted, "Namespace", ns)
}

// TestDetachRefusals: unprune refuses, changing nothing, an object whose tracking-id was copied from
// another object, and an object another app tracks.
func TestDetachRefusals(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	argocdNS := "--argocd-namespace=" + install.Namespace()
	owner := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	other := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	tracked := labtest.UniqueName("owned")
	t.Cleanup(func() { env.DeleteNamespace(tracked) })
	owner.Incident(t, tracked, nil)
	_, trackedAnnotations, _ := metadataOf(t, env, tracked)

	// A copy of the tracked namespace's manifest, applied under another name.
	copied := labtest.UniqueName("copy")
	env.CreateNamespace(t, copied)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{trackingID: trackedAnnotations[trackingID]}}})
	if _, err := env.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), copied, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	copyLabels, copyAnnotations, _ := metadataOf(t, env, copied)
	journals := labtest.TempDir(t)

	cases := []struct {
		name, app, resource, want string
	}{
		{"copied tracking-id", owner.Name, "Namespace/" + copied, "names Namespace"},
		{"tracked by another app", other.Name, "Namespace/" + tracked, fmt.Sprintf("tracked by app instance %q", owner.Name)},
	}
	for _, c := range cases {
		r := unprune(t, env, journals, "detach", c.app, c.resource, "--force", "--yes", argocdNS)
		if r.Code != cli.ExitRefused {
			t.Errorf("%s: exit %d, want %d (refused)", c.name, r.Code, cli.ExitRefused)
		}
		if !strings.Contains(r.Stdout+r.Stderr, c.want) {
			t.Errorf("%s: output does not explain the refusal with %q", c.name, c.want)
		}
	}
	l, a, _ := metadataOf(t, env, copied)
	sameExcept(t, "copy label", copyLabels, l, nil, nil)
	sameExcept(t, "copy annotation", copyAnnotations, a, nil, nil)
	_, a, _ = metadataOf(t, env, tracked)
	sameExcept(t, "tracked annotation", trackedAnnotations, a, nil, nil)
	if s := owner.Status(t); s.Sync != "OutOfSync" {
		t.Errorf("the owner app changed: %s", s)
	}
}
