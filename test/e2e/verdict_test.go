//go:build lab

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestCascadeTakesCopies is the control of issue 27's first finding: a Namespace cloned from a
// child app's own, tracking-id and all, is not in the child's status, yet Argo CD's cascade deletes
// it with everything in it. check names the copy in the cascade, and Argo CD deletes it.
func TestCascadeTakesCopies(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	parent, child, team := appOfApps(t, env, install, true)
	_, annotations, _ := metadataOf(t, env, team)
	copied := labtest.UniqueName("copy")
	t.Cleanup(func() { env.DeleteNamespace(copied) })
	if err := env.Create(labtest.Context(t), map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": copied, "annotations": map[string]any{trackingID: annotations[trackingID]}}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"orders", "ledger"} {
		if _, err := env.Kube.CoreV1().ConfigMaps(copied).Create(labtest.Context(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Argo CD's sync status does not count the copy (its tracking-id names another object): the child
	// stays Synced, the copy neither OutOfSync nor requiring pruning (v3.6.1 lists it, without a status).
	(&labtest.App{Install: install, Name: child, Namespace: install.Namespace()}).RefreshUntil(t, labtest.ControllerTimeout, "to compare with the copy", func(s labtest.Status) bool {
		r, listed := s.Find("Namespace", copied)
		return s.Sync == "Synced" && (!listed || (!r.RequiresPruning && r.Status == ""))
	})

	doc, code := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "child.yaml"), "--fail-on", "high")
	a, ok := findApp(doc, child)
	if !ok || a.Fate != "Cascade" || code != cli.ExitFindings {
		t.Fatalf("check: %+v, exit %d; want the child's cascade", doc.Applications, code)
	}
	c := findResource(a, "Namespace", copied)
	if c == nil || c.Reason != "DeletedWithApp" || c.Risk != "High" {
		t.Fatalf("the copy %s in the cascade: %+v (resources %+v); want it deleted with the app", copied, c, a.Resources)
	}

	parent.Repo.Revert(t)
	parent.Refresh(t)
	waitNamespaceGone(t, env, team)
	waitNamespaceGone(t, env, copied)
}

// gitFilesSet is an ApplicationSet of the git files generator: one app per config.json under
// teams/, as Argo CD lists them (git ls-files pathspecs); each app deploys its team's directory.
func gitFilesSet(name, namespace, repoURL string, files ...string) map[string]any {
	var items []any
	for _, f := range files {
		exclude := strings.HasPrefix(f, "!")
		items = append(items, map[string]any{"path": strings.TrimPrefix(f, "!"), "exclude": exclude})
	}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"generators": []any{map[string]any{"git": map[string]any{"repoURL": repoURL, "revision": "main", "files": items}}},
			"template": map[string]any{
				"metadata": map[string]any{"name": "{{team}}"},
				"spec": map[string]any{"project": "default",
					"source":      map[string]any{"repoURL": repoURL, "path": "{{path}}/manifests", "targetRevision": "main"},
					"destination": map[string]any{"server": labtest.InClusterServer, "namespace": "{{team}}"}},
			},
		},
	}
}

// startSet creates the set, waits for each team's app and syncs it once.
func startSet(t *testing.T, env *labtest.Env, install *labtest.Install, set map[string]any, repo *labtest.Repo, paths map[string]string) {
	t.Helper()
	name := set["metadata"].(map[string]any)["name"].(string)
	if err := env.Create(labtest.Context(t), set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(gvrApplicationSet).Namespace(install.Namespace()).Delete(context.Background(), name, metav1.DeleteOptions{})
		for team := range paths {
			env.DeleteNamespace(team)
		}
	})
	for team, path := range paths {
		labtest.Eventually(t, 3*time.Minute, "the set to generate "+team, func() (bool, string) {
			_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), team, metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		app := &labtest.App{Install: install, Name: team, Namespace: install.Namespace(), Repo: repo, Path: path, Cluster: env.Cluster}
		if op := app.Sync(t, false); op.Phase != "Succeeded" {
			t.Fatalf("sync %s: %s %s", team, op.Phase, op.Message)
		}
		waitTeam(t, env, team)
	}
}

