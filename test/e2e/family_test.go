//go:build lab

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

var gvrApplicationSet = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// teamManifests is a team's namespace with two ConfigMaps in it: what a cascade would delete.
func teamManifests(ns string) string {
	return namespaceManifest(ns) + fmt.Sprintf(`---
apiVersion: v1
kind: ConfigMap
metadata: {name: orders, namespace: %[1]s}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ledger, namespace: %[1]s}
data: {k: v}
`, ns)
}

// childApplication is an app of apps' child: the team's manifests, synced automatically.
func childApplication(name, namespace, repoURL, path, dest string, finalizer bool, syncOptions ...string) string {
	fin := ""
	if finalizer {
		fin = "\n  finalizers: [resources-finalizer.argocd.argoproj.io]"
	}
	options := ""
	if len(syncOptions) > 0 {
		options = fmt.Sprintf(", syncOptions: [%s]", strings.Join(syncOptions, ", "))
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s%s
spec:
  project: default
  source: {repoURL: "%s", path: %s, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy: {automated: {prune: true}%s}
`, name, namespace, fin, repoURL, path, dest, options)
}

// familyCheck runs check -o json and returns the document and the exit code.
func familyCheck(t *testing.T, env *labtest.Env, install *labtest.Install, args ...string) (printer.CheckReport, int) {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), append([]string{"--argocd-namespace=" + install.Namespace(), "check"}, append(args, "-o", "json")...)...)
	var doc printer.CheckReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("check %v: exit %d, %v\n%s", args, r.Code, err, r.Stderr)
	}
	return doc, r.Code
}

func findApp(doc printer.CheckReport, name string) (printer.CheckApp, bool) {
	for _, a := range doc.Applications {
		if a.Application.Name == name {
			return a, true
		}
	}
	return printer.CheckApp{}, false
}

// waitTeam waits until the team's namespace holds both ConfigMaps, synced by its app.
func waitTeam(t *testing.T, env *labtest.Env, ns string) {
	t.Helper()
	labtest.Eventually(t, 3*time.Minute, "the app to sync namespace "+ns, func() (bool, string) {
		cms, err := env.Kube.CoreV1().ConfigMaps(ns).List(labtest.Context(t), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, cm := range cms.Items {
			if cm.Name == "orders" || cm.Name == "ledger" {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d of 2 ConfigMaps", n)
	})
}

func waitNamespaceGone(t *testing.T, env *labtest.Env, ns string) {
	t.Helper()
	labtest.Eventually(t, 3*time.Minute, "namespace "+ns+" to be deleted", func() (bool, string) {
		_, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func waitAppGone(t *testing.T, env *labtest.Env, namespace, name string) {
	t.Helper()
	labtest.Eventually(t, 3*time.Minute, "Application "+name+" to be deleted", func() (bool, string) {
		_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(namespace).Get(labtest.Context(t), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// appOfApps makes a parent app with automated prune whose git holds a child Application (with the
// resources finalizer or not) deploying a team's Namespace and its two ConfigMaps, and waits until
// both synced. The child and the Namespace are deleted after the test.
func appOfApps(t *testing.T, env *labtest.Env, install *labtest.Install, finalizer bool, childSyncOptions ...string) (parent *labtest.App, child, team string) {
	t.Helper()
	parent = install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
	teamRepo := labtest.NewRepo(t)
	team, child = labtest.UniqueName("team"), labtest.UniqueName("child")
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Delete(context.Background(), child, metav1.DeleteOptions{})
		env.DeleteNamespace(team)
	})
	teamRepo.Write(t, "manifests/team.yaml", teamManifests(team))
	teamRepo.Commit(t, "the team")
	parent.Repo.Write(t, parent.Path+"/child.yaml", childApplication(child, install.Namespace(), teamRepo.URL, "manifests", team, finalizer, childSyncOptions...))
	rev := parent.Repo.Commit(t, "a child app")
	parent.RefreshUntil(t, labtest.ControllerTimeout, "to sync the child Application", func(s labtest.Status) bool {
		_, listed := s.Find("Application", child)
		return s.Revision == rev && listed
	})
	waitTeam(t, env, team)
	return parent, child, team
}

// TestFamilyAppOfApps: a parent with automated prune drops a child Application. With the
// resources finalizer, check predicts the cascade — the namespace, counted, high risk, --fail-on
// high failing — and after the push Argo CD deletes the namespace; without it, check predicts the
// resources orphaned, and after the push the namespace stays, still tracked by the gone child.
func TestFamilyAppOfApps(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	for _, finalizer := range []bool{true, false} {
		t.Run(fmt.Sprintf("finalizer=%v", finalizer), func(t *testing.T) {
			t.Parallel()
			parent, child, team := appOfApps(t, env, install, finalizer)

			doc, code := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "child.yaml"), "--fail-on", "high")
			a, ok := findApp(doc, child)
			if !ok {
				t.Fatalf("check does not report the child app: %+v", doc.Applications)
			}
			ns := findResource(a, "Namespace", team)
			if ns == nil || ns.Risk != "High" || ns.Contents == nil || ns.Contents.Objects == nil || *ns.Contents.Objects < 2 {
				t.Fatalf("child %s: namespace row %+v; want it, high risk, with its 2+ objects", child, ns)
			}
			if finalizer {
				if a.Fate != "Cascade" || ns.Reason != "DeletedWithApp" || a.High < 1 || a.Deleted != 3 || code != cli.ExitFindings {
					t.Fatalf("with the finalizer: %+v, exit %d; want a cascade deleting the namespace and both ConfigMaps, exit 1", a, code)
				}
			} else if a.Fate != "Orphaned" || ns.Reason != "LeftTracked" || a.Deleted != 0 || a.High != 0 {
				t.Fatalf("without a finalizer: %+v; want the resources orphaned", a)
			}

			// The push: Argo CD does what check said.
			parent.Repo.Revert(t)
			parent.Refresh(t)
			if finalizer {
				waitNamespaceGone(t, env, team)
				return
			}
			waitAppGone(t, env, install.Namespace(), child)
			_, annotations, _ := metadataOf(t, env, team)
			if !strings.HasPrefix(annotations[trackingID], child+":") {
				t.Errorf("after the orphaning, namespace %s is tracked %q; want still by %s", team, annotations[trackingID], child)
			}
		})
	}
}

func findResource(a printer.CheckApp, kind, name string) *printer.CheckItem {
	for i, it := range a.Resources {
		if it.Resource.Kind == kind && it.Resource.Name == name {
			return &a.Resources[i]
		}
	}
	return nil
}

// appSet is an ApplicationSet with a list generator over teams, each app deploying the team's path.
// The apps do not sync automatically: a renamed app taking the team's namespace over before the old
// one's cascade would race the very deletion the test proves; the test syncs the first apps itself.
func appSet(name, namespace, repoURL, nameSuffix string, preserve bool, teams ...string) map[string]any {
	elements := make([]string, len(teams))
	for i, team := range teams {
		elements[i] = fmt.Sprintf("{team: %s}", team)
	}
	doc := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s, namespace: %s}
spec:
  syncPolicy: {preserveResourcesOnDeletion: %v}
  generators:
  - list: {elements: [%s]}
  template:
    metadata: {name: "{{team}}%s"}
    spec:
      project: default
      source: {repoURL: "%s", path: "teams/{{team}}", targetRevision: main}
      destination: {server: "https://kubernetes.default.svc", namespace: "{{team}}"}
`, name, namespace, preserve, strings.Join(elements, ", "), nameSuffix, repoURL)
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return m
}

// writeSet writes the set as a manifest file for --manifests.
func writeSet(t *testing.T, set map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(labtest.TempDir(t), "set.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// updateSet replaces the live set's spec, as merging the change would.
func updateSet(t *testing.T, env *labtest.Env, set map[string]any) {
	t.Helper()
	meta := set["metadata"].(map[string]any)
	ri := env.Dynamic.Resource(gvrApplicationSet).Namespace(meta["namespace"].(string))
	// The ApplicationSet controller writes the set's status meanwhile: read again on a conflict,
	// as kubectl edit would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := ri.Get(labtest.Context(t), meta["name"].(string), metav1.GetOptions{})
		if err != nil {
			return err
		}
		live.Object["spec"] = set["spec"]
		_, err = ri.Update(labtest.Context(t), live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFamilyApplicationSet: a list generator's set, changed three ways. Dropping an element:
// check predicts the dropped app's cascade, and Argo CD deletes its namespace. The same with
// preserveResourcesOnDeletion: check predicts nothing deleted, and the namespace stays when the app
// is gone. Renaming the template's name: check predicts a deletion and a creation whose cascade
// deletes the namespace, and Argo CD deletes it.
func TestFamilyApplicationSet(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	for _, tc := range []struct {
		name     string
		preserve bool
		rename   bool
	}{{name: "drop"}, {name: "drop-preserving", preserve: true}, {name: "rename", rename: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := labtest.NewRepo(t)
			keep, drop := labtest.UniqueName("keep"), labtest.UniqueName("drop")
			for _, team := range []string{keep, drop} {
				repo.Write(t, "teams/"+team+"/team.yaml", teamManifests(team))
			}
			repo.Commit(t, "two teams")
			name := labtest.UniqueName("set")
			set := appSet(name, install.Namespace(), repo.URL, "", tc.preserve, keep, drop)
			if err := env.Create(labtest.Context(t), set); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Dynamic.Resource(gvrApplicationSet).Namespace(install.Namespace()).Delete(context.Background(), name, metav1.DeleteOptions{})
				env.DeleteNamespace(keep)
				env.DeleteNamespace(drop)
			})
			for _, team := range []string{keep, drop} {
				labtest.Eventually(t, labtest.ControllerTimeout, "the set to generate "+team, func() (bool, string) {
					_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), team, metav1.GetOptions{})
					return err == nil, fmt.Sprint(err)
				})
				app := &labtest.App{Install: install, Name: team, Namespace: install.Namespace(), Repo: repo, Path: "teams/" + team, Cluster: env.Cluster}
				if op := app.Sync(t, false); op.Phase != "Succeeded" {
					t.Fatalf("sync %s: %s %s", team, op.Phase, op.Message)
				}
				waitTeam(t, env, team)
			}

			// audit sees the same risk before any change: the set may delete the app, and its finalizer
			// would take the namespace with it — unless the set preserves resources.
			if row, found := familyAuditRow(t, env, install, drop); found == tc.preserve || (found && !strings.Contains(row.Cascade.ManagedBy, "ApplicationSet "+install.Namespace()+"/"+name)) {
				t.Errorf("audit of %s: row %+v (found %v); want one managed by the set unless it preserves resources", drop, row.Cascade, found)
			}
			changed := appSet(name, install.Namespace(), repo.URL, "", tc.preserve, keep)
			gone := drop
			if tc.rename {
				changed, gone = appSet(name, install.Namespace(), repo.URL, "-v2", tc.preserve, keep, drop), keep
			}
			doc, code := familyCheck(t, env, install, "applicationset/"+name, "--manifests", writeSet(t, changed), "--fail-on", "high")
			a, ok := findApp(doc, gone)
			if !ok || doc.ApplicationSet == nil {
				t.Fatalf("check does not report app %s: %+v %+v", gone, doc.ApplicationSet, doc.Applications)
			}
			ns := findResource(a, "Namespace", gone)
			switch {
			case ns == nil:
				t.Fatalf("%s: no namespace row: %+v", gone, a)
			case tc.preserve && (a.Fate != "Orphaned" || a.Deleted != 0 || code != cli.ExitOK):
				t.Fatalf("preserving: %+v, exit %d; want the resources orphaned, nothing deleted, exit 0", a, code)
			case !tc.preserve && (a.Fate != "Cascade" || ns.Reason != "DeletedWithApp" || ns.Risk != "High" || code != cli.ExitFindings):
				t.Fatalf("%+v, exit %d; want the cascade deleting namespace %s, exit 1", a, code, gone)
			case tc.rename && (a.RenamedTo != keep+"-v2" || !strings.Contains(a.Fix, "preserveResourcesOnDeletion")):
				t.Fatalf("rename: %+v; want renamed to %s-v2 with the way to avoid the window", a, keep)
			}
			_, _, uid := metadataOf(t, env, gone)

			// The merge: the set controller does what check said.
			updateSet(t, env, changed)
			if !tc.preserve {
				// The namespace is deleted (a renamed app's successor does not sync on its own here,
				// so nothing re-creates it in between).
				waitNamespaceGone(t, env, gone)
				return
			}
			waitAppGone(t, env, install.Namespace(), gone)
			if _, annotations, now := metadataOf(t, env, gone); now != uid || !strings.HasPrefix(annotations[trackingID], gone+":") {
				t.Errorf("namespace %s after its app's deletion: uid %s (was %s), tracked %q; want it kept, still tracked", gone, now, uid, annotations[trackingID])
			}
		})
	}
}

