package engine

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
)

// hookFinalizers are what Argo CD's controller keeps on an app whose manifests hold a PostDelete
// hook.
var hookFinalizers = []string{argocd.FinalizerPostDelete, argocd.FinalizerPostDelete + "/cleanup"}

// hookWorld is renameWorld with a PostDelete hook in the app's manifests: the old app carries the
// resources finalizer and the hook finalizers, and the fake controller puts the hook finalizers
// back on either app after each comparison of it (never on one marked skip-reconcile).
func hookWorld(t *testing.T) *world {
	w := renameWorld(t)
	obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	obj["metadata"].(map[string]any)["finalizers"] = toAnyList(append([]string{argocd.FinalizerResources}, hookFinalizers...))
	w.argo.SetApplicationObject(obj)
	w.argo.DeleteHooks = map[string][]string{"argocd/guestbook": hookFinalizers, "argocd/shop": hookFinalizers}
	return w
}

func toAnyList(s []string) []any {
	out := []any{}
	for _, v := range s {
		out = append(out, v)
	}
	return out
}

// inFlight plays, once, a comparison of app that was queued before the write that marked it
// skip-reconcile landed, and so still runs: its finalizer block writes the list it read (read; nil
// for the app as the mark left it) with the hook finalizers, right after that write.
func inFlight(w *world, app string, read []string) {
	var once sync.Once
	w.argo.AfterWrite = func(write string) {
		if strings.HasPrefix(write, "patch argocd/"+app+" ") && strings.Contains(write, argocd.AnnotationSkipReconcile) {
			once.Do(func() { w.argo.ControllerFinalizers("argocd", app, read) })
		}
	}
}

// appMeta is an Application's finalizers, annotations and sync policy as stored.
func appMeta(t *testing.T, w *world, name string) ([]string, map[string]string, any) {
	t.Helper()
	obj, err := w.argo.ApplicationObject(context.Background(), "argocd", name)
	if err != nil {
		t.Fatal(err)
	}
	return finalizersOf(obj), stringMap(obj, "annotations"), syncPolicyOf(obj)
}

// An app with a PostDelete hook: the controller put the hook finalizers back on the old app after
// the switch-off (a comparison already queued when the skip-reconcile mark landed). The delete
// finds only those, removes them again conditional on the resourceVersion, and deletes the app
// without any finalizer: no hook runs (the fake fails any delete of an app with finalizers). The
// new app ends with the old one's finalizers, hook ones included.
func TestRenameTakesAnAppWithDeleteHooksThrough(t *testing.T) {
	w := hookWorld(t)
	inFlight(w, "guestbook", nil)
	finalizers, _, _ := appMeta(t, w, "guestbook")
	c, x := rename(t, w.engine(), DryRunNone)
	if !x.Complete() || x.Rollback != nil {
		t.Fatalf("rename: %+v, rollback %+v %v", x.Steps, x.Rollback, x.RollbackErr)
	}
	writes := w.argo.AppWrites()
	// The first delete meets the resourceVersion the controller's write left.
	want := []string{"create argocd/shop", "patch argocd/guestbook", "delete argocd/guestbook", "patch argocd/guestbook", "delete argocd/guestbook", "patch argocd/shop"}
	if got := appWriteVerbs(w); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if off := writes[1]; !strings.Contains(off, `"`+argocd.AnnotationSkipReconcile+`":"true"`) || !strings.Contains(off, `"finalizers":null`) {
		t.Fatalf("switch-off %s: want the mark and the finalizers off in one patch", off)
	}
	if again := writes[3]; !strings.Contains(again, `"finalizers":null`) || !strings.Contains(again, `"resourceVersion"`) {
		t.Fatalf("the hook finalizers removed again %s: want it conditional on the resourceVersion", again)
	}
	if r := stepResult(c, x, StepDelete, 0); r.Outcome != OutcomeApplied {
		t.Fatalf("delete %+v", r)
	}
	got, annotations, _ := appMeta(t, w, "shop")
	if !slices.Equal(got, finalizers) || annotations[argocd.AnnotationSkipReconcile] != "" {
		t.Fatalf("the new app: finalizers %v (want %v), annotations %v", got, finalizers, annotations)
	}
}

