//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// scanItems runs scan -o json for an installation and returns the items of one app.
func scanItems(t *testing.T, env *labtest.Env, install *labtest.Install, app *labtest.App) []printer.ScanItem {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "scan", "-A", "-o", "json")
	if r.Code != cli.ExitOK && r.Code != cli.ExitFindings {
		t.Fatalf("scan exit %d", r.Code)
	}
	var doc printer.ScanReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("scan -o json: %v", err)
	}
	var out []printer.ScanItem
	for _, it := range doc.Items {
		if it.Application.Name == app.Name {
			out = append(out, it)
		}
	}
	return out
}

// auditItems runs audit -o json for an installation and returns the items of one app.
func auditItems(t *testing.T, env *labtest.Env, install *labtest.Install, app *labtest.App, args ...string) ([]printer.AuditItem, int) {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), append([]string{"--argocd-namespace=" + install.Namespace(), "audit", "-A", "-o", "json"}, args...)...)
	var doc printer.AuditReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("audit -o json (exit %d): %v", r.Code, err)
	}
	var out []printer.AuditItem
	for _, it := range doc.Items {
		if it.Application.Name == app.Name {
			out = append(out, it)
		}
	}
	return out, r.Code
}

var gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestHooksAreLeftAlone: Argo CD lists a live PreSync hook as requiring pruning although it is in
// git; scan and audit list only the Namespace, detach --all changes only the Namespace, naming the
// hook is refused, and the next sync still runs the hook (BeforeHookCreation deletes and recreates
// it, which needs its tracking).
func TestHooksAreLeftAlone(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			hooksAreLeftAlone(t, env, version)
		})
	}
}

func hooksAreLeftAlone(t *testing.T, env *labtest.Env, version string) {
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("hooked")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	// The hook comes after the incident: a sync that runs a hook again replaces it, and releases
	// before v3.6 leave no live hook behind after such a run (seen on v2.14.11 to v3.2.11), so the
	// hook is committed last and run once, by a sync without prune (automated sync skips an app
	// whose only difference is a prune, and hooks are no difference).
	hook := app.Name + "-presync"
	app.Repo.Write(t, app.Path+"/hook.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n    argocd.argoproj.io/hook: PreSync\ndata:\n  step: migrate\n", hook, app.DestNamespace))
	hooked := app.Repo.Commit(t, "a PreSync hook")
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+hooked, func(s labtest.Status) bool { return s.Revision == hooked })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of the hook: %s %s", op.Phase, op.Message)
	}
	s := app.RefreshUntil(t, labtest.ControllerTimeout, "to list the hook and still the Namespace", func(s labtest.Status) bool {
		r, ok := s.Find("ConfigMap", hook)
		return labtest.RequiresPruningAt(hooked, "Namespace", ns)(s) && ok && r.Hook
	})
	cm, err := env.Dynamic.Resource(gvrConfigMap).Namespace(app.DestNamespace).Get(labtest.Context(t), hook, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hook: %v (%s)", err, s)
	}
	tracking := cm.GetAnnotations()[trackingID]
	if tracking == "" {
		t.Fatalf("the hook carries no tracking-id")
	}

	for _, it := range scanItems(t, env, install, app) {
		if it.Resource.Kind != "Namespace" {
			t.Errorf("scan lists %s (status %s)", it.Resource, s)
		}
	}
	items, _ := auditItems(t, env, install, app)
	for _, it := range items {
		if it.Resource.Kind != "Namespace" {
			t.Errorf("audit lists %s", it.Resource)
		}
	}
	argocdNS := "--argocd-namespace=" + install.Namespace()
	journals := labtest.TempDir(t)
	r := unprune(t, env, journals, argocdNS, "detach", app.Name, "ConfigMap/"+app.DestNamespace+"/"+hook, "--yes")
	if r.Code != cli.ExitRefused || !strings.Contains(r.Stdout, "is a hook") {
		t.Errorf("naming the hook: exit %d; want %d with the reason", r.Code, cli.ExitRefused)
	}
	r = unprune(t, env, journals, argocdNS, "detach", app.Name, "--all", "--yes", "-o", "json")
	var doc printer.ChangeReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != cli.ExitOK {
		t.Fatalf("detach --all: exit %d, %v", r.Code, err)
	}
	if len(doc.Items) != 1 || doc.Items[0].Resource.Kind != "Namespace" {
		t.Fatalf("detach --all touched %+v; want only the Namespace", doc.Items)
	}
	after, err := env.Dynamic.Resource(gvrConfigMap).Namespace(app.DestNamespace).Get(labtest.Context(t), hook, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hook after detach: %v", err)
	}
	if after.GetUID() != cm.GetUID() || after.GetAnnotations()[trackingID] != tracking {
		t.Fatalf("the hook changed under detach: uid %s → %s, tracking %q → %q", cm.GetUID(), after.GetUID(), tracking, after.GetAnnotations()[trackingID])
	}
	app.WaitSynced(t, hooked)
	// The next sync runs the hook again, which its delete policy does by replacing the tracked object.
	op := app.Sync(t, false)
	if op.Phase != "Succeeded" {
		t.Fatalf("sync after detach: %s %s", op.Phase, op.Message)
	}
	ran := false
	for _, res := range op.Results {
		ran = ran || (res.Kind == "ConfigMap" && res.Name == hook && res.HookType == "PreSync" && res.HookPhase == "Succeeded")
	}
	if !ran {
		t.Errorf("the sync after detach did not run the hook: %+v", op.Results)
	}
	if now, err := env.Dynamic.Resource(gvrConfigMap).Namespace(app.DestNamespace).Get(labtest.Context(t), hook, metav1.GetOptions{}); err == nil && now.GetUID() == cm.GetUID() {
		t.Errorf("the hook was not replaced (same object %s)", cm.GetUID())
	}
}