// TestGitFilesExcludes: a files generator's change that adds an exclude — written as a directory,
// or with a `*` that spans directories (pathspecs, not path.Match). check, reading the repository's
// commit, predicts the app's deletion and its cascade; the set controller does it.
func TestGitFilesExcludes(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	for _, tc := range []struct {
		name    string
		exclude func(drop string) string
		nested  bool
	}{
		{name: "directory", exclude: func(drop string) string { return "!teams/" + drop }},
		// teams/nested/DROP/config.json: `*` in the include spans nested/DROP, and so does the
		// exclude's.
		{name: "star-spans", exclude: func(string) string { return "!teams/n*" }, nested: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := labtest.NewRepo(t)
			keep, drop := labtest.UniqueName("keep"), labtest.UniqueName("drop")
			paths := map[string]string{keep: "teams/" + keep, drop: "teams/" + drop}
			if tc.nested {
				paths[drop] = "teams/nested/" + drop
			}
			for team, p := range paths {
				repo.Write(t, p+"/config.json", fmt.Sprintf(`{"team": %q}`, team))
				repo.Write(t, p+"/manifests/team.yaml", teamManifests(team))
			}
			repo.Commit(t, "two teams")
			// Untracked in the clone: Argo CD never sees it, nor must check.
			repo.Write(t, "teams/ghost/config.json", `{"team": "ghost"}`)
			name := labtest.UniqueName("set")
			startSet(t, env, install, gitFilesSet(name, install.Namespace(), repo.URL, "teams/*/config.json"), repo, paths)

			changed := gitFilesSet(name, install.Namespace(), repo.URL, "teams/*/config.json", tc.exclude(drop))
			doc, code := familyCheck(t, env, install, "applicationset/"+name, "--manifests", writeSet(t, changed), "--repo-dir", repo.Dir(), "--fail-on", "high")
			a, ok := findApp(doc, drop)
			switch {
			case doc.ApplicationSet == nil || len(doc.ApplicationSet.NotEvaluated) > 0:
				t.Fatalf("set: %+v; want it evaluated", doc.ApplicationSet)
			case strings.Join(doc.ApplicationSet.Generated, ",") != keep:
				t.Fatalf("generated %v; want only %s (not the untracked ghost, not %s)", doc.ApplicationSet.Generated, keep, drop)
			case !ok || a.Fate != "Cascade" || findResource(a, "Namespace", drop) == nil || code != cli.ExitFindings:
				t.Fatalf("check: %+v, exit %d; want %s deleted, its namespace with it", doc.Applications, code, drop)
			}
			updateSet(t, env, changed)
			waitAppGone(t, env, install.Namespace(), drop)
			waitNamespaceGone(t, env, drop)
			if _, _, uid := metadataOf(t, env, keep); uid == "" {
				t.Errorf("%s is gone", keep)
			}
		})
	}
}

// TestControllerPolicyWins: the controller runs with applicationsetcontroller.policy sync and no
// override; a set saying create-only still has its dropped app deleted. check predicts it from
// argocd-cmd-params-cm, and the controller does it.
func TestControllerPolicyWins(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", AppSetPolicy: "sync"})
	repo := labtest.NewRepo(t)
	keep, drop := labtest.UniqueName("keep"), labtest.UniqueName("drop")
	for _, team := range []string{keep, drop} {
		repo.Write(t, "teams/"+team+"/team.yaml", teamManifests(team))
	}
	repo.Commit(t, "two teams")
	name := labtest.UniqueName("set")
	createOnly := func(teams ...string) map[string]any {
		set := appSet(name, install.Namespace(), repo.URL, "", false, teams...)
		set["spec"].(map[string]any)["syncPolicy"] = map[string]any{"applicationsSync": "create-only"}
		return set
	}
	startSet(t, env, install, createOnly(keep, drop), repo, map[string]string{keep: "teams/" + keep, drop: "teams/" + drop})
	changed := createOnly(keep)
	doc, code := familyCheck(t, env, install, "applicationset/"+name, "--manifests", writeSet(t, changed), "--fail-on", "high")
	a, ok := findApp(doc, drop)
	if !ok || a.Fate != "Cascade" || doc.ApplicationSet.EffectivePolicy != "sync" || doc.ApplicationSet.Policy != "create-only" || code != cli.ExitFindings {
		t.Fatalf("check: %+v %+v, exit %d; want %s deleted under the controller's sync", doc.ApplicationSet, doc.Applications, code, drop)
	}
	updateSet(t, env, changed)
	waitNamespaceGone(t, env, drop)
}

