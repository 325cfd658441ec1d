package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

var (
	gvrDeployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployments    = &meta.RESTMapping{
		Resource:         gvrDeployments,
		GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Scope:            meta.RESTScopeNamespace,
	}
	labelSettings = argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "label"}, &argocd.Version{Major: 3, Minor: 6, Patch: 1})
)

type patchCall struct {
	name   string
	body   string
	opts   metav1.PatchOptions
	result string // "ok", "conflict", or an error
}

// fakeServer is an API server for deployments in memory: merge patches with optimistic
// concurrency on metadata.resourceVersion, dry runs, and hooks to simulate other writers.
type fakeServer struct {
	mu      sync.Mutex
	objects map[string]*unstructured.Unstructured
	calls   []patchCall

	// beforePatch runs before each patch is judged; it may change the stored object (another
	// writer), in which case its resourceVersion is bumped. Returning an error fails the patch.
	beforePatch func(call int, stored *unstructured.Unstructured) (changed bool, err error)
	// webhook changes the object after the patch is merged, like a mutating admission webhook.
	webhook func(*unstructured.Unstructured)
	// replaceOnGet replaces the stored object before a GET (deleted and recreated).
	replaceOnGet func(*unstructured.Unstructured) *unstructured.Unstructured
}

func newFakeServer(objs ...*unstructured.Unstructured) *fakeServer {
	s := &fakeServer{objects: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		s.objects[o.GetNamespace()+"/"+o.GetName()] = o.DeepCopy()
	}
	return s
}

func bump(u *unstructured.Unstructured) {
	rv, _ := strconv.Atoi(u.GetResourceVersion())
	u.SetResourceVersion(strconv.Itoa(rv + 1))
}

func (s *fakeServer) client() *dynamicfake.FakeDynamicClient {
	c := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	c.PrependReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		g := a.(clienttesting.GetAction)
		key := g.GetNamespace() + "/" + g.GetName()
		if s.replaceOnGet != nil && s.objects[key] != nil {
			s.objects[key] = s.replaceOnGet(s.objects[key])
		}
		o, ok := s.objects[key]
		if !ok {
			return true, nil, apierrors.NewNotFound(gvrDeployments.GroupResource(), g.GetName())
		}
		return true, o.DeepCopy(), nil
	})
	c.PrependReactor("patch", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		p := a.(clienttesting.PatchActionImpl)
		call := patchCall{name: p.GetName(), body: string(p.GetPatch()), opts: p.PatchOptions}
		record := func(result string) { call.result = result; s.calls = append(s.calls, call) }
		if p.GetPatchType() != types.MergePatchType {
			record("bad patch type")
			return true, nil, apierrors.NewBadRequest("want a merge patch")
		}
		key := p.GetNamespace() + "/" + p.GetName()
		stored, ok := s.objects[key]
		if !ok {
			record("not found")
			return true, nil, apierrors.NewNotFound(gvrDeployments.GroupResource(), p.GetName())
		}
		if s.beforePatch != nil {
			changed, err := s.beforePatch(len(s.calls), stored)
			if changed {
				bump(stored)
			}
			if err != nil {
				record(err.Error())
				return true, nil, err
			}
		}
		var patch map[string]any
		if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
			record("bad json")
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		rv, _, _ := unstructured.NestedString(patch, "metadata", "resourceVersion")
		if rv != "" && rv != stored.GetResourceVersion() {
			record("conflict")
			return true, nil, apierrors.NewConflict(gvrDeployments.GroupResource(), p.GetName(), errors.New("the object has been modified"))
		}
		merged := &unstructured.Unstructured{Object: mergePatch(stored.DeepCopy().Object, patch).(map[string]any)}
		if s.webhook != nil {
			s.webhook(merged)
		}
		if len(p.PatchOptions.DryRun) == 0 {
			bump(merged)
			s.objects[key] = merged.DeepCopy()
		}
		record("ok")
		return true, merged, nil
	})
	return c
}

func (s *fakeServer) get(name string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects["guestbook/"+name].DeepCopy()
}

func deployment(name, uid string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := object(uid, labels, annotations)
	u.SetName(name)
	return u
}

