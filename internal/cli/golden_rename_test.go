package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"

	"github.com/unprune/unprune/internal/cluster"
)

func TestGoldenRename(t *testing.T) {
	compared := func(w *world) { w.compareCreated("platform") }
	runGoldens(t, []goldenCase{
		// Exit 1: previews of every step.
		{name: "rename-preview", args: []string{"rename", "platform", "platform-v2"}},
		{name: "rename-preview-json", args: []string{"rename", "platform", "platform-v2", "-o", "json"}},
		{name: "rename-dry-run-server", args: []string{"rename", "platform", "platform-v2", "--dry-run=server"}},
		// Exit 0: renamed, and Argo CD shows the new app Synced on every resource.
		{name: "rename-yes", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: compared},
		// Exit 5: renamed, but Argo CD's controller stops once the new app has its policy back, and
		// never shows it Synced.
		{name: "rename-not-synced", args: []string{"rename", "platform", "platform-v2", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.argo.AfterWrite = func(write string) {
				if strings.HasPrefix(write, "patch argocd/platform-v2 ") {
					w.argo.Stop()
				}
			}
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 3: Argo CD's controller is stopped and never compares the new app: the rename stops
		// at its first check, and the new app is taken away again.
		{name: "rename-not-compared", args: []string{"rename", "platform", "platform-v2", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.argo.Stop()
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 3: the new app renders other objects (its manifests depend on the app's name): the
		// rename stops before the old app is touched, names the difference and takes the new app away.
		{name: "rename-renders-other-objects", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.argo.OnCreate = func(app *argocd.Application) {
				app.Resources = []argocd.Resource{{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "platform-v2-settings", Status: "OutOfSync", Health: "Missing"}}
				app.Refresh = "normal"
			}
		}},
		// Exit 3: the tracking rewrite fails after the new app was created and the old one switched
		// off: the rename is put back as after a failed check.
		{name: "rename-partial", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.home.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
				return false, errors.New("admission webhook \"deny.example.com\" denied the request")
			}
		}},
		// Exit 4: the same, and putting it back is refused: someone took the journal's mark off the
		// new app meanwhile, so the undo no longer knows it for the rename's.
		{name: "rename-partial-rollback-refused", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.home.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
				if _, err := w.argo.PatchApplication(context.Background(), "argocd", "platform-v2", []byte(`{"metadata":{"annotations":{"unprune.dev/rename-journal":null}}}`), false); err != nil {
					return false, err
				}
				return false, errors.New("admission webhook \"deny.example.com\" denied the request")
			}
		}},
		// Exit 0: an app with a PostDelete hook, whose hook finalizers Argo CD's controller puts back
		// once more after the switch-off (a comparison queued before the skip-reconcile mark landed):
		// they are removed again before the delete, and no hook runs.
		{name: "rename-delete-hooks", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			hooks := []string{argocd.FinalizerPostDelete, argocd.FinalizerPostDelete + "/cleanup"}
			w.argo.DeleteHooks = map[string][]string{"argocd/platform": hooks, "argocd/platform-v2": hooks}
			w.setFinalizers("platform", append([]string{argocd.FinalizerResources}, hooks...)...)
			once := false
			w.argo.AfterWrite = func(write string) {
				if !once && strings.HasPrefix(write, "patch argocd/platform ") {
					once = true
					w.argo.ControllerFinalizers("argocd", "platform", nil)
				}
			}
		}},
		// Exit 4: the old app's automated sync is switched on again while the tracking moves: it is
		// not deleted, and the rollback is refused, since the skip-reconcile mark keeps Argo CD from
		// comparing the app that would get the resources back.
		{name: "rename-automated-again", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.home.BeforePatch = w.patchAppOnce("platform", `{"spec":{"syncPolicy":{"automated":{"prune":true}}}}`)
		}},
		// Exit 3: someone adds a finalizer of their own to the old app while the tracking moves: it is
		// not deleted, the rename is put back, and the old app keeps the skip-reconcile mark (undo
		// does not decide over a finalizer it does not know), with a warning that says so.
		{name: "rename-foreign-finalizer", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.home.BeforePatch = w.patchAppOnce("platform", `{"metadata":{"finalizers":["example.com/keep"]}}`)
		}},
		// Exit 3: refused, nothing changed.
		{name: "rename-refused-out-of-sync", args: []string{"rename", "guestbook", "guestbook-v2", "--yes"}},
		{name: "rename-refused-exists", args: []string{"rename", "platform", "guestbook", "--yes"}},
		// Exit 2: bad input.
		{name: "rename-bad-name", args: []string{"rename", "platform", "Platform"}},
		// Judged before connecting: the kubeconfig is never read.
		{name: "rename-same-name", args: []string{"rename", "platform", "platform", "--kubeconfig", "/nonexistent/kubeconfig"}},
		{name: "rename-one-arg", args: []string{"rename", "platform"}},
		{name: "rename-missing-app", args: []string{"rename", "nope", "new"}},
		// Exit 3: Argo CD does not compare an app marked skip-reconcile, nor would it the copy.
		{name: "rename-not-reconciled", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			obj, err := w.argo.ApplicationObject(context.Background(), w.argo.Ns, "platform")
			if err != nil {
				t.Fatal(err)
			}
			obj["metadata"].(map[string]any)["annotations"] = map[string]any{argocd.AnnotationSkipReconcile: "true"}
			w.argo.SetApplicationObject(obj)
		}},
		// Exit 3: a source-hydrator app renders from its dry source under the new name once the
		// hydrator gets to it, which no comparison before the rename shows.
		{name: "rename-source-hydrator", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			obj, err := w.argo.ApplicationObject(context.Background(), w.argo.Ns, "platform")
			if err != nil {
				t.Fatal(err)
			}
			obj["spec"].(map[string]any)["sourceHydrator"] = map[string]any{
				"drySource":  map[string]any{"repoURL": "https://git.example/platform.git", "path": "chart", "targetRevision": "main"},
				"syncSource": map[string]any{"targetBranch": "environments/prod", "path": "platform"},
			}
			w.argo.SetApplicationObject(obj)
		}},
	})
}

// setFinalizers gives the app's stored object these finalizers.
func (w *world) setFinalizers(app string, finalizers ...string) {
	obj, err := w.argo.ApplicationObject(context.Background(), w.argo.Ns, app)
	if err != nil {
		w.t.Fatal(err)
	}
	list := []any{}
	for _, f := range finalizers {
		list = append(list, f)
	}
	obj["metadata"].(map[string]any)["finalizers"] = list
	w.argo.SetApplicationObject(obj)
}

// patchAppOnce is a BeforePatch that, at the first object patch, has someone patch the app.
func (w *world) patchAppOnce(app, patch string) func(int, cluster.Ref, *cluster.Object) (bool, error) {
	done := false
	return func(int, cluster.Ref, *cluster.Object) (bool, error) {
		if !done {
			done = true
			if _, err := w.argo.PatchApplication(context.Background(), w.argo.Ns, app, []byte(patch), false); err != nil {
				return false, err
			}
		}
		return false, nil
	}
}