// TestVersionIgnoresSidecars: the controller's workload lists a sidecar with a release-like tag
// before Argo CD's own container. unprune reads the version from Argo CD's container and releases
// the object — it never takes the sidecar's tag (which here would mean label tracking) and reports
// success with the app still OutOfSync.
func TestVersionIgnoresSidecars(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Namespace: "argocd-sidecar"})
	containers := `[{"name":"proxy","image":"docker.io/library/envoy:v2.5.0"},{"name":"argocd-application-controller","image":"quay.io/argoproj/argocd:v3.6.1"}]`
	patch := []byte(`{"spec":{"template":{"spec":{"containers":` + containers + `}}}}`)
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	if _, err := env.Dynamic.Resource(gvr).Namespace(install.Namespace()).Patch(labtest.Context(t), "argocd-application-controller", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("sidecar")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "detach", app.Name, "--all", "--yes", "--timeout=60s")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	s := app.WaitSynced(t, reverted)
	if _, listed := s.Find("Namespace", ns); listed {
		t.Fatalf("Argo CD still lists the namespace: %s", s)
	}
}

// TestKeepSurvivesCascadeDeletion: --strategy keep makes the namespace survive the Application's
// deletion with its resources finalizer; the app's other resources are deleted (the control).
func TestKeepSurvivesCascadeDeletion(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			keepSurvivesCascadeDeletion(t, env, version)
		})
	}
}