// The undo of that rename: the controller puts the hook finalizers back on the new app after its
// switch-off too; it is deleted without them, and the old app comes back with every finalizer,
// its automation and its annotations as the journal's copy has them, skip-reconcile not among them.
func TestRenameUndoTakesAnAppWithDeleteHooksThrough(t *testing.T) {
	w := hookWorld(t)
	finalizers, annotations, policy := appMeta(t, w, "guestbook")
	delete(annotations, argocd.AnnotationRefresh)
	path := renameGuestbook(t, w)
	inFlight(w, "shop", nil)
	before := len(w.argo.AppWrites())
	c, x := undoOf(t, w, path)
	if x.Stopped >= 0 || !x.Complete() {
		t.Fatalf("undo stopped at %d: %+v", x.Stopped, x.Steps)
	}
	var verbs []string
	for _, wr := range w.argo.AppWrites()[before:] {
		verbs = append(verbs, strings.Join(strings.Fields(wr)[:2], " "))
	}
	// The new app switched off, the old one created; the first delete of the new app meets the
	// resourceVersion the controller's write left, its hook finalizers go again, and it is deleted;
	// the old app gets its policy back.
	want := []string{"patch argocd/shop", "create argocd/guestbook", "delete argocd/shop", "patch argocd/shop", "delete argocd/shop", "patch argocd/guestbook"}
	if !slices.Equal(verbs, want) {
		t.Fatalf("undo writes %q, want %q", verbs, want)
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil {
		t.Fatal("the new app is still there")
	}
	got, gotAnnotations, gotPolicy := appMeta(t, w, "guestbook")
	delete(gotAnnotations, argocd.AnnotationRefresh)
	if !slices.Equal(got, finalizers) || !maps.Equal(gotAnnotations, annotations) || !sameJSON(gotPolicy, policy) {
		t.Fatalf("the old app back with finalizers %v annotations %v policy %v; want %v %v %v", got, gotAnnotations, gotPolicy, finalizers, annotations, policy)
	}
	for i, s := range c.Steps {
		if len(s.Lets) > 0 && (i == 0 || c.Steps[i-1].Kind != StepCheck || x.Steps[i-1].Outcome != OutcomePassed) {
			t.Fatalf("step %d lets %v delete without a passed check before it", i, s.Lets)
		}
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The delete takes off again only delete-hook finalizers, and only of an app marked skip-reconcile
// (any other finalizer would cascade; without the mark the controller would put them back after
// its next comparison, and a delete then would run the hooks); each removal is conditional on the
// version read.
func TestDeleteApplicationRemovesOnlyHookFinalizersOfAMarkedApp(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		marked     bool
		err        string
	}{
		{"hook finalizers, marked", hookFinalizers, true, ""},
		{"hook finalizers, not marked", hookFinalizers, false, "would run its delete hooks"},
		{"marked skip-reconcile: false", hookFinalizers, false, "would run its delete hooks"},
		{"the resources finalizer too", append([]string{argocd.FinalizerResources}, hookFinalizers...), true, "would delete its resources"},
		{"a pre-delete finalizer", []string{argocd.FinalizerPreDelete, argocd.FinalizerPreDelete + "/cleanup"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := renameWorld(t)
			obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
			meta := obj["metadata"].(map[string]any)
			meta["finalizers"] = toAnyList(tc.finalizers)
			obj["spec"].(map[string]any)["syncPolicy"] = nil
			if tc.marked {
				meta["annotations"] = map[string]any{argocd.AnnotationSkipReconcile: "true"}
			} else if strings.Contains(tc.name, "false") {
				meta["annotations"] = map[string]any{argocd.AnnotationSkipReconcile: "false"}
			}
			w.argo.SetApplicationObject(obj)
			uid := metaString(obj, "uid")
			err := deleteApplication(context.Background(), w.argo, AppName{Namespace: "argocd", Name: "guestbook"}, uid, "stale", false)
			_, getErr := w.argo.GetApplication(context.Background(), "argocd", "guestbook")
			switch {
			case tc.err == "" && (err != nil || getErr == nil):
				t.Fatalf("not deleted: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || getErr != nil):
				t.Fatalf("err %v, want %q and the app left", err, tc.err)
			case tc.err != "" && len(w.argo.AppWrites()) != 1:
				t.Fatalf("writes %q: want only the delete refused by its precondition", w.argo.AppWrites())
			}
		})
	}
}

// A comparison that read the old app before the switch-off — when its manifests had just gained the
// hook, so it had no hook finalizer yet — writes the list it read back with the hook finalizers:
// the resources finalizer returns. The delete refuses; the failed step rolls the rename back: the
// new app deleted (without its own hook finalizers), the old app's mark off, its finalizers,
// automation and annotations as they were.
func TestRenameRollsBackWhenTheControllerPutsTheResourcesFinalizerBack(t *testing.T) {
	w := hookWorld(t)
	obj, _ := w.argo.ApplicationObject(context.Background(), "argocd", "guestbook")
	obj["metadata"].(map[string]any)["finalizers"] = []any{argocd.FinalizerResources}
	w.argo.SetApplicationObject(obj)
	inFlight(w, "guestbook", []string{argocd.FinalizerResources})
	finalizers, annotations, policy := appMeta(t, w, "guestbook")
	c, x := rename(t, w.engine(), DryRunNone)
	if r := stepResult(c, x, StepDelete, 0); r.Outcome != OutcomeFailed || !strings.Contains(r.Message, "would delete its resources") {
		t.Fatalf("delete %+v", r)
	}
	if !x.RolledBack() {
		t.Fatalf("not rolled back: %+v %v", x.Rollback, x.RollbackErr)
	}
	if _, err := w.argo.GetApplication(context.Background(), "argocd", "shop"); err == nil {
		t.Fatal("the new app is still there")
	}
	got, gotAnnotations, gotPolicy := appMeta(t, w, "guestbook")
	delete(annotations, argocd.AnnotationRefresh)
	delete(gotAnnotations, argocd.AnnotationRefresh)
	if !slices.Equal(got, finalizers) || !maps.Equal(gotAnnotations, annotations) || !sameJSON(gotPolicy, policy) {
		t.Fatalf("the old app back with finalizers %v annotations %v policy %v; want %v %v %v", got, gotAnnotations, gotPolicy, finalizers, annotations, policy)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if o := w.cluster.Object(w.refs[ns]); o.Labels[argocd.DefaultInstanceLabelKey] != "guestbook" {
			t.Fatalf("%s: %v", ns, o.Labels)
		}
	}
}
