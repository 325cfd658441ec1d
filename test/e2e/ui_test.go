//go:build lab

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/journal/cmstore"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// uiShown is what extension/e2e/drive.mjs read off the page.
type uiShown struct {
	Scenario string `json:"scenario"`
	// UI is the page driven: "argocd" (Argo CD's own UI) or "host" (the host page).
	UI string `json:"ui"`
	// Title is Argo CD's own UI's document title.
	Title    string   `json:"title"`
	Problems []string `json:"problems"`
	// ExpectedRefusals are Argo CD's refusals the scenario is about, as Chromium logged them.
	ExpectedRefusals []string `json:"expectedRefusals"`
	Error            string   `json:"error"`
	Screenshots      []string `json:"screenshots"`
	User             string   `json:"user"`
	React            string   `json:"react"`
	Panel            struct{ Summary, First, Cascade string }
	Flyout           struct{ Summary, Item, Cascade string }
	Plan             struct{ Changes, Diff string }
	Released         string `json:"released"`
	Refused          string `json:"refused"`
	SyncStatus       string `json:"syncStatus"`
	PanelAfter       string `json:"panelAfter"`
	UndoCommand      string `json:"undoCommand"`
	Journal          string `json:"journal"`
	UndoPlan         string `json:"undoPlan"`
	UndoResult       string `json:"undoResult"`
	GuardPlan        string `json:"guardPlan"`
	Guarded          string `json:"guarded"`
	Budget           string `json:"budget"`
	Approved         string `json:"approved"`
}

// drive runs one scenario in headless Chromium against the real argocd-server: in Argo CD's own UI
// where the lab built it (lab.OwnUI), else in the host page standing in for it.
func drive(t *testing.T, install *labtest.Install, user lab.ServerUser, app *labtest.App, scenario, resource, label, artifacts string) uiShown {
	t.Helper()
	url, ui := install.State.UI.URL, "host"
	if install.State.UI.ArgoCDURL != "" {
		url, ui = install.State.UI.ArgoCDURL, "argocd"
	}
	args, _ := json.Marshal(map[string]string{"url": url, "ui": ui, "user": user.Name, "password": user.Password,
		"app": app.Namespace + "/" + app.Name, "resource": resource, "resourceLabel": label, "scenario": scenario, "artifacts": artifacts})
	cmd := exec.Command("node", filepath.Join(install.Env.Root, "extension", "e2e", "drive.mjs"), string(args))
	cmd.Dir = filepath.Join(install.Env.Root, "extension")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node drive.mjs %s: %v\n%s", scenario, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var shown uiShown
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &shown); err != nil {
		t.Fatalf("drive.mjs %s printed %q: %v", scenario, out, err)
	}
	t.Logf("%s as %s: %d screenshots in %s", scenario, user.Name, len(shown.Screenshots), artifacts)
	if shown.Error != "" {
		t.Fatalf("%s as %s: %s (screenshots in %s)", scenario, user.Name, shown.Error, artifacts)
	}
	if len(shown.Problems) > 0 {
		t.Errorf("%s as %s: the page logged errors: %v", scenario, user.Name, shown.Problems)
	}
	if shown.UI != ui || ui == "argocd" && shown.Title != "Argo CD" {
		t.Errorf("%s as %s: drove %q titled %q, want %q (Argo CD's own UI is titled \"Argo CD\")", scenario, user.Name, shown.UI, shown.Title, ui)
	}
	if !strings.Contains(shown.User, user.Name) || ui == "argocd" && shown.User != user.Name {
		t.Errorf("%s: signed in as %q, want %s", scenario, shown.User, user.Name)
	}
	return shown
}

// uiArtifacts is where a test's screenshots go: $UNPRUNE_UI_ARTIFACTS/<test>, else a directory the
// lab keeps for the test (its path is logged).
func uiArtifacts(t *testing.T) string {
	if dir := os.Getenv("UNPRUNE_UI_ARTIFACTS"); dir != "" {
		return filepath.Join(dir, t.Name())
	}
	return filepath.Join(labtest.TempDir(t), "ui-artifacts")
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not say %q", what, got, w)
		}
	}
}

// uiJournals are the journals the backend wrote about app, read as `unprune undo` reads them. The
// browser tests share an installation, and so its journal namespace: each reads its own app's.
func uiJournals(t *testing.T, env *labtest.Env, namespace string, app *labtest.App) []journal.Summary {
	t.Helper()
	store := journal.NewBackedStore(cmstore.New(env.Kube, namespace), nil)
	sums, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	var own []journal.Summary
	for _, s := range sums {
		if slices.ContainsFunc(s.Applications, func(a journal.AppRef) bool { return a.Namespace == app.Namespace && a.Name == app.Name }) {
			own = append(own, s)
		}
	}
	return own
}