func keepSurvivesCascadeDeletion(t *testing.T, env *labtest.Env, version string) {
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("kept")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	_, _, uid := metadataOf(t, env, ns)
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "detach", app.Name, "Namespace/"+ns, "--strategy=keep", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach --strategy keep exit %d", r.Code)
	}
	apps := env.Dynamic.Resource(labtest.GVRApplication).Namespace(app.Namespace)
	if _, err := apps.Patch(labtest.Context(t), app.Name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := apps.Delete(labtest.Context(t), app.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	labtest.Eventually(t, labtest.ControllerTimeout, "the Application's cascade deletion to finish", func() (bool, string) {
		_, err := apps.Get(labtest.Context(t), app.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, _, after := metadataOf(t, env, ns); after != uid {
		t.Fatalf("the kept namespace was recreated (uid %s → %s)", uid, after)
	}
	_, err := env.Dynamic.Resource(gvrConfigMap).Namespace(app.DestNamespace).Get(labtest.Context(t), app.Name+"-config", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the app's own ConfigMap survived the cascade deletion (%v): the control failed", err)
	}
}

// TestLongInstanceAnnotationLabel: with annotation+label tracking and apps in any namespace, an
// instance over 63 characters is written truncated into the label; detach removes it too.
func TestLongInstanceAnnotationLabel(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation+label", AppNamespaces: []string{"long-apps"}})
	name := labtest.UniqueName("a-rather-long-application-name-for-the-platform-team")
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, Namespace: "long-apps", Name: name})
	if len(app.Instance()) <= 63 {
		t.Fatalf("instance %q is not long enough to be truncated", app.Instance())
	}
	ns := labtest.UniqueName("long")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	labels, _, _ := metadataOf(t, env, ns)
	if got := labels[instanceLabel]; got == "" || got == app.Instance() || !strings.HasPrefix(app.Instance(), got) {
		t.Fatalf("label %s=%q: want Argo CD's truncation of %q", instanceLabel, got, app.Instance())
	}
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "detach", "long-apps/"+name, "--all", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	app.WaitSynced(t, reverted)
	labels, annotations, _ := metadataOf(t, env, ns)
	if _, ok := labels[instanceLabel]; ok {
		t.Errorf("the truncated label is left: %v", labels)
	}
	if _, ok := annotations[trackingID]; ok {
		t.Errorf("the tracking-id is left: %v", annotations)
	}
}

// TestAppLevelPruneOption: before v3.4 (v2.14.11 in CI; v3.3.14 the last line in the matrix) the
// app's syncOptions Prune=false does not stop a prune; audit --fail-on high says so (exit 1), and a
// prune sync indeed deletes the namespace. From v3.4.0 (v3.5.1 in CI; gitops-engine
// pkg/sync/sync_context.go, WithDefaultPruneOption) the option guards a sync that carries it, as
// argocd-server's and auto-sync's do: audit names the app-level guard as soft (not guarded), the
// prune sync keeps the namespace, and a sync request with an option list of its own prunes it.
func TestAppLevelPruneOption(t *testing.T) {
	onEachLine(t, appLevelPruneHonoured, appLevelPruneOption, "v2.14.11", "v3.5.1")
}

// onEachLine runs prove in parallel on each release line (defaults when no matrix is asked for),
// with what that release is expected to do; a line without an expectation fails the test.
func onEachLine(t *testing.T, expected map[string]bool, prove func(*testing.T, *labtest.Env, string, bool), defaults ...string) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines(defaults...) {
		want, known := expected[version]
		if !known {
			t.Fatalf("no expectation for Argo CD %s", version)
		}
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			prove(t, env, version, want)
		})
	}
}

// appLevelPruneHonoured: whether a release's prune sync keeps a resource because of the app's
// syncOptions Prune=false (v3.4.0 and later).
var appLevelPruneHonoured = map[string]bool{"v2.14.11": false, "v3.0.23": false, "v3.1.16": false, "v3.2.11": false, "v3.3.14": false,
	"v3.4.7": true, "v3.5.1": true, "v3.6.1": true}