func planFor(live *unstructured.Unstructured, opts plan.Options) plan.Plan {
	return plan.Build(labelSettings, plan.Target{
		Instance:        "guestbook",
		Ref:             argocd.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: live.GetNamespace(), Name: live.GetName()},
		Labels:          live.GetLabels(),
		Annotations:     live.GetAnnotations(),
		RequiresPruning: true,
	}, opts)
}

func item(live *unstructured.Unstructured, opts plan.Options) Item {
	return Item{
		Mapping: deployments, Object: live, Plan: planFor(live, opts),
		Replan: func(fresh *unstructured.Unstructured) plan.Plan { return planFor(fresh, opts) },
	}
}

func tracked(name string) *unstructured.Unstructured {
	return deployment(name, "uid-"+name, map[string]string{keyInstance: "guestbook", "app": name}, map[string]string{"note": "keep me"})
}

func TestRunApplies(t *testing.T) {
	live := tracked("ui")
	s := newFakeServer(live)
	results := Run(context.Background(), s.client(), []Item{item(live, plan.Options{})}, nil, Options{})

	r := results[0]
	if r.Err != nil || !r.Applied || r.Attempts != 1 || r.ResourceVersion != "101" || r.Refusal != nil {
		t.Fatalf("result = %+v", r)
	}
	if got := strs(r.Changes); !slices.Equal(got, []string{`label "app.kubernetes.io/instance": "guestbook" -> <absent>`}) {
		t.Errorf("changes = %q", got)
	}
	if len(s.calls) != 1 {
		t.Fatalf("patches = %d, want 1", len(s.calls))
	}
	c := s.calls[0]
	if c.body != `{"metadata":{"labels":{"app.kubernetes.io/instance":null},"resourceVersion":"100"}}` {
		t.Errorf("patch body = %s", c.body)
	}
	if c.opts.FieldManager != "unprune" || len(c.opts.DryRun) != 0 {
		t.Errorf("patch options = %+v", c.opts)
	}
	after := s.get("ui")
	if _, has := after.GetLabels()[keyInstance]; has || after.GetLabels()["app"] != "ui" || after.GetAnnotations()["note"] != "keep me" {
		t.Errorf("object after = labels %v, annotations %v", after.GetLabels(), after.GetAnnotations())
	}
}

func TestRunDryRun(t *testing.T) {
	live := tracked("ui")
	s := newFakeServer(live)
	results := Run(context.Background(), s.client(), []Item{item(live, plan.Options{})}, nil, Options{DryRun: true})
	r := results[0]
	if r.Err != nil || !r.Applied || r.ResourceVersion != "" {
		t.Fatalf("result = %+v", r)
	}
	if len(s.calls) != 1 || !slices.Equal(s.calls[0].opts.DryRun, []string{metav1.DryRunAll}) {
		t.Fatalf("calls = %+v, want one with dryRun=All", s.calls)
	}
	if after := s.get("ui"); after.GetLabels()[keyInstance] != "guestbook" || after.GetResourceVersion() != "100" {
		t.Errorf("a dry run changed the object: %v", after.Object["metadata"])
	}
}

func TestRunSkipsRefusedAndDonePlans(t *testing.T) {
	owned := tracked("owned")
	owned.SetOwnerReferences([]metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", APIVersion: "apps/v1", UID: "x"}})
	ownedItem := item(owned, plan.Options{})
	ownedItem.Plan = plan.Build(labelSettings, plan.Target{Instance: "guestbook",
		Ref:    argocd.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "owned"},
		Labels: owned.GetLabels(), OwnerReferences: []string{"ReplicaSet/rs"}, RequiresPruning: true}, plan.Options{})
	released := deployment("released", "uid-r", map[string]string{"app": "released"}, nil)
	releasedItem := item(released, plan.Options{})
	releasedItem.Plan = plan.Build(labelSettings, plan.Target{Instance: "guestbook",
		Ref: argocd.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "released"}}, plan.Options{})

	s := newFakeServer(owned, released)
	results := Run(context.Background(), s.client(), []Item{ownedItem, releasedItem}, nil, Options{})
	if len(s.calls) != 0 {
		t.Errorf("patched %d times, want none", len(s.calls))
	}
	if r := results[0]; r.Applied || r.Err != nil || r.Refusal == nil || r.Refusal.Code != plan.RefuseHasOwner {
		t.Errorf("refused item result = %+v", r)
	}
	if r := results[1]; r.Applied || r.Err != nil || r.Refusal != nil || len(r.Changes) != 0 {
		t.Errorf("done item result = %+v", r)
	}
}

