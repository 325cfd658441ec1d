//go:build lab

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

const (
	postDeleteFinalizer = "post-delete-finalizer.argocd.argoproj.io"
	skipReconcile       = "argocd.argoproj.io/skip-reconcile"
)

// hookFinalizers are what Argo CD's controller keeps on an app whose manifests hold a PostDelete
// hook.
var hookFinalizers = []string{postDeleteFinalizer, postDeleteFinalizer + "/cleanup"}

// postDeleteHookManifest is a PostDelete hook of kind ConfigMap. The lab has no kubelet, so a Job
// would never run; the hook object itself is what Argo CD creates when it runs the app's PostDelete
// hooks (controller/hook.go, executePostDeleteHooks): its creation is the hook running.
func postDeleteHookManifest(name, ns string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n    argocd.argoproj.io/hook: PostDelete\ndata:\n  ran: \"yes\"\n", name, ns)
}

// watchNeverCreated watches for a ConfigMap to be created until stop is called, and returns every
// event that showed it: a watch from the list's resourceVersion sees a creation however briefly the
// object lives (the hook's cleanup deletes it again).
func watchNeverCreated(t *testing.T, c *labtest.Cluster, namespace, name string) (stop func() []string) {
	t.Helper()
	cms := c.Kube.CoreV1().ConfigMaps(namespace)
	selector := "metadata.name=" + name
	list, err := cms.List(labtest.Context(t), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Fatalf("hook %s/%s exists already", namespace, name)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rv := list.ResourceVersion
		for {
			w, err := cms.Watch(labtest.Context(t), metav1.ListOptions{FieldSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				select {
				case <-done:
					return
				case <-time.After(200 * time.Millisecond):
					continue
				}
			}
			for open := true; open; {
				select {
				case <-done:
					w.Stop()
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						open = false
						break
					}
					if m, err := meta.Accessor(ev.Object); err == nil {
						rv = m.GetResourceVersion()
					}
					if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
						mu.Lock()
						seen = append(seen, fmt.Sprintf("%s %s/%s at %s", ev.Type, namespace, name, time.Now().Format(time.RFC3339Nano)))
						mu.Unlock()
					}
				}
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// appState is an Application's finalizers, annotations (a pending refresh left out: the controller
// takes it off) and sync policy.
type appState struct {
	finalizers  []string
	annotations map[string]string
	policy      string
}

func stateOf(t *testing.T, env *labtest.Env, namespace, name string) (appState, bool) {
	t.Helper()
	obj, ok := appExists(t, env, namespace, name)
	if !ok {
		return appState{}, false
	}
	md, spec := obj["metadata"].(map[string]any), obj["spec"].(map[string]any)
	s := appState{annotations: map[string]string{}, policy: fmt.Sprint(spec["syncPolicy"]), finalizers: toStrings(md["finalizers"])}
	for k, v := range toMap(md["annotations"]) {
		if k != "argocd.argoproj.io/refresh" && k != "argocd.argoproj.io/refresh-timestamp" {
			s.annotations[k] = fmt.Sprint(v)
		}
	}
	return s, true
}

func (s appState) String() string {
	return fmt.Sprintf("finalizers %v annotations %v policy %s", s.finalizers, s.annotations, s.policy)
}

func (s appState) equal(o appState) bool {
	return slices.Equal(s.finalizers, o.finalizers) && maps.Equal(s.annotations, o.annotations) && s.policy == o.policy
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func toMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func patchApp(t *testing.T, env *labtest.Env, namespace, name, patch string) {
	t.Helper()
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(namespace).Patch(labtest.Context(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch Application %s/%s: %v", namespace, name, err)
	}
}

func patchConfigMap(t *testing.T, env *labtest.Env, o object, patch string) {
	t.Helper()
	if _, err := env.Kube.CoreV1().ConfigMaps(o.namespace).Patch(labtest.Context(t), o.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s: %v", o, err)
	}
}

// hasHookFinalizers reports an Application carrying both hook finalizers.
func hasHookFinalizers(t *testing.T, env *labtest.Env, namespace, name string) (bool, string) {
	s, ok := stateOf(t, env, namespace, name)
	if !ok {
		return false, "gone"
	}
	for _, f := range hookFinalizers {
		if !slices.Contains(s.finalizers, f) {
			return false, s.String()
		}
	}
	return true, ""
}

// hookCase is an app with the resources finalizer, automated prune and a PostDelete hook in its
// manifests, Synced, with the hook finalizers the controller adds for it.
type hookCase struct {
	app     *labtest.App
	rev     string
	hook    string
	objects []object
}

func newHookCase(t *testing.T, env *labtest.Env, install *labtest.Install) *hookCase {
	t.Helper()
	repo := labtest.NewRepo(t)
	app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Automated: true, AutoPrune: true, SelfHeal: true, Finalizers: []string{resourcesFinalizer}})
	// The test's cleanup must not run the hook either: the finalizers go before the delete.
	t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
	cm, hook := labtest.UniqueName("kept"), labtest.UniqueName("post-delete-ran")
	repo.Write(t, app.Path+"/cm.yaml", configMapManifest(cm, app.DestNamespace))
	repo.Write(t, app.Path+"/hook.yaml", postDeleteHookManifest(hook, app.DestNamespace))
	rev := repo.Commit(t, "a ConfigMap and a PostDelete hook")
	c := &hookCase{app: app, rev: rev, hook: hook, objects: []object{{kind: "ConfigMap", namespace: app.DestNamespace, name: cm},
		{kind: "ConfigMap", namespace: app.DestNamespace, name: app.Name + "-config"}}}
	app.RefreshUntil(t, labtest.ControllerTimeout, "to sync the ConfigMap", func(s labtest.Status) bool {
		r, ok := s.Find("ConfigMap", cm)
		return ok && r.Status == "Synced" && s.Revision == rev && s.Sync == "Synced" && s.Idle()
	})
	labtest.Eventually(t, labtest.ControllerTimeout, "the controller to add the hook finalizers", func() (bool, string) {
		return hasHookFinalizers(t, env, app.Namespace, app.Name)
	})
	if _, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(labtest.Context(t), hook, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the PostDelete hook exists before any deletion: %v", err)
	}
	return c
}

// TestControllerPutsHookFinalizersBackUnlessSkipped is the mechanism the rename works with, on each
// line: the controller puts the hook finalizers back on an app whose manifests hold a PostDelete
// hook after a comparison; marked argocd.argoproj.io/skip-reconcile, the app is not compared — not
// on a refresh request (which stays pending), not on a change of its resources — and they stay off.
func TestControllerPutsHookFinalizersBackUnlessSkipped(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking})
			c := newHookCase(t, env, install)
			app := c.app
			stop := watchNeverCreated(t, env.Cluster, app.DestNamespace, c.hook)
			setFinalizers(t, env, app.Namespace, app.Name, []string{resourcesFinalizer})
			removed := time.Now()
			app.Refresh(t)
			labtest.Eventually(t, labtest.ControllerTimeout, "the controller to put the hook finalizers back", func() (bool, string) {
				return hasHookFinalizers(t, env, app.Namespace, app.Name)
			})
			back := time.Since(removed)
			t.Logf("hook finalizers back %s after they were removed", back.Round(time.Millisecond))

			patchApp(t, env, app.Namespace, app.Name, fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, skipReconcile))
			// A comparison queued before the mark still runs: the informer's periodic resync queues
			// the app with a random delay of up to --app-resync-jitter, 60 s by default from v3.0
			// (cmd/argocd-application-controller), none before. Let those run out before judging
			// what the mark does; the rename's delete handles them instead (removing again what they
			// put back).
			drain := 5 * time.Second
			if !strings.HasPrefix(cell.version, "v2.") {
				drain = 65 * time.Second
			}
			time.Sleep(drain)
			setFinalizers(t, env, app.Namespace, app.Name, []string{resourcesFinalizer})
			app.Refresh(t)
			patchConfigMap(t, env, c.objects[0], `{"metadata":{"annotations":{"touched":"yes"}}}`)
			deadline := time.Now().Add(max(4*back, 20*time.Second))
			for time.Now().Before(deadline) {
				if s, _ := stateOf(t, env, app.Namespace, app.Name); !slices.Equal(s.finalizers, []string{resourcesFinalizer}) {
					t.Fatalf("a marked app got finalizers back: %s", s)
				}
				time.Sleep(250 * time.Millisecond)
			}
			if _, pending := app.Get(t).GetAnnotations()["argocd.argoproj.io/refresh"]; !pending {
				t.Error("the controller answered a refresh of an app marked skip-reconcile")
			}
			if ran := stop(); len(ran) > 0 {
				t.Errorf("the PostDelete hook ran: %v", ran)
			}
		})
	}
}