func appLevelPruneOption(t *testing.T, env *labtest.Env, version string, honoured bool) {
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
	// The controller reads the option from the sync operation (controller/sync.go,
	// WithDefaultPruneOption(syncOp.SyncOptions…)): argocd-server's sync and auto-sync copy the app's
	// syncOptions into it, and labtest's Sync does as argocd-server does.
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, SyncOptions: []string{"Prune=false"}})
	ns := labtest.UniqueName("appprune")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	items, code := auditItems(t, env, install, app, "--fail-on=high")
	if !honoured && code != cli.ExitFindings {
		t.Errorf("audit --fail-on high exit %d, want %d", code, cli.ExitFindings)
	}
	found := false
	for _, it := range items {
		if it.Resource.Kind == "Namespace" && it.Resource.Name == ns {
			found = true
			notes := strings.Join(it.Notes, " ")
			switch {
			case honoured && (!hasGuard(it, risk.GuardAppPruneDisabled) || it.Guarded):
				t.Errorf("audit row %+v: Argo CD %s honours the app's Prune=false unless a sync brings options of its own: want the soft guard, not guarded", it, version)
			case !honoured && (it.Guarded || len(it.Guards) > 0 || !strings.Contains(notes, "before Argo CD v3.4")):
				t.Errorf("audit row %+v: want unguarded, saying the app-level option does nothing before v3.4", it)
			}
		}
	}
	if !found {
		t.Fatalf("audit does not list the namespace")
	}
	op := app.Sync(t, true)
	if op.Phase != "Succeeded" {
		t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
	}
	if honoured {
		// The operation is over: had the controller pruned it, the DELETE would have been sent.
		n, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		if err != nil || n.DeletionTimestamp != nil {
			t.Fatalf("Argo CD %s pruned the namespace despite the app's Prune=false (%v)", version, err)
		}
		// Soft, as audit says: a sync request with an option list of its own (here an empty one,
		// as `argocd app sync --sync-option …` or any client writing .operation sends) replaces the
		// app's, and its prune deletes the namespace.
		app.SyncOptions = nil
		if op := app.Sync(t, true); op.Phase != "Succeeded" {
			t.Fatalf("prune sync with options of its own: %s %s", op.Phase, op.Message)
		}
	}
	labtest.Eventually(t, 60*time.Second, "the namespace to be deleted by the prune", func() (bool, string) {
		_, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestAppLevelDeleteOption: from v3.4.0 an app's own syncOptions Delete=false keeps its resources
// when its deletion cascades (controller/appcontroller.go shouldBeDeleted reads the object's first
// Delete= entry, else the app's); before, only the object's own entry counts. A parent with
// automated prune drops a child that carries the option and the resources finalizer: check predicts
// the team's namespace kept (KeptByGuard) where the release honours the option and deleted with the
// app (DeletedWithApp) where it does not, and the real cascade does exactly that.
func TestAppLevelDeleteOption(t *testing.T) {
	onEachLine(t, appLevelDeleteHonoured, appLevelDeleteOption, "v3.6.1")
}

// appLevelDeleteHonoured: whether a release's cascade keeps a resource because of the app's
// syncOptions Delete=false (v3.4.0 and later).
var appLevelDeleteHonoured = map[string]bool{"v2.14.11": false, "v3.0.23": false, "v3.1.16": false, "v3.2.11": false, "v3.3.14": false,
	"v3.4.7": true, "v3.5.1": true, "v3.6.1": true}

func appLevelDeleteOption(t *testing.T, env *labtest.Env, version string, honoured bool) {
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
	parent, child, team := appOfApps(t, env, install, true, "Delete=false")
	_, _, uid := metadataOf(t, env, team)

	doc, code := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "child.yaml"), "--fail-on", "high")
	a, ok := findApp(doc, child)
	if !ok || a.Fate != "Cascade" {
		t.Fatalf("check: %+v; want the child's cascade", doc.Applications)
	}
	ns := findResource(a, "Namespace", team)
	switch {
	case ns == nil:
		t.Fatalf("check does not list the team's namespace in the cascade: %+v", a.Resources)
	case honoured && (ns.Reason != "KeptByGuard" || a.High != 0 || a.Deleted != 0):
		t.Fatalf("Argo CD %s honours the child's Delete=false: want every resource kept, got %+v (namespace %+v)", version, a, ns)
	case !honoured && (ns.Reason != "DeletedWithApp" || a.High < 1 || code != cli.ExitFindings):
		t.Fatalf("Argo CD %s reads Delete= only from the object: want the namespace deleted with the app, exit 1; got %+v (namespace %+v), exit %d", version, a, ns, code)
	}

	// The push: Argo CD does what check said.
	parent.Repo.Revert(t)
	parent.Refresh(t)
	if !honoured {
		waitNamespaceGone(t, env, team)
		return
	}
	// The finalizer is removed only after every DELETE the cascade sends: once the app is gone, a
	// deleted namespace would carry its deletionTimestamp.
	waitAppGone(t, env, install.Namespace(), child)
	n, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), team, metav1.GetOptions{})
	if err != nil || n.DeletionTimestamp != nil || string(n.UID) != uid {
		t.Fatalf("Argo CD %s deleted the namespace despite the app's Delete=false (%v, uid %s → %v)", version, err, uid, n.UID)
	}
}

