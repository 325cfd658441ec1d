//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// render writes the app's manifests as they would be after a change: the files of its path now,
// plus extra files, minus removed ones — what a CI job renders before merging.
func render(t *testing.T, app *labtest.App, extra map[string]string, removed ...string) string {
	t.Helper()
	dir := labtest.TempDir(t)
	src := filepath.Join(app.Repo.Dir(), app.Path)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{}
	for _, r := range removed {
		skip[r] = true
	}
	for _, e := range entries {
		if skip[e.Name()] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func namespaceManifest(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

// checkItems runs check and returns its items by resource name.
func checkItems(t *testing.T, env *labtest.Env, install *labtest.Install, app *labtest.App, manifests string) map[string]printer.CheckItem {
	t.Helper()
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "check", app.Name, "--manifests", manifests, "-o", "json")
	var doc printer.CheckReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || r.Code != cli.ExitOK {
		t.Fatalf("check exit %d: %v", r.Code, err)
	}
	out := map[string]printer.CheckItem{}
	for _, it := range doc.Items {
		out[it.Resource.Name] = it
	}
	return out
}

// TestCheckPredictsTheIncident: check reports, before the commit, that adding kube-system and a
// team's existing namespace makes Argo CD adopt both (untracked, high risk) — and after the push
// Argo CD tracks them as predicted; it reports that the revert leaves them requiring pruning (the
// app does not prune) — and Argo CD's status then says exactly that; for an app that prunes, it
// reports "deleted at next sync" — and the namespace is deleted. Hooks, owned objects and excluded
// kinds are never reported. Not parallel: it adopts kube-system.
func TestCheckPredictsTheIncident(t *testing.T) {
	env := labtest.Get(t)
	// One release after the other: each adopts kube-system.
	for _, version := range labtest.Lines("v3.6.1") {
		t.Run(version, func(t *testing.T) { checkPredictsTheIncident(t, env, version) })
	}
}

func checkPredictsTheIncident(t *testing.T, env *labtest.Env, version string) {
	t.Cleanup(func() { env.Untrack(t, "kube-system") })
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	app.WaitSynced(t, app.Repo.Head(t))
	team := labtest.UniqueName("team")
	env.CreateNamespace(t, team)
	// A live object the change names, but as a hook; one owned by another object; an Event.
	hook, owned := app.Name+"-hook", app.Name+"-owned"
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": hook, "namespace": app.DestNamespace}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": owned, "namespace": app.DestNamespace,
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": app.Name + "-config", "uid": "00000000-0000-0000-0000-000000000001"}}}},
	} {
		if err := env.Create(labtest.Context(t), obj); err != nil {
			t.Fatal(err)
		}
	}
	extra := map[string]string{
		"kube-system.yaml": namespaceManifest("kube-system"),
		"team.yaml":        namespaceManifest(team),
		"hook.yaml":        fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  annotations: {argocd.argoproj.io/hook: PostSync}\n", hook),
		"owned.yaml":       fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", owned),
		"event.yaml":       fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata:\n  name: %s-event\ninvolvedObject: {kind: ConfigMap, name: x}\n", app.Name),
	}
	items := checkItems(t, env, install, app, render(t, app, extra))
	for _, ns := range []string{"kube-system", team} {
		it, ok := items[ns]
		if !ok || it.Kind != "Adoption" || it.Reason != "Untracked" || it.Risk != "High" {
			t.Fatalf("check before the commit, %s: %+v (found %v); want an untracked, high-risk adoption", ns, it, ok)
		}
	}
	if len(items) != 2 {
		t.Errorf("check reports %d items; want only the two namespaces (no hook, owned object or Event): %v", len(items), items)
	}

	// The commit lands: Argo CD adopts exactly those two.
	for _, f := range []string{"kube-system.yaml", "team.yaml"} {
		app.Repo.Write(t, app.Path+"/"+f, extra[f])
	}
	added := app.Repo.Commit(t, "adopt")
	app.RefreshUntil(t, 90*time.Second, "to see the commit", func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync: %s %s", op.Phase, op.Message)
	}
	for _, ns := range []string{"kube-system", team} {
		_, annotations, _ := metadataOf(t, env, ns)
		if !strings.HasPrefix(annotations[trackingID], app.Instance()+":") {
			t.Errorf("after the sync %s is tracked %q; check predicted the app would adopt it", ns, annotations[trackingID])
		}
	}

	// The revert: check says both are left requiring pruning; Argo CD agrees.
	items = checkItems(t, env, install, app, render(t, app, nil, "kube-system.yaml", "team.yaml"))
	for _, ns := range []string{"kube-system", team} {
		if it := items[ns]; it.Kind != "Prune" || it.Reason != "LeftRequiringPruning" {
			t.Errorf("check of the revert, %s: %+v; want a prune left requiring pruning", ns, it)
		}
	}
	reverted := app.Repo.Revert(t)
	s := app.RefreshUntil(t, 90*time.Second, "to require pruning of both", func(s labtest.Status) bool {
		a, okA := s.Find("Namespace", "kube-system")
		b, okB := s.Find("Namespace", team)
		return s.Revision == reverted && okA && okB && a.RequiresPruning && b.RequiresPruning
	})
	if s.Sync != "OutOfSync" {
		t.Errorf("after the revert: %s", s)
	}

	// An app that prunes automatically: the revert deletes the namespace, as check says.
	pruning := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
	doomed := labtest.UniqueName("doomed")
	t.Cleanup(func() { env.DeleteNamespace(doomed) })
	pruning.Repo.Write(t, pruning.Path+"/doomed.yaml", namespaceManifest(doomed))
	rev := pruning.Repo.Commit(t, "a namespace")
	pruning.RefreshUntil(t, 90*time.Second, "to sync the namespace", func(s labtest.Status) bool {
		_, listed := s.Find("Namespace", doomed)
		return s.Revision == rev && s.Sync == "Synced" && listed
	})
	items = checkItems(t, env, install, pruning, render(t, pruning, nil, "doomed.yaml"))
	if it := items[doomed]; it.Kind != "Prune" || it.Reason != "DeletedAtNextSync" || it.Risk != "High" {
		t.Fatalf("check of the revert in the pruning app: %+v; want deleted at next sync", it)
	}
	pruning.Repo.Revert(t)
	pruning.Refresh(t)
	labtest.Eventually(t, 2*time.Minute, "the automated prune to delete "+doomed, func() (bool, string) {
		_, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), doomed, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestCheckAMove: a manifest moving an object from app A to app B is, for B, an adoption from A (the
// two would fight), and for A a prune.
func TestCheckAMove(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	a := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	b := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	moved := labtest.UniqueName("moved")
	t.Cleanup(func() { env.DeleteNamespace(moved) })
	a.Repo.Write(t, a.Path+"/moved.yaml", namespaceManifest(moved))
	rev := a.Repo.Commit(t, "a namespace")
	a.RefreshUntil(t, 90*time.Second, "to see it", func(s labtest.Status) bool { return s.Revision == rev })
	if op := a.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync: %s %s", op.Phase, op.Message)
	}
	a.WaitSynced(t, rev)
	intoB := checkItems(t, env, install, b, render(t, b, map[string]string{"moved.yaml": namespaceManifest(moved)}))
	if it := intoB[moved]; it.Kind != "Adoption" || it.Reason != "TrackedByOtherApp" || it.OtherInstance != a.Instance() {
		t.Errorf("check of B with the object: %+v; want an adoption from %s", it, a.Instance())
	}
	recipe := fmt.Sprintf("unprune move %s Namespace/%s --to %s --prepare --yes", a.Name, moved, b.Name)
	if it := intoB[moved]; !strings.Contains(strings.Join(it.Notes, "\n"), recipe) {
		t.Errorf("the adoption from %s does not give the move recipe %q: %q", a.Name, recipe, it.Notes)
	}
	withoutIt := render(t, a, nil, "moved.yaml")
	outOfA := checkItems(t, env, install, a, withoutIt)
	if it := outOfA[moved]; it.Kind != "Prune" {
		t.Errorf("check of A without the object: %+v; want a prune", it)
	}

	// Both apps in one run: one Move, no prune and no adoption.
	withIt := render(t, b, map[string]string{"moved.yaml": namespaceManifest(moved)})
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "check", a.Name, "--manifests", withoutIt,
		"--also", b.Name+"="+withIt, "-o", "json")
	var list struct {
		Kind  string                `json:"kind"`
		Items []printer.CheckReport `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || list.Kind != "CheckReportList" || len(list.Items) != 2 {
		t.Fatalf("check --also: %v, kind %q, %d reports", err, list.Kind, len(list.Items))
	}
	var kinds []string
	for _, doc := range list.Items {
		for _, it := range doc.Items {
			if it.Resource.Name == moved {
				kinds = append(kinds, doc.Application.Name+":"+it.Kind)
				if it.Kind == "Move" && !strings.Contains(strings.Join(it.Notes, "\n"), recipe) {
					t.Errorf("the Move lacks the recipe %q: %q", recipe, it.Notes)
				}
			}
		}
	}
	if want := []string{b.Name + ":Move"}; !slices.Equal(kinds, want) {
		t.Errorf("the moved namespace in one run: %v, want %v", kinds, want)
	}
}