// TestRenameAppWithPostDeleteHook: an app with a PostDelete hook, the resources finalizer and
// automated prune. rename takes it through — every UID unchanged, the hook never created, the new
// app Synced with the old one's finalizers (the hook ones included) and policy, the old app gone —
// and undo --latest brings the old app back with exactly its finalizers, automation and
// annotations, the new one gone, again without the hook running or anything deleted.
func TestRenameAppWithPostDeleteHook(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking})
			c := newHookCase(t, env, install)
			old := c.app
			before, _ := stateOf(t, env, old.Namespace, old.Name)
			snapshot := metadataSnapshot(t, env.Cluster, c.objects)
			deleted := watchNothingDeleted(t, env.Cluster, c.objects...)
			ran := watchNeverCreated(t, env.Cluster, old.DestNamespace, c.hook)
			newName := labtest.UniqueName("hooked-renamed")
			t.Cleanup(func() { dropApp(env, old.Namespace, newName) })
			journals := labtest.TempDir(t)
			ns := "--argocd-namespace=" + install.Namespace()

			r := unprune(t, env, journals, ns, "rename", old.Name, newName, "--yes", "--timeout", "3m")
			if r.Code != 0 {
				t.Fatalf("rename: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, old.Namespace, old.Name); ok {
				t.Error("the old Application still exists")
			}
			renamed := &labtest.App{Install: install, Name: newName, Namespace: old.Namespace, Repo: old.Repo, Path: old.Path}
			s := renamed.WaitSynced(t, c.rev)
			after, _ := stateOf(t, env, old.Namespace, newName)
			if !slices.Equal(after.finalizers, before.finalizers) || after.policy != before.policy || after.annotations[skipReconcile] != "" {
				t.Errorf("the new app: %s; the old one had %s", after, before)
			}
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				if !trackedBy(m, cell.tracking, renamed.Instance()) {
					t.Errorf("%s after the rename: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
				if row, ok := s.Find(o.kind, o.name); !ok || row.Status != "Synced" {
					t.Errorf("the new app's row for %s: %+v (listed %t)", o, row, ok)
				}
			}

			if r := unprune(t, env, journals, ns, "undo", "--latest", "--yes"); r.Code != 0 {
				t.Fatalf("undo: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, old.Namespace, newName); ok {
				t.Error("the new Application is still there after undo")
			}
			old.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced after undo", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == c.rev && s.Idle() })
			if back, ok := stateOf(t, env, old.Namespace, old.Name); !ok || !back.equal(before) {
				t.Errorf("the old app after undo: %s (exists %t); before the rename: %s", back, ok, before)
			}
			wantSnapshot(t, env.Cluster, snapshot)
			if bad := deleted(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
			if events := ran(); len(events) > 0 {
				t.Errorf("the PostDelete hook ran: %v", events)
			}
		})
	}
}