// TestRefreshIsConsumed: detach ends by asking Argo CD for a refresh, with the refresh-timestamp
// annotation only where the controller reads and removes it (v3.6.0 on: util/argo/argo.go
// RefreshApp, controller/appcontroller.go persistReconciliationStatus → handleRefreshAnnotation).
// On every release the controller consumes what unprune wrote: the app is left with neither
// annotation. Written on an older release, refresh-timestamp would stay on the Application for good.
func TestRefreshIsConsumed(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
			ns := labtest.UniqueName("refreshed")
			t.Cleanup(func() { env.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)
			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "detach", app.Name, "--all", "--yes")
			if r.Code != cli.ExitOK {
				t.Fatalf("detach exit %d\n%s", r.Code, r.Stderr)
			}
			app.WaitSynced(t, reverted)
			labtest.Eventually(t, 60*time.Second, "the controller to consume the refresh request", func() (bool, string) {
				annotations := app.Get(t).GetAnnotations()
				_, refresh := annotations[argocd.AnnotationRefresh]
				_, stamp := annotations[argocd.AnnotationRefreshTimestamp]
				return !refresh && !stamp, fmt.Sprint(annotations)
			})
		})
	}
}

// foreignInstallationIDTracked: whether a release tracks an object carrying another installation's
// installation-id when none is configured (util/argo/resource_tracking.go, getAppInstanceValue): an
// operator-precedence bug ignores it from v2.12.12/v2.13.0 through v3.5.x; v3.6.0 fixed it (#28852).
var foreignInstallationIDTracked = map[string]bool{"v2.14.11": false, "v3.0.23": false, "v3.1.16": false, "v3.2.11": false, "v3.3.14": false,
	"v3.4.7": false, "v3.5.1": false, "v3.6.1": true}

// TestForeignInstallationID: with no installationID configured, an object carrying another
// installation's installation-id is ignored before v3.6 (the precedence bug) but still tracked by
// v3.6.1 (fixed). unprune's scan agrees with Argo CD on each release. CI runs the two sides of the
// fix: v3.5.1, the last line with the bug, and v3.6.1.
func TestForeignInstallationID(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.5.1", "v3.6.1") {
		tracked, known := foreignInstallationIDTracked[version]
		if !known {
			t.Fatalf("no expectation for Argo CD %s", version)
		}
		c := struct {
			version string
			tracked bool
		}{version, tracked}
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			// Annotation tracking on every line: only the tracking-id's claim reads the
			// installation-id (util/argo/resource_tracking.go getAppInstanceValue); v2.14's default,
			// label tracking, ignores it.
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: c.version, Tracking: "annotation"})
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
			ns := labtest.UniqueName("foreign")
			t.Cleanup(func() { env.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)
			patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/installation-id":"another-installation"}}}`)
			if _, err := env.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			var s labtest.Status
			if c.tracked {
				s = app.RefreshUntil(t, labtest.ControllerTimeout, "to keep requiring pruning", labtest.RequiresPruningAt(reverted, "Namespace", ns))
			} else {
				s = app.RefreshUntil(t, labtest.ControllerTimeout, "to drop the namespace", func(s labtest.Status) bool {
					_, listed := s.Find("Namespace", ns)
					return s.Revision == reverted && !listed && s.Sync == "Synced"
				})
			}
			items := scanItems(t, env, install, app)
			if listed := len(items) > 0; listed != c.tracked {
				t.Fatalf("scan lists %d rows; Argo CD %s tracks it (%s)", len(items), c.version, s)
			}
			if c.tracked && items[0].ModelMismatch {
				t.Errorf("scan says unprune's model disagrees with Argo CD: %+v", items[0])
			}
			// unprune's own judgement of the object, named with --force: untracked before v3.6.
			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "detach", app.Name, "Namespace/"+ns, "--force")
			if !c.tracked && (r.Code != cli.ExitOK || !strings.Contains(r.Stdout, "installation-id")) {
				t.Errorf("unprune would change an object Argo CD %s ignores: exit %d", c.version, r.Code)
			}
			if c.tracked && r.Code != cli.ExitFindings {
				t.Errorf("unprune does not plan to release an object Argo CD %s tracks: exit %d", c.version, r.Code)
			}
		})
	}
}