// TestUIExtension: in Argo CD's own UI, built from its sources with the argo-ui commit it pins —
// v2.14.11 (React 16.14.0) and v3.5.1 (React 19.2.6) — with the extension served by its
// /extensions.js and the backend behind its proxy extension, the viewer sees the stuck Namespace,
// its risk and contents, and Argo CD's RBAC refuses the viewer's release from the top bar's UNPRUNE
// (journaled as failed, nothing changed); the admin sees the plan and the diff, releases, and sees
// the app Synced with the Namespace and its contents intact, the outcome still on show; the undo in
// the UI is refused by Argo CD (its API patches only an app's resources) with the command that
// undoes it, and that command, reading the UI's journal from its ConfigMap, restores the tracking
// exactly. No page logs an error.
//
// The same bundle, unchanged, runs with the React each UI pins. Both track by annotation (v3.5.1 by
// default, v2.14.11 by setting), so that both show the same diff.
func TestUIExtension(t *testing.T) {
	t.Parallel()
	for _, tc := range uiLines {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			uiExtension(t, tc.config(), tc.react)
		})
	}
}

// uiLines are the installations the browser tests drive, one per line and shared by the tests: Argo
// CD's own UI, built with the argo-ui commit it pins (lab.ExactUIVersions), on v3.5.1 (React 19) and
// v2.14.11 (React 16). v3.6.1's own UI is built with a stand-in argo-ui commit: `make lab-up SERVER=1
// UI=1` serves it, but it is no proof.
var uiLines = []uiLine{
	{"v3.5.1", "", "argocd-ui-v35", "19.2.6"}, {"v2.14.11", "annotation", "argocd-ui-v214", "16.14.0"},
}

type uiLine struct{ version, tracking, namespace, react string }

func (l uiLine) config() lab.ArgoCDConfig {
	return lab.ArgoCDConfig{Version: l.version, Tracking: l.tracking, Namespace: l.namespace, Server: true, UI: true}
}