// familyAuditRow runs audit on one app and returns its whole-app row, if any.
func familyAuditRow(t *testing.T, env *labtest.Env, install *labtest.Install, app string) (printer.AuditItem, bool) {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "audit", app, "-o", "json")
	var doc printer.AuditReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("audit: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	for _, it := range doc.Items {
		if it.Deleted == "WhenItsAppIsDeleted" && it.Application.Name == app && it.Cascade != nil {
			return it, true
		}
	}
	return printer.AuditItem{}, false
}

// TestFamilyNested: apps of apps nest. The parent drops a child that is itself a parent, both
// with the resources finalizer: check predicts the child's cascade deleting the grandchild
// Application and, through the grandchild's own finalizer, its namespace — and Argo CD does that.
func TestFamilyNested(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	parent := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
	repo := labtest.NewRepo(t)
	team, child, grandchild := labtest.UniqueName("team"), labtest.UniqueName("child"), labtest.UniqueName("grandchild")
	t.Cleanup(func() {
		for _, app := range []string{child, grandchild} {
			_ = env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Delete(context.Background(), app, metav1.DeleteOptions{})
		}
		env.DeleteNamespace(team)
	})
	repo.Write(t, "team/team.yaml", teamManifests(team))
	repo.Write(t, "apps/grandchild.yaml", childApplication(grandchild, install.Namespace(), repo.URL, "team", team, true))
	repo.Commit(t, "a team and the app that deploys it")
	parent.Repo.Write(t, parent.Path+"/child.yaml", childApplication(child, install.Namespace(), repo.URL, "apps", install.Namespace(), true))
	rev := parent.Repo.Commit(t, "an app of apps")
	parent.RefreshUntil(t, labtest.ControllerTimeout, "to sync the child Application", func(s labtest.Status) bool {
		_, listed := s.Find("Application", child)
		return s.Revision == rev && listed
	})
	waitTeam(t, env, team)

	doc, _ := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "child.yaml"))
	c, okC := findApp(doc, child)
	g, okG := findApp(doc, grandchild)
	switch {
	case !okC || c.Fate != "Cascade" || findResource(c, "Application", grandchild) == nil:
		t.Fatalf("child: %+v; want its cascade deleting the grandchild Application", c)
	case !okG || g.Fate != "Cascade" || len(g.Through) != 1 || g.Through[0] != install.Namespace()+"/"+child:
		t.Fatalf("grandchild: %+v; want a cascade reached through the child", g)
	}
	if ns := findResource(g, "Namespace", team); ns == nil || ns.Reason != "DeletedWithApp" || doc.Summary.AppsDeleted != 2 {
		t.Fatalf("grandchild's namespace %+v, %d apps deleted; want it deleted, two apps", ns, doc.Summary.AppsDeleted)
	}
	parent.Repo.Revert(t)
	parent.Refresh(t)
	waitNamespaceGone(t, env, team)
	waitAppGone(t, env, install.Namespace(), grandchild)
}