// watchUID fails the test the moment the namespace is deleted or replaced, polling until stop.
func watchUID(t *testing.T, env *labtest.Env, ns string) (stop func()) {
	t.Helper()
	_, _, uid := metadataOf(t, env, ns)
	done, finished := make(chan struct{}), make(chan string, 1)
	go func() {
		for {
			select {
			case <-done:
				finished <- ""
				return
			case <-time.After(200 * time.Millisecond):
			}
			got, err := env.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				finished <- "deleted"
				return
			case err == nil && (string(got.UID) != uid || got.DeletionTimestamp != nil):
				finished <- "deleted or replaced"
				return
			}
		}
	}()
	return func() {
		close(done)
		if what := <-finished; what != "" {
			t.Errorf("namespace %s was %s while following the advice", ns, what)
		}
	}
}

// kubectlIn runs a kubectl command line check printed, as written, against the lab.
func kubectlIn(t *testing.T, env *labtest.Env, command string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.State.Kubeconfig, "PATH="+strings.TrimSuffix(env.State.Kubectl, "/kubectl")+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

var (
	kubectlPatch  = regexp.MustCompile(`kubectl patch applications\.argoproj\.io [^']*'[^']*'`)
	kubectlDelete = regexp.MustCompile(`kubectl delete applications\.argoproj\.io -n \S+ [a-z0-9.-]*[a-z0-9]`)
)

// TestSetRenameAdviceFollowed: a rename of a set's template, under the default sync policy, under
// create-delete, create-update and create-only. check prints the advice for the set's effective policy; the test follows it
// as written, polling the team's namespace all along: nothing is deleted, the old app goes, and the
// new one takes the namespace over.
func TestSetRenameAdviceFollowed(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	for _, policy := range []string{"sync", "create-delete", "create-update", "create-only"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			repo := labtest.NewRepo(t)
			team := labtest.UniqueName("team")
			repo.Write(t, "teams/"+team+"/team.yaml", teamManifests(team))
			repo.Commit(t, "a team")
			name := labtest.UniqueName("set")
			set := func(suffix string, preserve bool) map[string]any {
				s := appSet(name, install.Namespace(), repo.URL, suffix, preserve, team)
				s["spec"].(map[string]any)["syncPolicy"].(map[string]any)["applicationsSync"] = policy
				return s
			}
			startSet(t, env, install, set("", false), repo, map[string]string{team: "teams/" + team})
			t.Cleanup(func() {
				_ = env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Delete(context.Background(), team+"-v2", metav1.DeleteOptions{})
			})
			renamed := set("-v2", false)
			doc, _ := familyCheck(t, env, install, "applicationset/"+name, "--manifests", writeSet(t, renamed))
			a, ok := findApp(doc, team)
			if !ok || a.RenamedTo != team+"-v2" || a.Fix == "" {
				t.Fatalf("check: %+v; want the rename with its advice", doc.Applications)
			}
			stop := watchUID(t, env, team)
			switch policy {
			case "sync":
				if !strings.Contains(a.Fix, "first merge syncPolicy.preserveResourcesOnDeletion: true on "+install.Namespace()+"/"+name+" alone") {
					t.Fatalf("advice %q; want preserveResourcesOnDeletion merged alone first", a.Fix)
				}
				updateSet(t, env, set("", true))
				labtest.Eventually(t, labtest.ControllerTimeout, "the set to remove the old app's finalizer", func() (bool, string) {
					u, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), team, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return len(u.GetFinalizers()) == 0, fmt.Sprint(u.GetFinalizers())
				})
				renamed = set("-v2", true)
			case "create-delete":
				patch := kubectlPatch.FindString(a.Fix)
				if patch == "" || strings.Contains(a.Fix, "preserveResourcesOnDeletion: true on") {
					t.Fatalf("advice %q; want the finalizer removed by hand, with the command", a.Fix)
				}
				kubectlIn(t, env, patch)
			case "create-update", "create-only":
				// Neither policy deletes the old app; create-update would write a finalizer removed
				// before the merge back, so the finalizer goes after it.
				patch, del := kubectlPatch.FindString(a.Fix), kubectlDelete.FindString(a.Fix)
				if patch == "" || del == "" || !strings.Contains(a.Fix, "after merging the rename") {
					t.Fatalf("advice %q; want the merge, then the finalizer removed and the app deleted, with the commands", a.Fix)
				}
				updateSet(t, env, renamed)
				kubectlIn(t, env, patch)
				kubectlIn(t, env, del)
			}
			if policy == "sync" || policy == "create-delete" {
				updateSet(t, env, renamed)
			}
			waitAppGone(t, env, install.Namespace(), team)
			next := &labtest.App{Install: install, Name: team + "-v2", Namespace: install.Namespace(), Repo: repo, Path: "teams/" + team, Cluster: env.Cluster}
			labtest.Eventually(t, labtest.ControllerTimeout, "the set to create "+next.Name, func() (bool, string) {
				_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), next.Name, metav1.GetOptions{})
				return err == nil, fmt.Sprint(err)
			})
			if op := next.Sync(t, true); op.Phase != "Succeeded" {
				t.Fatalf("sync %s: %s %s", next.Name, op.Phase, op.Message)
			}
			stop()
			if _, annotations, _ := metadataOf(t, env, team); !strings.HasPrefix(annotations[trackingID], next.Name+":") {
				t.Errorf("namespace %s tracked %q; want taken over by %s", team, annotations[trackingID], next.Name)
			}
		})
	}
}