// TestUpgradeHandsOverForeignObjects: two installations share a cluster. B, with an installationID,
// applies a ConfigMap for its app; A (v3.5.1, the last line with the bug; no installationID) has an app of the same name that
// does not render it. A ignores the object today; audit of A predicts that an upgrade to v3.6 hands
// it to A's app, which then requires pruning it. The real v3.6.1 controller, with A's settings and an
// app of the same name (C), decides the same: its comparison lists the object as requiring pruning,
// and audit of C lists it as a deletion now.
func TestUpgradeHandsOverForeignObjects(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	a := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.5.1", Tracking: "annotation"})
	b := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", InstallationID: "lab-installation"})
	c := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	name := labtest.UniqueName("web")
	synced := func(app *labtest.App) {
		t.Helper()
		head := app.Repo.Head(t)
		app.RefreshUntil(t, labtest.ControllerTimeout, "to see "+head, func(s labtest.Status) bool { return s.Revision == head })
		if op := app.Sync(t, false); op.Phase != "Succeeded" {
			t.Fatalf("sync of %s/%s: %s %s", app.Namespace, app.Name, op.Phase, op.Message)
		}
		app.WaitSynced(t, head)
	}
	theirs := b.CreateApp(t, labtest.AppOptions{Name: name, Repo: labtest.NewRepo(t)})
	synced(theirs)
	object := name + "-config"
	cm, err := env.Kube.CoreV1().ConfigMaps(theirs.DestNamespace).Get(labtest.Context(t), object, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := cm.Annotations["argocd.argoproj.io/installation-id"]; id != "lab-installation" {
		t.Fatalf("B applied %s without its installation-id (%q): %v", object, id, cm.Annotations)
	}

	ours := a.CreateApp(t, labtest.AppOptions{Name: name, Repo: labtest.NewRepo(t)})
	synced(ours)
	ours.RefreshUntil(t, labtest.ControllerTimeout, "to list its own ConfigMap only", func(s labtest.Status) bool {
		_, own := s.Find("ConfigMap", object)
		return s.Sync == "Synced" && own && len(s.Resources) == 1
	})
	items, _ := auditItems(t, env, a, ours)
	var predicted *printer.AuditItem
	for i, it := range items {
		if it.Resource.Namespace == theirs.DestNamespace && it.Resource.Name == object {
			predicted = &items[i]
		}
	}
	if predicted == nil || predicted.Deleted != "WhenArgoCDUpgraded" || predicted.Guarded || len(predicted.Notes) == 0 ||
		!strings.Contains(predicted.Notes[0], theirs.Namespace+"/"+theirs.Name) {
		t.Fatalf("audit of %s does not predict that an upgrade hands %s/%s to %s: %+v", a.Namespace(), theirs.DestNamespace, object, ours.Name, items)
	}

	// No sync of the twin: its comparison alone decides (and a sync with prune would delete B's object).
	twin := c.CreateApp(t, labtest.AppOptions{Name: name, Repo: labtest.NewRepo(t)})
	twin.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning B's "+object, func(s labtest.Status) bool {
		for _, r := range s.Resources {
			if r.Kind == "ConfigMap" && r.Namespace == theirs.DestNamespace && r.Name == object {
				return r.RequiresPruning
			}
		}
		return false
	})
	now, _ := auditItems(t, env, c, twin)
	found := false
	for _, it := range now {
		found = found || (it.Resource.Namespace == theirs.DestNamespace && it.Resource.Name == object && it.Deleted == "Now")
	}
	if !found {
		t.Fatalf("audit of the v3.6.1 installation does not list %s/%s as a deletion now: %+v", theirs.DestNamespace, object, now)
	}
}