func uiExtension(t *testing.T, cfg lab.ArgoCDConfig, react string) {
	env := labtest.Get(t)
	version := cfg.Version
	install := env.ArgoCD(t, cfg)
	if install.State.UI == nil {
		t.Fatal("the lab started no UI extension")
	}
	if own := lab.OwnUI(env.Root, version); own != (install.State.UI.ArgoCDURL != "") {
		t.Fatalf("Argo CD %s: the lab builds its own UI: %t; argocd-server serves it: %q", version, own, install.State.UI.ArgoCDURL)
	}
	artifacts := uiArtifacts(t)
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("ui")
	t.Cleanup(func() { app.Cluster.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	ctx := labtest.Context(t)
	data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, data, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The backend counts no ConfigMaps or Pods (it may not list them cluster-wide): a kind it counts.
	reader := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "data-reader", Namespace: ns}}
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels, annotations, uid := metadataOf(t, env, ns)
	tracking := annotations[argocd.AnnotationTrackingID]
	if tracking == "" {
		t.Fatalf("the incident left no tracking-id on %s: %v", ns, annotations)
	}
	row, label := "Namespace/"+ns, "Namespace "+ns

	// The viewer sees the same answers, and Argo CD refuses the release.
	viewer := drive(t, install, lab.ServerViewer, app, "refused", row, label, artifacts)
	if viewer.React != react {
		t.Errorf("the %s page runs React %s; Argo CD %s's UI pins %s", viewer.UI, viewer.React, version, react)
	}
	mustContain(t, "the viewer's panel", viewer.Panel.Summary, "1 resource requires pruning", "1 high-risk", "1 unguarded")
	mustContain(t, "the viewer's panel", viewer.Panel.First, label, "HIGH RISK")
	mustContain(t, "the viewer's flyout", viewer.Flyout.Item, label, "deleting a namespace deletes everything in it", "Nothing guards this deletion")
	// What the prune takes with it (the ServiceAccount "data-reader" at least), and the app's cascade: it has no
	// resources finalizer, so deleting it deletes none of its resources.
	if m := regexp.MustCompile(`A prune deletes it with ([0-9]+) objects? in it`).FindStringSubmatch(viewer.Flyout.Item); m == nil || m[1] == "0" {
		t.Errorf("the viewer's flyout: %q does not name the objects in the namespace", viewer.Flyout.Item)
	}
	mustContain(t, "the viewer's panel", viewer.Panel.Cascade, "Deleting the app deletes none of its resources (no resources finalizer)")
	mustContain(t, "the viewer's flyout", viewer.Flyout.Cascade, "Deleting the app deletes none of its resources (no resources finalizer)")
	mustContain(t, "the viewer's plan", viewer.Plan.Diff, "-    "+argocd.AnnotationTrackingID+": ")
	mustContain(t, "the viewer's refusal", viewer.Refused, "Argo CD's RBAC refused the patch", "permission denied", "nothing was changed")
	if len(viewer.ExpectedRefusals) != 1 {
		t.Errorf("want Argo CD's one 403 for the viewer's patch, the page saw %v", viewer.ExpectedRefusals)
	}
	l2, a2, uid2 := metadataOf(t, env, ns)
	sameExcept(t, "labels after the viewer's release", labels, l2, nil, nil)
	sameExcept(t, "annotations after the viewer's release", annotations, a2, nil, nil)
	if uid2 != uid {
		t.Fatalf("the namespace was recreated")
	}
	sums := uiJournals(t, env, install.State.UI.JournalNamespace, app)
	if len(sums) != 1 || sums[0].Failed != 1 || sums[0].Applied != 0 {
		t.Fatalf("after the viewer's refused release, want one journal with one failed entry: %+v", sums)
	}

	// The admin releases: the diff first, then Synced, nothing deleted.
	admin := drive(t, install, lab.ServerAdmin, app, "release", row, label, artifacts)
	mustContain(t, "the admin's panel", admin.Panel.First, label, "HIGH RISK")
	mustContain(t, "the admin's plan", admin.Plan.Changes, argocd.AnnotationTrackingID)
	mustContain(t, "the admin's diff", admin.Plan.Diff, "-    "+argocd.AnnotationTrackingID+": ")
	mustContain(t, "the admin's release", admin.Released, "Released", "Synced", "nothing was deleted")
	if admin.SyncStatus != "Synced" || admin.PanelAfter != "Nothing requires pruning" {
		t.Errorf("after the release the page shows %q and %q", admin.SyncStatus, admin.PanelAfter)
	}
	app.WaitSynced(t, reverted)
	l3, a3, uid3 := metadataOf(t, env, ns)
	if uid3 != uid {
		t.Fatalf("the namespace was recreated")
	}
	sameExcept(t, "labels after the release", labels, l3, nil, nil)
	sameExcept(t, "annotations after the release", annotations, a3, []string{argocd.AnnotationTrackingID}, nil)
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace's contents: %v", err)
	}
	var released journal.Summary
	for _, s := range uiJournals(t, env, install.State.UI.JournalNamespace, app) {
		if s.Applied == 1 {
			released = s
		}
	}
	if released.ID == "" || !strings.Contains(admin.UndoCommand, released.ID) || !strings.Contains(admin.UndoCommand, "--journal-dir configmaps:"+install.State.UI.JournalNamespace) {
		t.Fatalf("the page names %q; the applied journal is %q", admin.UndoCommand, released.ID)
	}

	// Undo from the UI: Argo CD no longer lists the namespace, so its API cannot patch it; the page
	// says so and names the command, which restores the tracking exactly from the UI's journal.
	undo := drive(t, install, lab.ServerAdmin, app, "undo", row, label, artifacts)
	mustContain(t, "the undo plan", undo.UndoPlan, label, "restore", argocd.AnnotationTrackingID)
	mustContain(t, "the undo through Argo CD", undo.UndoResult, "no longer lists", "undo with a kubeconfig")
	fields := strings.Fields(undo.UndoCommand)
	if len(fields) < 5 || fields[0] != "unprune" || fields[1] != "undo" || fields[2] != "--journal-dir" || fields[3] != "configmaps:"+install.State.UI.JournalNamespace {
		t.Fatalf("the page's undo command %q", undo.UndoCommand)
	}
	r := cmdtest.Run(t, env.State.Kubeconfig, fields[3], append([]string{"undo"}, fields[4:]...)...)
	if r.Code != cli.ExitOK {
		t.Fatalf("%s: exit %d", undo.UndoCommand, r.Code)
	}
	restoredExactly(t, env, ns, uid, labels, annotations)
	app.WaitStatus(t, 90*time.Second, "to require pruning of "+ns+" again", labtest.RequiresPruningAt(reverted, "Namespace", ns))
}

// TestUIUndoThroughArgoCD: where Argo CD still lists a released object — a namespaced one in the
// app's destination namespace, shown as an orphaned resource by a project that monitors them —
// its API can patch it, so the UI's undo restores the tracking exactly through argocd-server, as
// the admin, and the journal says undone. Before that, the Prune=confirm guard and its undo, and the
// deletion budget's approval of the pending prune (the Application patched through Argo CD's app
// API) and its undo. In Argo CD's own UI, on each line the lab builds it for (v3.5.1 with React 19,
// v2.14.11 with React 16).
func TestUIUndoThroughArgoCD(t *testing.T) {
	t.Parallel()
	for _, l := range uiLines {
		if lab.OwnUI(labtest.Get(t).Root, l.version) {
			t.Run(l.version, func(t *testing.T) {
				t.Parallel()
				uiUndoThroughArgoCD(t, l.config())
			})
		}
	}
}

