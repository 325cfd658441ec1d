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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
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
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see the commit", func(s labtest.Status) bool { return s.Revision == added })
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
	s := app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning of both", func(s labtest.Status) bool {
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
	pruning.RefreshUntil(t, labtest.ControllerTimeout, "to sync the namespace", func(s labtest.Status) bool {
		_, listed := s.Find("Namespace", doomed)
		return s.Revision == rev && s.Sync == "Synced" && listed
	})
	items = checkItems(t, env, install, pruning, render(t, pruning, nil, "doomed.yaml"))
	if it := items[doomed]; it.Kind != "Prune" || it.Reason != "DeletedAtNextSync" || it.Risk != "High" {
		t.Fatalf("check of the revert in the pruning app: %+v; want deleted at next sync", it)
	}
	pruning.Repo.Revert(t)
	pruning.Refresh(t)
	labtest.Eventually(t, labtest.ControllerTimeout, "the automated prune to delete "+doomed, func() (bool, string) {
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
	a.RefreshUntil(t, labtest.ControllerTimeout, "to see it", func(s labtest.Status) bool { return s.Revision == rev })
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

// TestCheckCountsAMoveUntilPrepared: a change moves a Namespace holding data from app A (automated
// prune) to app B (manual). Checked across both apps, the move is the prune it is until `move
// --prepare` marks the Namespace in A: `--fail-on high` fails the change; after the prepare it
// passes, and the landed change — A's automated sync with prune of the commit — deletes nothing.
func TestCheckCountsAMoveUntilPrepared(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1", "v2.14.11") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version})
			repo := labtest.NewRepo(t)
			a := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "a", Automated: true, AutoPrune: true})
			b := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "b"})
			moved := labtest.UniqueName("team-data")
			t.Cleanup(func() { env.DeleteNamespace(moved) })
			repo.Write(t, "a/ns.yaml", namespaceManifest(moved))
			rev := repo.Commit(t, "A gets a team's namespace")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to sync the namespace", func(s labtest.Status) bool {
				r, ok := s.Find("Namespace", moved)
				return s.Revision == rev && s.Sync == "Synced" && ok && r.Status == "Synced" && s.Idle()
			})
			objects := []object{{kind: "Namespace", name: moved}}
			for _, name := range []string{"orders", "invoices"} {
				cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": moved}, "data": map[string]any{"rows": "42"}}}
				if _, err := env.Dynamic.Resource(object{kind: "ConfigMap"}.gvr()).Namespace(moved).Create(labtest.Context(t), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				objects = append(objects, object{kind: "ConfigMap", namespace: moved, name: name})
			}
			if op := b.Sync(t, false); op.Phase != "Succeeded" {
				t.Fatalf("sync of B: %s %s", op.Phase, op.Message)
			}
			stop := watchNothingDeleted(t, env.Cluster, objects...)
			ns0 := "--argocd-namespace=" + install.Namespace()
			check := func() cmdtest.Result {
				withoutIt := render(t, a, nil, "ns.yaml")
				withIt := render(t, b, map[string]string{"ns.yaml": namespaceManifest(moved)})
				return unprune(t, env, labtest.TempDir(t), ns0, "check", a.Name, "--manifests", withoutIt, "--also", b.Name+"="+withIt, "--fail-on", "high")
			}

			r := check()
			if r.Code != cli.ExitFindings || !strings.Contains(r.Stdout, "not prepared") || !strings.Contains(r.Stderr, "1 prune (1 move not prepared), 1 high-risk") {
				t.Fatalf("check of the unprepared move: exit %d, want %d counting it as a high-risk prune\nstdout:\n%s\nstderr:\n%s", r.Code, cli.ExitFindings, r.Stdout, r.Stderr)
			}
			journals := labtest.TempDir(t)
			if r := unprune(t, env, journals, ns0, "move", a.Name, "Namespace/"+moved, "--to", b.Name, "--prepare", "--yes"); r.Code != 0 {
				t.Fatalf("move --prepare: exit %d", r.Code)
			}
			r = check()
			if r.Code != cli.ExitOK || !strings.Contains(r.Stdout, "guarded") || !strings.Contains(r.Stderr, "0 prunes, 0 high-risk") {
				t.Fatalf("check of the prepared move: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}

			// The change lands: A's automated sync of the commit runs with prune and deletes nothing.
			committed := time.Now().Add(-time.Second)
			rev = moveFiles(t, repo, "a", "b", "ns.yaml")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to sync the commit with prune", func(s labtest.Status) bool {
				started, _ := time.Parse(time.RFC3339, s.Operation.StartedAt)
				return s.Revision == rev && started.After(committed) && s.Idle()
			})
			if r := unprune(t, env, journals, ns0, "move", a.Name, "Namespace/"+moved, "--to", b.Name, "--yes", "--timeout", "2m"); r.Code != 0 {
				t.Fatalf("move: exit %d", r.Code)
			}
			b.WaitSynced(t, rev)
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestGuardInsideAPrunedNamespace tries to break "guarded" on an object whose Namespace the same
// prune deletes. A ConfigMap whose manifest carries Prune=false lives in a Namespace of the same
// app. check (app A, automated prune) and audit (app B, manual) must not call it kept, and
// `detach --strategy keep` of it alone is refused; then Argo CD decides: A's automated prune of the
// landed change, and a sync of B with PRUNE ticked, delete the Namespace and the namespace
// controller the ConfigMap with it.
func TestGuardInsideAPrunedNamespace(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1", "v2.14.11") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version})
			ns0 := "--argocd-namespace=" + install.Namespace()
			guardedIn := func(ns string) string {
				return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ledger\n  namespace: %s\n  annotations:\n    argocd.argoproj.io/sync-options: Prune=false\ndata:\n  rows: \"42\"\n", ns)
			}
			setUp := func(automated bool) (*labtest.App, string, object) {
				app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: automated, AutoPrune: automated})
				ns := labtest.UniqueName("team")
				t.Cleanup(func() { env.DeleteNamespace(ns) })
				app.Repo.Write(t, app.Path+"/ns.yaml", namespaceManifest(ns))
				app.Repo.Write(t, app.Path+"/ledger.yaml", guardedIn(ns))
				rev := app.Repo.Commit(t, "a namespace and a guarded ConfigMap in it")
				if !automated {
					app.RefreshUntil(t, labtest.ControllerTimeout, "to see the commit", func(s labtest.Status) bool { return s.Revision == rev })
					if op := app.Sync(t, false); op.Phase != "Succeeded" {
						t.Fatalf("sync: %s %s", op.Phase, op.Message)
					}
				}
				app.RefreshUntil(t, labtest.ControllerTimeout, "to sync both", func(s labtest.Status) bool {
					_, hasNS := s.Find("Namespace", ns)
					_, hasCM := s.Find("ConfigMap", "ledger")
					return s.Revision == rev && s.Sync == "Synced" && hasNS && hasCM && s.Idle()
				})
				return app, ns, object{kind: "ConfigMap", namespace: ns, name: "ledger"}
			}
			gone := func(o object, what string) {
				labtest.Eventually(t, 3*time.Minute, what, func() (bool, string) {
					_, err := o.meta(t, env.Cluster)
					return apierrors.IsNotFound(err), fmt.Sprintf("%s: %v", o, err)
				})
			}

			// check, then the change lands in the app that prunes on its own.
			a, nsA, ledgerA := setUp(true)
			withoutBoth := render(t, a, nil, "ns.yaml", "ledger.yaml")
			it := checkItems(t, env, install, a, withoutBoth)["ledger"]
			if it.Kind != "Prune" || it.Guarded || it.Reason != "DeletedWithNamespace" || !strings.Contains(strings.Join(it.Notes, "\n"), "deleted with Namespace "+nsA) {
				t.Errorf("check calls ledger %+v; want a prune, not guarded, deleted with Namespace %s", it, nsA)
			}
			if err := os.Remove(filepath.Join(a.Repo.Dir(), a.Path, "ns.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(a.Repo.Dir(), a.Path, "ledger.yaml")); err != nil {
				t.Fatal(err)
			}
			committed := time.Now().Add(-time.Second)
			rev := a.Repo.Commit(t, "drop both")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to sync the commit with prune", func(s labtest.Status) bool {
				started, _ := time.Parse(time.RFC3339, s.Operation.StartedAt)
				return s.Revision == rev && started.After(committed) && s.Idle()
			})
			gone(ledgerA, "Argo CD's automated prune and the namespace controller to delete the guarded ConfigMap")

			// audit and detach --strategy keep, then a sync with PRUNE ticked.
			b, nsB, ledgerB := setUp(false)
			for _, f := range []string{"ns.yaml", "ledger.yaml"} {
				if err := os.Remove(filepath.Join(b.Repo.Dir(), b.Path, f)); err != nil {
					t.Fatal(err)
				}
			}
			rev = b.Repo.Commit(t, "drop both")
			b.RefreshUntil(t, labtest.ControllerTimeout, "to list both requiring pruning", func(s labtest.Status) bool {
				n, okN := s.Find("Namespace", nsB)
				c, okC := s.Find("ConfigMap", "ledger")
				return s.Revision == rev && okN && okC && n.RequiresPruning && c.RequiresPruning
			})
			row, ok := auditRow(t, env, install, b, "ConfigMap", "ledger")
			if !ok || row.Guarded || !strings.Contains(strings.Join(row.Notes, "\n"), "deleted with Namespace "+nsB) {
				t.Errorf("audit's row for ledger: %+v (found %t); want unguarded, deleted with Namespace %s", row, ok, nsB)
			}
			if r := unprune(t, env, labtest.TempDir(t), ns0, "detach", b.Name, ledgerB.resourceArg(), "--strategy", "keep", "--yes"); r.Code != 3 ||
				!strings.Contains(r.Stdout, "NamespacePruned") && !strings.Contains(r.Stdout, "requires pruning in") {
				t.Errorf("detach --strategy keep of ledger alone: exit %d, want 3 refusing it\n%s", r.Code, r.Stdout)
			}
			if op := b.Sync(t, true); op.Phase != "Succeeded" {
				t.Logf("the prune sync: %s %s", op.Phase, op.Message)
			}
			gone(ledgerB, "a sync with PRUNE ticked and the namespace controller to delete the guarded ConfigMap")
		})
	}
}
