package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/unprune/unprune/internal/journal"
)

// UndoResult is what undo did to one journal entry.
type UndoResult struct {
	Entry    int
	Object   string
	Restored []journal.Change // the inverse changes applied
	Already  []journal.Change // keys that already had the journal's "before" value
	Refused  []string         // why keys (or the whole entry) were left alone
	Err      error
	Skipped  string // why the entry was not looked at (never applied, already undone)
}

// UndoPlan decides, for one journal entry and the live object, which changes to reverse. A key is
// reversed only while it still holds exactly what unprune wrote; if someone has set it differently
// since, their value wins and the key is refused. An object whose UID differs is another object
// with the same name: nothing of it is touched.
func UndoPlan(e journal.Entry, live *unstructured.Unstructured) (restore, already []journal.Change, refused []string) {
	if string(live.GetUID()) != e.Object.UID {
		return nil, nil, []string{recreated(live, e)}
	}
	for _, c := range e.Changes {
		current := live.GetAnnotations()
		if c.Field == journal.FieldLabel {
			current = live.GetLabels()
		}
		v, has := current[c.Key]
		switch {
		case equal(v, has, c.After):
			restore = append(restore, c.Inverse())
		case equal(v, has, c.Before):
			already = append(already, c)
		default:
			refused = append(refused, fmt.Sprintf("%s %s is now %s, neither what unprune wrote (%s) nor what it found (%s): left as is",
				c.Field, c.Key, show(v, has), showPtr(c.After), showPtr(c.Before)))
		}
	}
	return restore, already, refused
}

func equal(v string, has bool, want *string) bool {
	if want == nil {
		return !has
	}
	return has && v == *want
}

func show(v string, has bool) string {
	if !has {
		return "absent"
	}
	return fmt.Sprintf("%q", v)
}

func showPtr(p *string) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *p)
}

// UndoMode is how far Undo goes.
type UndoMode int

const (
	// UndoPreview reads each object and decides, sending no patch.
	UndoPreview UndoMode = iota
	// UndoDryRun sends the patches with dryRun=All.
	UndoDryRun
	// UndoApply restores and marks the entries undone.
	UndoApply
)

// Undo reverses a journal's applied entries (and planned or failed ones, whose patch may have reached
// the API server before a crash), guarded by UID and by current values, and marks them undone.
func Undo(ctx context.Context, dyn dynamic.Interface, rec *journal.Recorder, mode UndoMode) []UndoResult {
	j := rec.Snapshot()
	results := make([]UndoResult, len(j.Entries))
	for i, e := range j.Entries {
		r := UndoResult{Entry: i, Object: e.Object.String()}
		if e.State == journal.StateUndone {
			r.Skipped = "already undone"
			results[i] = r
			continue
		}
		gvr := schema.GroupVersionResource{Group: e.Object.Group, Version: e.Object.Version, Resource: e.Object.Resource}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if e.Object.Namespace != "" {
			ri = dyn.Resource(gvr).Namespace(e.Object.Namespace)
		}
		r.Restored, r.Already, r.Refused, r.Err = undoOne(ctx, ri, e, mode)
		if r.Err == nil && len(r.Refused) == 0 && mode == UndoApply {
			if err := rec.MarkUndone(i); err != nil {
				r.Err = fmt.Errorf("restored, but the journal could not record it: %w", err)
			}
		}
		results[i] = r
	}
	return results
}

func undoOne(ctx context.Context, ri dynamic.ResourceInterface, e journal.Entry, mode UndoMode) (restored, already []journal.Change, refused []string, err error) {
	po := metav1.PatchOptions{FieldManager: FieldManager}
	if mode == UndoDryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	for attempt := 1; attempt <= 3; attempt++ {
		live, gerr := ri.Get(ctx, e.Object.Name, metav1.GetOptions{})
		if gerr != nil {
			if apierrors.IsNotFound(gerr) {
				return nil, nil, []string{"the object no longer exists"}, nil
			}
			return nil, nil, nil, fmt.Errorf("read %s: %w", e.Object, gerr)
		}
		restore, done, why := UndoPlan(e, live)
		if len(restore) == 0 || mode == UndoPreview {
			return restore, done, why, nil
		}
		body, merr := MergePatch(live.GetResourceVersion(), restore)
		if merr != nil {
			return nil, nil, nil, merr
		}
		out, perr := ri.Patch(ctx, e.Object.Name, types.MergePatchType, body, po)
		if apierrors.IsConflict(perr) {
			continue
		}
		if perr != nil {
			return nil, nil, nil, describePatchError(perr, attempt)
		}
		if bad := Mismatches(out, restore); len(bad) > 0 {
			return nil, nil, nil, fmt.Errorf("the API server accepted the patch but the result differs: %v", bad)
		}
		return restore, done, why, nil
	}
	return nil, nil, nil, fmt.Errorf("%s kept changing; nothing was overwritten, run undo again", e.Object)
}

func recreated(live *unstructured.Unstructured, e journal.Entry) string {
	return fmt.Sprintf("the object was recreated (uid %s, the journal recorded %s): it is not the object unprune changed", live.GetUID(), e.Object.UID)
}

// ObjectRef records a live object for the journal.
func ObjectRef(m *meta.RESTMapping, u *unstructured.Unstructured) journal.ObjectRef {
	return journal.ObjectRef{
		Group: m.Resource.Group, Version: m.Resource.Version, Resource: m.Resource.Resource,
		Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
	}
}