func TestRunConflictReplans(t *testing.T) {
	tests := []struct {
		name string
		// other is what another writer does to the object before unprune's first patch.
		other func(*unstructured.Unstructured)
		// replanNotPruning re-plans as if the app no longer listed the object as requiring pruning.
		replanNotPruning bool

		wantApplied  bool
		wantAttempts int
		wantRefusal  plan.RefusalCode
		wantChanges  []string
		wantPatches  []string // results of the patch calls
		check        func(t *testing.T, after *unstructured.Unstructured)
	}{
		{
			name: "someone added an annotation: re-planned and patched, their change kept",
			other: func(u *unstructured.Unstructured) {
				a := u.GetAnnotations()
				a["someone"] = "else"
				u.SetAnnotations(a)
			},
			wantApplied:  true,
			wantAttempts: 2,
			wantChanges:  []string{`label "app.kubernetes.io/instance": "guestbook" -> <absent>`},
			wantPatches:  []string{"conflict", "ok"},
			check: func(t *testing.T, after *unstructured.Unstructured) {
				if after.GetAnnotations()["someone"] != "else" || after.GetLabels()[keyInstance] != "" {
					t.Errorf("after = %v", after.Object["metadata"])
				}
			},
		},
		{
			// The re-plan sees requiresPruning false, so plan.Build calls the object done; this
			// tests how Run handles a re-plan with nothing left to change.
			name: "someone released it already: nothing left to do",
			other: func(u *unstructured.Unstructured) {
				u.SetLabels(map[string]string{"app": "ui"})
			},
			replanNotPruning: true,
			wantAttempts:     1,
			wantPatches:      []string{"conflict"},
		},
		{
			name: "someone moved it to another app: refused",
			other: func(u *unstructured.Unstructured) {
				u.SetLabels(map[string]string{keyInstance: "other"})
			},
			wantAttempts: 1,
			wantRefusal:  plan.RefuseOtherOwner,
			wantPatches:  []string{"conflict"},
			check: func(t *testing.T, after *unstructured.Unstructured) {
				if after.GetLabels()[keyInstance] != "other" {
					t.Errorf("the other app's label was touched: %v", after.GetLabels())
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := tracked("ui")
			s := newFakeServer(live)
			s.beforePatch = func(call int, stored *unstructured.Unstructured) (bool, error) {
				if call == 0 {
					tt.other(stored)
					return true, nil
				}
				return false, nil
			}
			it := item(live, plan.Options{})
			if tt.replanNotPruning {
				it.Replan = func(fresh *unstructured.Unstructured) plan.Plan {
					p := planFor(fresh, plan.Options{})
					p.Target.RequiresPruning = false
					return plan.Build(labelSettings, p.Target, plan.Options{})
				}
			}
			r := Run(context.Background(), s.client(), []Item{it}, nil, Options{})[0]
			if r.Err != nil {
				t.Fatalf("error: %v", r.Err)
			}
			if r.Applied != tt.wantApplied || r.Attempts != tt.wantAttempts {
				t.Errorf("applied %v after %d attempts, want %v after %d", r.Applied, r.Attempts, tt.wantApplied, tt.wantAttempts)
			}
			var code plan.RefusalCode
			if r.Refusal != nil {
				code = r.Refusal.Code
			}
			if code != tt.wantRefusal {
				t.Errorf("refusal = %q, want %q", code, tt.wantRefusal)
			}
			if got := strs(r.Changes); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes = %q, want %q", got, tt.wantChanges)
			}
			var results []string
			for _, c := range s.calls {
				results = append(results, c.result)
			}
			if !slices.Equal(results, tt.wantPatches) {
				t.Errorf("patch calls = %q, want %q", results, tt.wantPatches)
			}
			if len(s.calls) == 2 && !strings.Contains(s.calls[1].body, `"resourceVersion":"101"`) {
				t.Errorf("the retry does not carry the fresh resourceVersion: %s", s.calls[1].body)
			}
			if tt.check != nil {
				tt.check(t, s.get("ui"))
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(s *fakeServer)
		attempts    int
		wantErr     string // substring
		wantPatches int
	}{
		{
			name: "conflicts every time: gives up after the attempts",
			setup: func(s *fakeServer) {
				s.beforePatch = func(int, *unstructured.Unstructured) (bool, error) { return true, nil }
			},
			wantErr:     "the object kept changing (3 attempts); nothing was overwritten, run again",
			wantPatches: 3,
		},
		{
			name: "conflicts every time, 2 attempts",
			setup: func(s *fakeServer) {
				s.beforePatch = func(int, *unstructured.Unstructured) (bool, error) { return true, nil }
			},
			attempts:    2,
			wantErr:     "(2 attempts)",
			wantPatches: 2,
		},
		{
			name: "a webhook puts the label back",
			setup: func(s *fakeServer) {
				s.webhook = func(u *unstructured.Unstructured) {
					l := u.GetLabels()
					l[keyInstance] = "guestbook"
					u.SetLabels(l)
				}
			},
			wantErr:     `the API server accepted the patch but the result differs (an admission webhook may have changed it): [label app.kubernetes.io/instance is still "guestbook"]`,
			wantPatches: 1,
		},
		{
			name: "forbidden",
			setup: func(s *fakeServer) {
				s.beforePatch = func(int, *unstructured.Unstructured) (bool, error) {
					return false, apierrors.NewForbidden(gvrDeployments.GroupResource(), "ui", errors.New("RBAC"))
				}
			},
			wantErr:     "forbidden: your user may not patch this object",
			wantPatches: 1,
		},
		{
			name: "rejected by admission",
			setup: func(s *fakeServer) {
				s.beforePatch = func(int, *unstructured.Unstructured) (bool, error) {
					return false, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "ui", nil)
				}
			},
			wantErr:     "the API server (or an admission policy) rejected the patch; nothing was changed",
			wantPatches: 1,
		},
		{
			name: "gone",
			setup: func(s *fakeServer) {
				s.objects = map[string]*unstructured.Unstructured{}
			},
			wantErr:     "the object is gone",
			wantPatches: 1,
		},
		{
			name: "deleted and recreated during the run",
			setup: func(s *fakeServer) {
				s.beforePatch = func(call int, _ *unstructured.Unstructured) (bool, error) { return call == 0, nil }
				s.replaceOnGet = func(u *unstructured.Unstructured) *unstructured.Unstructured {
					n := u.DeepCopy()
					n.SetUID("uid-new")
					return n
				}
			},
			wantErr:     "the object was deleted and recreated (uid uid-new, was uid-ui) while unprune worked; run again",
			wantPatches: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := tracked("ui")
			s := newFakeServer(live)
			tt.setup(s)
			r := Run(context.Background(), s.client(), []Item{item(live, plan.Options{})}, nil, Options{Attempts: tt.attempts})[0]
			if r.Applied {
				t.Errorf("applied")
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want %q", r.Err, tt.wantErr)
			}
			if len(s.calls) != tt.wantPatches {
				t.Errorf("patches = %d, want %d", len(s.calls), tt.wantPatches)
			}
		})
	}
}

func TestRunManyWithJournal(t *testing.T) {
	var objs []*unstructured.Unstructured
	var items []Item
	j := journal.New("detach", "untrack")
	j.Application = &journal.AppRef{Namespace: "argocd", Name: "guestbook"}
	for i := range 20 {
		live := tracked(fmt.Sprintf("d%02d", i))
		objs = append(objs, live)
		it := item(live, plan.Options{})
		items = append(items, it)
		j.Entries = append(j.Entries, journal.NewEntry(ObjectRef(deployments, live), it.Plan.Changes...))
	}
	s := newFakeServer(objs...)
	// d05 conflicts once (re-planned), d07 is forbidden.
	s.beforePatch = func(call int, stored *unstructured.Unstructured) (bool, error) {
		switch stored.GetName() {
		case "d05":
			if stored.GetResourceVersion() == "100" {
				a := stored.GetAnnotations()
				a["someone"] = "else"
				stored.SetAnnotations(a)
				return true, nil
			}
		case "d07":
			return false, apierrors.NewForbidden(gvrDeployments.GroupResource(), "d07", errors.New("RBAC"))
		}
		return false, nil
	}
	clock := func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	store := journal.NewStore(t.TempDir(), clock)
	rec, err := store.Begin(j)
	if err != nil {
		t.Fatal(err)
	}
	results := Run(context.Background(), s.client(), items, rec, Options{Workers: 4})

	saved, err := store.Load(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Item != i {
			t.Errorf("result %d has Item %d", i, r.Item)
		}
		e := saved.Entries[i]
		switch e.Object.Name {
		case "d07":
			if r.Err == nil || e.State != journal.StateFailed || !strings.Contains(e.Error, "forbidden") {
				t.Errorf("d07: result %+v, entry %+v", r, e)
			}
		case "d05":
			if !r.Applied || r.Attempts != 2 || e.State != journal.StateApplied || e.Object.ResourceVersion != "101" || e.AppliedResourceVersion != "102" {
				t.Errorf("d05: result %+v, entry %+v", r, e)
			}
		default:
			if !r.Applied || r.Attempts != 1 || e.State != journal.StateApplied || e.AppliedResourceVersion != "101" {
				t.Errorf("%s: result %+v, entry %+v", e.Object.Name, r, e)
			}
		}
	}
	counts := saved.Counts()
	if counts[journal.StateApplied] != 19 || counts[journal.StateFailed] != 1 {
		t.Errorf("journal counts = %v", counts)
	}
}

func TestUndo(t *testing.T) {
	// ui was detached and is still as unprune left it; worker was changed by someone since;
	// gone was deleted; done was undone before; recreated has a new UID.
	ui := deployment("ui", "uid-ui", map[string]string{"app": "ui"}, nil)
	worker := deployment("worker", "uid-worker", map[string]string{keyInstance: "other"}, nil)
	recreated := deployment("recreated", "uid-new", map[string]string{"app": "recreated"}, nil)
	s := newFakeServer(ui, worker, recreated)

	entry := func(name, uid string, state journal.State) journal.Entry {
		e := journal.NewEntry(journal.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
			Namespace: "guestbook", Name: name, UID: uid}, journal.Removal(journal.FieldLabel, keyInstance, "guestbook"))
		e.State = state
		return e
	}
	j := journal.New("detach", "untrack")
	j.Entries = []journal.Entry{
		entry("ui", "uid-ui", journal.StateApplied),
		entry("worker", "uid-worker", journal.StateApplied),
		entry("gone", "uid-gone", journal.StateApplied),
		entry("done", "uid-done", journal.StateUndone),
		entry("recreated", "uid-recreated", journal.StateApplied),
	}
	store := journal.NewStore(t.TempDir(), nil)

	t.Run("preview", func(t *testing.T) {
		rec, err := store.Begin(j.Clone())
		if err != nil {
			t.Fatal(err)
		}
		results := Undo(context.Background(), s.client(), rec, UndoPreview)
		if r := results[0]; r.Err != nil || len(r.Restored) != 1 || len(r.Refused) != 0 {
			t.Errorf("ui = %+v", r)
		}
		if r := results[1]; len(r.Refused) != 1 {
			t.Errorf("worker = %+v, want its changed key refused", r)
		}
		if len(s.calls) != 0 {
			t.Errorf("a preview sent patches: %+v", s.calls)
		}
		if got := rec.Snapshot().Counts()[journal.StateUndone]; got != 1 {
			t.Errorf("a preview marked entries undone: %d undone", got)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		rec, err := store.Begin(j.Clone())
		if err != nil {
			t.Fatal(err)
		}
		results := Undo(context.Background(), s.client(), rec, UndoDryRun)
		if r := results[0]; r.Err != nil || len(r.Restored) != 1 || len(r.Refused) != 0 {
			t.Errorf("ui = %+v", r)
		}
		if len(s.calls) != 1 || !slices.Equal(s.calls[0].opts.DryRun, []string{metav1.DryRunAll}) {
			t.Errorf("calls = %+v, want one dry run", s.calls)
		}
		if got := rec.Snapshot().Counts()[journal.StateUndone]; got != 1 {
			t.Errorf("a dry run marked entries undone: %d undone", got)
		}
		if s.get("ui").GetLabels()[keyInstance] != "" {
			t.Errorf("a dry run restored the label")
		}
		s.calls = nil
	})

	rec, err := store.Begin(j.Clone())
	if err != nil {
		t.Fatal(err)
	}
	results := Undo(context.Background(), s.client(), rec, UndoApply)
	want := []struct {
		object   string
		restored []string
		refused  string // substring
		skipped  string
		state    journal.State
	}{
		{object: "apps/v1/deployments guestbook/ui", restored: []string{`label "app.kubernetes.io/instance": <absent> -> "guestbook"`}, state: journal.StateUndone},
		{object: "apps/v1/deployments guestbook/worker", refused: `label app.kubernetes.io/instance is now "other"`, state: journal.StateApplied},
		{object: "apps/v1/deployments guestbook/gone", refused: "the object no longer exists", state: journal.StateApplied},
		{object: "apps/v1/deployments guestbook/done", skipped: "already undone", state: journal.StateUndone},
		{object: "apps/v1/deployments guestbook/recreated", refused: "the object was recreated (uid uid-new, the journal recorded uid-recreated)", state: journal.StateApplied},
	}
	snap := rec.Snapshot()
	for i, w := range want {
		r := results[i]
		if r.Err != nil {
			t.Errorf("%s: error %v", w.object, r.Err)
		}
		if r.Entry != i || r.Object != w.object {
			t.Errorf("result %d = entry %d, object %q; want %q", i, r.Entry, r.Object, w.object)
		}
		if got := strs(r.Restored); !slices.Equal(got, w.restored) {
			t.Errorf("%s: restored %q, want %q", w.object, got, w.restored)
		}
		if w.refused == "" && len(r.Refused) > 0 || w.refused != "" && (len(r.Refused) != 1 || !strings.Contains(r.Refused[0], w.refused)) {
			t.Errorf("%s: refused %q, want %q", w.object, r.Refused, w.refused)
		}
		if r.Skipped != w.skipped {
			t.Errorf("%s: skipped %q, want %q", w.object, r.Skipped, w.skipped)
		}
		if snap.Entries[i].State != w.state {
			t.Errorf("%s: journal state %s, want %s", w.object, snap.Entries[i].State, w.state)
		}
	}
	if got := s.get("ui").GetLabels(); got[keyInstance] != "guestbook" || got["app"] != "ui" {
		t.Errorf("ui labels after undo = %v", got)
	}
	if got := s.get("worker").GetLabels(); got[keyInstance] != "other" {
		t.Errorf("worker labels after undo = %v: someone else's value was overwritten", got)
	}
	if len(s.calls) != 1 || s.calls[0].name != "ui" {
		t.Errorf("patched %+v, want only ui", s.calls)
	}
}

// A patch the API server refused never changed the object: the journal must not claim it did, or
// undo would "restore" keys that someone else removed in the meantime.
func TestRunJournalRecordsNothingForRejectedPatches(t *testing.T) {
	live := tracked("ui")
	s := newFakeServer(live)
	s.beforePatch = func(call int, stored *unstructured.Unstructured) (bool, error) {
		if call == 0 {
			// Someone else released the object and gave it to another app before unprune's patch.
			stored.SetLabels(map[string]string{keyInstance: "other"})
			return true, nil
		}
		return false, nil
	}
	it := item(live, plan.Options{})
	j := journal.New("detach", "untrack")
	j.Entries = append(j.Entries, journal.NewEntry(ObjectRef(deployments, live), it.Plan.Changes...))
	rec, err := journal.NewStore(t.TempDir(), nil).Begin(j)
	if err != nil {
		t.Fatal(err)
	}
	r := Run(context.Background(), s.client(), []Item{it}, rec, Options{})[0]
	if r.Applied || r.Refusal == nil {
		t.Fatalf("result = %+v, want a refusal after the conflict", r)
	}
	got := rec.Snapshot().Entries[0]
	if got.State != journal.StateFailed || len(got.Changes) != 0 {
		t.Fatalf("journal entry = state %s, changes %v; want failed with no changes", got.State, got.Changes)
	}
	for _, u := range Undo(context.Background(), s.client(), rec, UndoApply) {
		if len(u.Restored) != 0 {
			t.Fatalf("undo restored %v on an object unprune never changed", u.Restored)
		}
	}
	if l := s.get("ui").GetLabels()[keyInstance]; l != "other" {
		t.Fatalf("label = %q after undo, want the other app's %q", l, "other")
	}
}