// TestChildRenameAdviceFollowed: an app of apps renames its child. check's advice — drop the
// finalizer in a commit of its own, then rename — followed as written deletes nothing, and the new
// child takes the namespace over.
func TestChildRenameAdviceFollowed(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	parent, child, team := appOfApps(t, env, install, true)
	renamed := child + "-v2"
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Delete(context.Background(), renamed, metav1.DeleteOptions{})
	})
	manifest, err := os.ReadFile(parent.Repo.Dir() + "/" + parent.Path + "/child.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rename := strings.Replace(string(manifest), "name: "+child, "name: "+renamed, 1)
	doc, _ := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, map[string]string{"renamed.yaml": rename}, "child.yaml"))
	a, ok := findApp(doc, child)
	if !ok || a.RenamedTo != renamed || !strings.Contains(a.Fix, "first merge a commit that only drops resources-finalizer.argocd.argoproj.io") ||
		!strings.Contains(a.Fix, "takes them over") {
		t.Fatalf("check: %+v; want the rename with its advice", doc.Applications)
	}
	stop := watchUID(t, env, team)
	// Step 1, as written: a commit that only drops the finalizer; the parent syncs it.
	parent.Repo.Write(t, parent.Path+"/child.yaml", strings.Replace(string(manifest), "\n  finalizers: [resources-finalizer.argocd.argoproj.io]", "", 1))
	rev := parent.Repo.Commit(t, "drop the finalizer")
	parent.RefreshUntil(t, labtest.ControllerTimeout, "to sync the finalizer's removal", func(s labtest.Status) bool { return s.Revision == rev && s.Sync == "Synced" })
	labtest.Eventually(t, labtest.ControllerTimeout, "the child to lose its finalizer", func() (bool, string) {
		u, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), child, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(u.GetFinalizers()) == 0, fmt.Sprint(u.GetFinalizers())
	})
	// Step 2: the rename.
	if err := os.Remove(parent.Repo.Dir() + "/" + parent.Path + "/child.yaml"); err != nil {
		t.Fatal(err)
	}
	parent.Repo.Write(t, parent.Path+"/renamed.yaml", rename)
	parent.Repo.Commit(t, "rename the child")
	parent.Refresh(t)
	waitAppGone(t, env, install.Namespace(), child)
	labtest.Eventually(t, 3*time.Minute, renamed+" to take the namespace over", func() (bool, string) {
		_, annotations, _ := metadataOf(t, env, team)
		return strings.HasPrefix(annotations[trackingID], renamed+":"), annotations[trackingID]
	})
	stop()
}