// staleTrackingIsDiff: whether a release shows OutOfSync an object the app declares whose live
// tracking-id names another app, under annotation tracking, when the live object carries the instance
// label (here rendered by the manifest, as Helm charts render app.kubernetes.io/instance)
// (util/argo/resource_tracking.go Normalize; argo-cd #28770, in v3.4.6 and v3.5.0). Before, the label
// made Argo CD copy the desired annotation onto the live one for the comparison and show it Synced.
// Under annotation+label tracking the label Argo CD writes names the app, so the row differs on
// every release.
var staleTrackingIsDiff = map[string]bool{"v2.14.11": false, "v3.0.23": false, "v3.1.16": false, "v3.2.11": false, "v3.3.14": false,
	"v3.4.7": true, "v3.5.1": true, "v3.6.1": true}

// TestStaleTrackingID: app A deploys a ConfigMap, app B declares the same one (the moment between a
// move's commit and B's sync). Argo CD shows B's row Synced or OutOfSync by release; what move and
// check say of that moment (check.InBetween) agrees. Only `make test-matrix` runs it.
func TestStaleTrackingID(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines() {
		isDiff, known := staleTrackingIsDiff[version]
		if !known {
			t.Fatalf("no expectation for Argo CD %s", version)
		}
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
			repo := labtest.NewRepo(t)
			a := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "a", Automated: true})
			b := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "b"})
			cm := labtest.UniqueName("stale")
			labelled := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    %s: shared\ndata:\n  color: blue\n",
				cm, a.DestNamespace, instanceLabel)
			repo.Write(t, "a/stale.yaml", labelled)
			repo.Write(t, "b/stale.yaml", labelled)
			rev := repo.Commit(t, "A and B declare the same ConfigMap")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to sync it", func(s labtest.Status) bool {
				r, ok := s.Find("ConfigMap", cm)
				return s.Revision == rev && ok && r.Status == "Synced"
			})
			m, err := object{kind: "ConfigMap", namespace: a.DestNamespace, name: cm}.meta(t, env.Cluster)
			if err != nil || !trackedBy(m, "annotation", a.Instance()) || m.Labels[instanceLabel] != "shared" {
				t.Fatalf("the ConfigMap is not A's (%v): labels %v annotations %v", err, m.Labels, m.Annotations)
			}
			// B's comparison must be one that began once the ConfigMap was A's: B compared rev as soon as
			// it was created, beside A, and then found the ConfigMap missing, OutOfSync on every line.
			owned := time.Now()
			s := b.RefreshUntil(t, labtest.ControllerTimeout, "to compare the ConfigMap A synced", func(s labtest.Status) bool {
				r, ok := s.Find("ConfigMap", cm)
				return s.ReconciledAt.After(owned) && s.Revision == rev && ok && (r.Status == "Synced" || r.Status == "OutOfSync")
			})
			row, _ := s.Find("ConfigMap", cm)
			if got := row.Status == "OutOfSync"; got != isDiff {
				t.Fatalf("Argo CD %s shows B's row %s; expected a diff: %t", version, row.Status, isDiff)
			}
			v, err := argocd.ParseVersion(version)
			if err != nil {
				t.Fatal(err)
			}
			said := check.InBetween(&v, b.Name, "it")
			if predicted := strings.Contains(said, "counts a stale tracking-id as a difference"); predicted != isDiff {
				t.Errorf("Argo CD %s shows B's row %s, but unprune says: %s", version, row.Status, said)
			}
		})
	}
}
