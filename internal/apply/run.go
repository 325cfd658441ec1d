package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
)

// Item is one object to patch.
type Item struct {
	Mapping *meta.RESTMapping
	// Object is the live object the plan was made from.
	Object *unstructured.Unstructured
	Plan   plan.Plan
	// Replan plans again from a freshly read object after a conflict.
	Replan func(live *unstructured.Unstructured) plan.Plan
}

// Options control a run.
type Options struct {
	// DryRun sends every patch with dryRun=All: the API server runs admission and validation and
	// returns the result, but persists nothing. No journal is written.
	DryRun bool
	// Workers bounds concurrent patches; the client's QPS/burst bound the request rate.
	Workers int
	// Attempts bounds conflict retries per object (re-read, re-plan, patch).
	Attempts int
	// Progress receives a line now and then when a run takes more than a second; nil for none.
	Progress io.Writer
}

// Result is what happened to one item.
type Result struct {
	Item     int
	Changes  []journal.Change // as finally applied (after any re-plan)
	Applied  bool             // the patch was persisted (or, in a dry run, accepted)
	Attempts int
	// ResourceVersion after the patch (empty for a dry run).
	ResourceVersion string
	Refusal         *plan.Refusal // a re-plan after a conflict refused the object
	Err             error
}

// Run patches every item whose plan has changes. rec, when not nil, holds one journal entry per item
// in the same order; entries are updated before a re-planned patch and marked after each patch.
func Run(ctx context.Context, dyn dynamic.Interface, items []Item, rec *journal.Recorder, opts Options) []Result {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	results := make([]Result, len(items))
	var done atomic.Int64
	stopProgress := progress(opts.Progress, len(items), &done, opts.DryRun)
	parallel.ForEach(len(items), opts.Workers, func(i int) {
		results[i] = patchOne(ctx, dyn, i, items[i], rec, opts)
		done.Add(1)
	})
	stopProgress()
	return results
}

func progress(w io.Writer, total int, done *atomic.Int64, dryRun bool) func() {
	if w == nil || total < 2 {
		return func() {}
	}
	verb := "patched"
	if dryRun {
		verb = "dry-run patched"
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				fmt.Fprintf(w, "%s %d/%d objects\n", verb, done.Load(), total)
			}
		}
	}()
	return func() { close(stop); <-finished }
}

func resourceInterface(dyn dynamic.Interface, m *meta.RESTMapping, namespace string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(namespace)
	}
	return dyn.Resource(m.Resource)
}

func patchOne(ctx context.Context, dyn dynamic.Interface, i int, it Item, rec *journal.Recorder, opts Options) Result {
	res := Result{Item: i, Changes: it.Plan.Changes}
	if it.Plan.Refusal != nil || len(it.Plan.Changes) == 0 {
		res.Refusal = it.Plan.Refusal
		return res
	}
	ri := resourceInterface(dyn, it.Mapping, it.Object.GetNamespace())
	live := it.Object
	current := it.Plan
	po := metav1.PatchOptions{FieldManager: FieldManager}
	if opts.DryRun {
		po.DryRun = []string{metav1.DryRunAll}
	}
	// rejected stays true while every patch sent was refused by the API server (a status error):
	// then nothing of ours reached the object, whatever the journal entry planned.
	rejected := true
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		res.Changes = current.Changes
		body, err := MergePatch(live.GetResourceVersion(), current.Changes)
		if err != nil {
			res.Err = err
			break
		}
		out, err := ri.Patch(ctx, live.GetName(), types.MergePatchType, body, po)
		var status apierrors.APIStatus
		if err == nil || !errors.As(err, &status) {
			rejected = false
		}
		if err == nil {
			if bad := Mismatches(out, current.Changes); len(bad) > 0 {
				res.Err = fmt.Errorf("the API server accepted the patch but the result differs (an admission webhook may have changed it): %v", bad)
				break
			}
			res.Applied = true
			if !opts.DryRun {
				res.ResourceVersion = out.GetResourceVersion()
			}
			break
		}
		if !apierrors.IsConflict(err) || attempt >= opts.Attempts || it.Replan == nil {
			res.Err = describePatchError(err, attempt)
			break
		}
		// Someone wrote the object since it was read: read it again and decide again, rather than
		// overwrite their change or apply a plan made from stale metadata.
		fresh, gerr := ri.Get(ctx, live.GetName(), metav1.GetOptions{})
		if gerr != nil {
			res.Err = fmt.Errorf("re-read after conflict: %w", gerr)
			break
		}
		if fresh.GetUID() != live.GetUID() {
			res.Err = fmt.Errorf("the object was deleted and recreated (uid %s, was %s) while unprune worked; run again", fresh.GetUID(), live.GetUID())
			break
		}
		live = fresh
		current = it.Replan(fresh)
		if current.Refusal != nil || len(current.Changes) == 0 {
			res.Refusal = current.Refusal
			res.Changes = current.Changes
			break
		}
		if rec != nil {
			obj := live
			changes := current.Changes
			if err := rec.Update(func(j *journal.Journal) error {
				j.Entries[i].Object.ResourceVersion = obj.GetResourceVersion()
				j.Entries[i].Changes = changes
				return nil
			}); err != nil {
				res.Err = fmt.Errorf("record re-planned changes in the journal (nothing patched): %w", err)
				break
			}
		}
	}
	if rec != nil {
		var jerr error
		if !res.Applied && rejected {
			// Record that nothing changed, so that undo never "restores" keys unprune did not
			// remove (someone else may have removed them in between).
			jerr = rec.Update(func(j *journal.Journal) error {
				j.Entries[i].Changes = []journal.Change{}
				return nil
			})
		}
		switch {
		case res.Applied:
			jerr = rec.MarkApplied(i, res.ResourceVersion)
		case res.Err != nil:
			jerr = errors.Join(jerr, rec.MarkFailed(i, res.Err))
		case res.Refusal != nil:
			jerr = errors.Join(jerr, rec.MarkFailed(i, res.Refusal))
		default:
			// A re-plan found nothing left to do: someone else released the object meanwhile.
			jerr = errors.Join(jerr, rec.MarkFailed(i, errors.New("nothing left to change after a conflict: released by someone else")))
		}
		if jerr != nil && res.Err == nil {
			res.Err = fmt.Errorf("patched, but the journal could not record it: %w", jerr)
		}
	}
	return res
}

func describePatchError(err error, attempts int) error {
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("the object kept changing (%d attempts); nothing was overwritten, run again: %w", attempts, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: your user may not patch this object (check `kubectl auth can-i patch …`); nothing was changed: %w", err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the object is gone: %w", err)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return fmt.Errorf("the API server (or an admission policy) rejected the patch; nothing was changed: %w", err)
	}
	return err
}