// TestPrunedNamespaceTakesItsApps: an app prunes a Namespace that holds an Application (apps in any
// namespace). check follows the Application the namespace's deletion deletes, through its finalizer
// into its own namespace; Argo CD and the namespace controller do that.
func TestPrunedNamespaceTakesItsApps(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	held := "held-apps"
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", AppNamespaces: []string{held}, Namespace: "argocd-held"})
	parent := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
	parent.Repo.Write(t, parent.Path+"/held.yaml", namespaceManifest(held))
	rev := parent.Repo.Commit(t, "the apps' namespace")
	parent.RefreshUntil(t, labtest.ControllerTimeout, "to take namespace "+held+" over", func(s labtest.Status) bool {
		r, listed := s.Find("Namespace", held)
		return s.Revision == rev && listed && r.Status == "Synced"
	})
	repo := labtest.NewRepo(t)
	team, child := labtest.UniqueName("team"), labtest.UniqueName("held")
	t.Cleanup(func() { env.DeleteNamespace(team) })
	repo.Write(t, "team/team.yaml", teamManifests(team))
	repo.Commit(t, "a team")
	var app map[string]any
	if err := yaml.Unmarshal([]byte(childApplication(child, held, repo.URL, "team", team, true)), &app); err != nil {
		t.Fatal(err)
	}
	if err := env.Create(labtest.Context(t), app); err != nil {
		t.Fatal(err)
	}
	waitTeam(t, env, team)

	doc, code := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "held.yaml"), "--fail-on", "high")
	a, ok := findApp(doc, child)
	if !ok || a.Application.Namespace != held || a.Fate != "Cascade" || findResource(a, "Namespace", team) == nil || code != cli.ExitFindings {
		t.Fatalf("check: %+v, exit %d; want %s/%s deleted with the namespace, its cascade deleting %s", doc.Applications, code, held, child, team)
	}
	if !strings.Contains(a.DeletedBy, "deletes Namespace "+held) {
		t.Errorf("deleted by %q; want the namespace's deletion named", a.DeletedBy)
	}
	parent.Repo.Revert(t)
	parent.Refresh(t)
	waitNamespaceGone(t, env, team)
}

// TestResourceSelectorsHideACopy: with argocd-cm resource.selectors, a Namespace whose labels the
// selector leaves out is not in a v3.6+ controller's cache: the copy of a child's tracking-id that
// TestCascadeTakesCopies sees deleted is then no member of the cascade — check leaves it out, and
// Argo CD's cascade deletes the child's Namespace but not the copy. Releases before v3.6 do not read
// the key: there check names the copy, and the cascade deletes it (argocd.RuleResourceSelectors).
// CI runs both sides of the rule's boundary, v3.5.1 and v3.6.1.
func TestResourceSelectorsHideACopy(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	const hiddenLabel = "unprune-lab/hidden"
	for _, version := range labtest.Lines("v3.6.1", "v3.5.1") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			v, err := argocd.ParseVersion(version)
			if err != nil {
				t.Fatal(err)
			}
			hides := argocd.RuleResourceSelectors.Applies(v)
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Tracking: "annotation",
				ResourceSelectors: "- apiGroups: [\"\"]\n  kinds: [Namespace]\n  selector: \"!" + hiddenLabel + "\"\n"})
			parent, child, team := appOfApps(t, env, install, true)
			_, annotations, _ := metadataOf(t, env, team)
			copied := labtest.UniqueName("labelled-copy")
			t.Cleanup(func() { env.DeleteNamespace(copied) })
			if err := env.Create(labtest.Context(t), map[string]any{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]any{"name": copied, "labels": map[string]any{hiddenLabel: "yes"}, "annotations": map[string]any{trackingID: annotations[trackingID]}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := env.Kube.CoreV1().ConfigMaps(copied).Create(labtest.Context(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			doc, _ := familyCheck(t, env, install, parent.Name, "--manifests", render(t, parent, nil, "child.yaml"))
			a, ok := findApp(doc, child)
			if !ok || a.Fate != "Cascade" {
				t.Fatalf("check: %+v; want the child's cascade", doc.Applications)
			}
			if c := findResource(a, "Namespace", copied); (c != nil) == hides {
				t.Errorf("the labelled copy in the cascade: %+v; want it there: %t", c, !hides)
			}
			if c := findResource(a, "Namespace", team); c == nil || c.Reason != "DeletedWithApp" {
				t.Errorf("the child's own Namespace in the cascade: %+v", c)
			}

			parent.Repo.Revert(t)
			parent.Refresh(t)
			waitNamespaceGone(t, env, team)
			labtest.Eventually(t, 3*time.Minute, "the child Application to be gone", func() (bool, string) {
				_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), child, metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			if !hides {
				waitNamespaceGone(t, env, copied)
				return
			}
			if _, _, uid := metadataOf(t, env, copied); uid == "" {
				t.Errorf("the hidden copy %s is gone: Argo CD's cascade never saw it", copied)
			}
		})
	}
}