func uiUndoThroughArgoCD(t *testing.T, cfg lab.ArgoCDConfig) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, cfg)
	artifacts := uiArtifacts(t)
	ctx := labtest.Context(t)
	project := labtest.UniqueName("orphans")
	if err := env.Create(ctx, map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": project, "namespace": install.Namespace()},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			"orphanedResources":        map[string]any{"warn": false},
		},
	}); err != nil {
		t.Fatal(err)
	}
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, Project: project})
	name := labtest.UniqueName("settings")
	app.Repo.Write(t, app.Path+"/"+name+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+name+"\n  namespace: "+app.DestNamespace+"\ndata:\n  k: v\n")
	added := app.Repo.Commit(t, "add "+name)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see "+added, func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync: %s %s", op.Phase, op.Message)
	}
	app.WaitSynced(t, added)
	reverted := app.Repo.Revert(t)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning of "+name, labtest.RequiresPruningAt(reverted, "ConfigMap", name))
	before, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	row, label := "ConfigMap/"+app.DestNamespace+"/"+name, "ConfigMap "+app.DestNamespace+"/"+name

	// Kept tracked instead, guarded: Prune=confirm through Argo CD's API, then undone there too.
	guarded := drive(t, install, lab.ServerAdmin, app, "guard", row, label, artifacts)
	mustContain(t, "the guard's plan", guarded.GuardPlan, argocd.AnnotationSyncOptions, "Prune=confirm")
	mustContain(t, "the guard", guarded.Guarded, "Guarded")
	cm, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameExcept(t, "annotations after the guard", before.Annotations, cm.Annotations, nil, map[string]string{argocd.AnnotationSyncOptions: "Prune=confirm"})
	undoGuard := drive(t, install, lab.ServerAdmin, app, "undo", row, label, artifacts)
	mustContain(t, "the guard's undo", undoGuard.UndoResult, label+": restored exactly")
	cm, err = env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameExcept(t, "annotations after the guard's undo", before.Annotations, cm.Annotations, nil, nil)
	before = cm

	// The deletion budget's approval of what the next sync with prune deletes — the ConfigMap, by
	// UID — through Argo CD's app API as the admin, then undone there too.
	appLabel := "Application " + app.Namespace + "/" + app.Name
	approval := drive(t, install, lab.ServerAdmin, app, "approve", row, appLabel, artifacts)
	mustContain(t, "the budget view", approval.Budget, "Its next sync with prune deletes 1 object")
	mustContain(t, "the approval", approval.Approved, "Approved")
	if got := app.Get(t).GetAnnotations()[budget.AnnotationApproved]; got != string(before.UID) {
		t.Fatalf("%s after the UI's approval: %q, want the ConfigMap's UID %s", budget.AnnotationApproved, got, before.UID)
	}
	undoApproval := drive(t, install, lab.ServerAdmin, app, "undo", row, appLabel, artifacts)
	mustContain(t, "the approval's undo", undoApproval.UndoResult, appLabel+": restored exactly")
	if got, ok := app.Get(t).GetAnnotations()[budget.AnnotationApproved]; ok {
		t.Fatalf("%s after the undo of the approval: %q", budget.AnnotationApproved, got)
	}
	admin := drive(t, install, lab.ServerAdmin, app, "release", row, label, artifacts)
	mustContain(t, "the release", admin.Released, "Released", "Synced")
	app.WaitSynced(t, reverted)
	released, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || released.UID != before.UID {
		t.Fatalf("the ConfigMap after the release: %v", err)
	}
	sameExcept(t, "annotations after the release", before.Annotations, released.Annotations, []string{argocd.AnnotationTrackingID}, nil)

	undo := drive(t, install, lab.ServerAdmin, app, "undo", row, label, artifacts)
	mustContain(t, "the undo through Argo CD", undo.UndoResult, label+": restored exactly")
	restored, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || restored.UID != before.UID {
		t.Fatalf("the ConfigMap after the undo: %v", err)
	}
	sameExcept(t, "labels after the undo", before.Labels, restored.Labels, nil, nil)
	sameExcept(t, "annotations after the undo", before.Annotations, restored.Annotations, nil, nil)
	undone := false
	for _, s := range uiJournals(t, env, install.State.UI.JournalNamespace, app) {
		undone = undone || s.Undone == 1
	}
	if !undone {
		t.Fatalf("no journal of %s says undone: %+v", app.Name, uiJournals(t, env, install.State.UI.JournalNamespace, app))
	}
	app.WaitStatus(t, 90*time.Second, "to require pruning of "+name+" again", labtest.RequiresPruningAt(reverted, "ConfigMap", name))
}
