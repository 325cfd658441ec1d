package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/progress"
)

// startJournal writes the journal of a plan with an entry per item to change (entry k for todo[k]),
// every one planned, fsynced before it returns: nothing is changed before it is on disk.
func (e *Engine) startJournal(p *Planned, todo []int) (*journal.Recorder, error) {
	j := journal.New(p.Command, p.Strategy, e.ToolVersion)
	j.Rename = p.Renamed
	if e.ArgoCD != nil {
		j.ArgoCD = &journal.ArgoCDRef{Namespace: e.ArgoCD.Namespace(), TrackingMethod: string(e.Settings.Method),
			InstanceLabelKey: e.Settings.InstanceLabelKey, InstallationID: e.Settings.InstallationID,
			Cluster: j.AddCluster(e.ArgoCD.Cluster())}
	}
	for _, i := range todo {
		it := p.Items[i]
		entry := journal.Entry{
			Cluster: j.AddCluster(it.Objects.Info()),
			Object:  objectRef(it.Ref, it.Live),
			Changes: it.Plan.Changes,
		}
		if it.App != nil {
			entry.Application = &journal.AppRef{Namespace: it.App.App.Namespace, Name: it.App.App.Name, Instance: it.App.Instance}
		}
		j.Entries = append(j.Entries, entry)
	}
	rec, err := e.Journals.Create(j)
	if err != nil {
		return nil, fmt.Errorf("write the journal (nothing was changed): %w", err)
	}
	return rec, nil
}

// planned are the indexes of the items planned to change.
func (p *Planned) planned() []int {
	var out []int
	for i, it := range p.Items {
		if it.Outcome == OutcomePlanned {
			out = append(out, i)
		}
	}
	return out
}

func objectRef(r cluster.Ref, live *cluster.Object) journal.ObjectRef {
	return journal.ObjectRef{Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind,
		Namespace: r.Namespace, Name: r.Name, UID: live.UID, ResourceVersion: live.ResourceVersion}
}

// marks records outcomes in a journal: a run's own, or the journal an undo restores. k is the
// item's entry in the run's own journal (-1 when it has none).
type marks interface {
	applied(k int, it *Item, done plan.Plan, resourceVersion string) error
	failed(k int, it *Item, why string, rejected bool) error
	skipped(k int, it *Item, why string) error
	// replanned is called, and must be durable, before the re-planned patch is sent.
	replanned(k int, it *Item, next plan.Plan, resourceVersion string) error
}

type noMarks struct{}

func (noMarks) applied(int, *Item, plan.Plan, string) error   { return nil }
func (noMarks) failed(int, *Item, string, bool) error         { return nil }
func (noMarks) skipped(int, *Item, string) error              { return nil }
func (noMarks) replanned(int, *Item, plan.Plan, string) error { return nil }

// applyMarks records a run in its own journal, whose entry k is the k-th item sent.
type applyMarks struct{ rec *journal.Recorder }

func (m applyMarks) applied(k int, _ *Item, _ plan.Plan, rv string) error {
	return m.rec.MarkApplied(k, rv)
}
func (m applyMarks) failed(k int, _ *Item, why string, rejected bool) error {
	return m.rec.MarkFailed(k, why, rejected)
}
func (m applyMarks) skipped(k int, _ *Item, why string) error { return m.rec.MarkSkipped(k, why) }
func (m applyMarks) replanned(k int, _ *Item, next plan.Plan, rv string) error {
	return m.rec.Replan(k, rv, next.Changes)
}

// patchAll patches the items todo names concurrently and records each result in done, the one
// place a sent item's outcome is written; entries[k] is todo[k]'s entry in the run's own journal,
// ok the outcome of a successful patch.
//
// rebased, when not nil, holds for an item the object as an earlier step of the run left it (its
// first phase patched it): the item is planned again on it, without a read, so that its patch is
// conditional on that version.
func (e *Engine) patchAll(ctx context.Context, p *Planned, done *Applied, todo, entries []int, rebased map[int]*cluster.Object, dryRun bool, rec marks, ok Outcome) {
	what := "patching"
	if dryRun {
		what = "dry-run patching"
	}
	step := progress.Start(ctx, what, len(todo))
	defer step.Finish()
	// Patches already sent are not cut off by an interruption: they finish (within a grace period
	// that starts with the interruption) so that the journal says what really happened. The grace
	// must not start earlier: with a low QPS a patch waits in the client's rate limiter for longer
	// than that, and would fail without ever being sent.
	inFlight, cutOff := context.WithCancel(context.WithoutCancel(ctx))
	defer cutOff()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(e.grace(), cutOff) })
	defer stop()
	results := make([]ItemResult, len(todo))
	started := parallel.ForEachUntil(ctx, len(todo), e.workers(), func(k int) {
		results[k] = e.patchOne(inFlight, p.planner, entryOf(entries, k), p.Items[todo[k]], rebased[todo[k]], dryRun, rec, ok)
		step.Add(1)
	})
	for k := started; k < len(todo); k++ {
		done.Interrupted = true
		it := p.Items[todo[k]]
		results[k] = ItemResult{Decision: Decision{OutcomeNotAttempted, string(cluster.FailureCanceled), "interrupted before its patch was sent"}, Plan: it.Plan}
		if err := rec.skipped(entryOf(entries, k), it, results[k].Message); err != nil {
			done.JournalErr = errors.Join(done.JournalErr, err)
		}
	}
	for k, i := range todo {
		done.Items[i] = results[k]
	}
}

func entryOf(entries []int, k int) int {
	if entries == nil {
		return -1
	}
	return entries[k]
}

// patchOne sends one object's patch, re-reading and re-planning with planner on a conflict, records
// the outcome in the journal and returns it. rebased, when not nil, is the object as an earlier
// step of the run left it.
func (e *Engine) patchOne(ctx context.Context, planner Planner, k int, it *Item, rebased *cluster.Object, dryRun bool, rec marks, ok Outcome) ItemResult {
	live, current := it.Live, it.Plan
	if rebased != nil && planner != nil {
		fresh, next, r, err := e.replanOn(k, it, live, rebased, planner, rec)
		if r != nil {
			return *r
		}
		if err != nil {
			return ItemResult{Decision: Decision{OutcomeFailed, string(cluster.Classify(err)), err.Error()}, Plan: current}
		}
		live, current = fresh, next
	}
	redact := redactorFor(current.Changes, live)
	// rejected stays true while every patch sent was refused by the API server (an API status):
	// then nothing of ours reached the object, whatever the journal entry planned.
	rejected := true
	var failure error
	attempt := 1
	for ; ; attempt++ {
		body, err := MergePatch(live.ResourceVersion, current.Changes)
		if err != nil {
			failure = err
			break
		}
		out, err := it.Objects.Patch(ctx, it.Ref, body, dryRun)
		if err == nil || cluster.Classify(err) == cluster.FailureUnreachable || cluster.Classify(err) == cluster.FailureTimeout {
			rejected = false
		}
		if err == nil {
			if bad := Mismatches(out, current.Changes); len(bad) > 0 {
				failure = fmt.Errorf("the API server accepted the patch but the result differs (an admission webhook may have changed it): %v", bad)
				break
			}
			r := ItemResult{Decision: Decision{Outcome: ok}, Attempts: attempt, Plan: current, Object: out}
			if err := rec.applied(k, it, current, out.ResourceVersion); err != nil {
				r.Message = "patched, but the journal could not record it: " + err.Error()
			}
			return r
		}
		if !cluster.IsConflict(err) || attempt >= e.attempts() || planner == nil {
			failure = describePatchError(err, attempt, it.Objects.Info())
			break
		}
		// Someone wrote the object since it was read: read it again and decide again, rather than
		// overwrite their change or apply a plan made from stale metadata.
		fresh, next, r, err := e.replan(ctx, planner, k, it, live, current, rec)
		if r != nil {
			r.Attempts = attempt
			return *r
		}
		if err != nil {
			failure = err
			break
		}
		live, current = fresh, next
		redact = append(redact, redactorFor(current.Changes, fresh)...)
	}
	r := ItemResult{Decision: Decision{OutcomeFailed, string(cluster.Classify(failure)), redact.String(failure.Error())}, Attempts: attempt, Plan: current}
	if err := rec.failed(k, it, r.Message, rejected); err != nil {
		r.Message += "; the journal could not record it: " + err.Error()
	}
	return r
}

// replan reads an object again after a conflict and plans it anew (current is the plan that met the
// conflict). It returns the fresh object and its plan to send (recorded in the journal first), or
// the item's final result when nothing is left to send, or why the patch cannot go on.
func (e *Engine) replan(ctx context.Context, planner Planner, k int, it *Item, live *cluster.Object, current plan.Plan, rec marks) (*cluster.Object, plan.Plan, *ItemResult, error) {
	fresh, err := it.Objects.Get(ctx, it.Ref)
	switch {
	case cluster.IsNotFound(err):
		return nil, plan.Plan{}, skip(k, it, rec, current, Decision{Outcome: OutcomeGone, Message: "the object was deleted while unprune worked"}, ""), nil
	case err != nil:
		return nil, plan.Plan{}, nil, fmt.Errorf("re-read after a conflict: %w", err)
	}
	return e.replanOn(k, it, live, fresh, planner, rec)
}

// replanOn plans an item anew on the object as it is now (fresh), live being the object as it was
// planned from, and records the new changes in the journal before they are sent when they differ.
func (e *Engine) replanOn(k int, it *Item, live, fresh *cluster.Object, planner Planner, rec marks) (*cluster.Object, plan.Plan, *ItemResult, error) {
	if fresh.UID != live.UID {
		return nil, plan.Plan{}, nil, fmt.Errorf("the object was deleted and recreated (uid %s, was %s) while unprune worked; run again", fresh.UID, live.UID)
	}
	next := planner.Plan(it, fresh)
	switch {
	case next.Refusal != nil:
		d := Decision{OutcomeRefused, string(next.Refusal.Code), next.Refusal.Message}
		return nil, plan.Plan{}, skip(k, it, rec, next, d, "refused after a conflict: "+next.Refusal.Message), nil
	case len(next.Changes) == 0:
		d := Decision{Outcome: OutcomeUnchanged, Message: "nothing left to change after a conflict: released by someone else meanwhile"}
		if next.Released {
			d.Reason = ReasonAlreadyReleased
		}
		return nil, plan.Plan{}, skip(k, it, rec, next, d, ""), nil
	}
	if !sameChanges(next.Changes, it.Plan.Changes) {
		if err := rec.replanned(k, it, next, fresh.ResourceVersion); err != nil {
			return nil, plan.Plan{}, nil, fmt.Errorf("record the re-planned changes in the journal (nothing patched): %w", err)
		}
	}
	return fresh, next, nil, nil
}

// sameChanges reports whether two plans change the same keys the same way.
func sameChanges(a, b []journal.Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// skip is the result of an item left alone after a conflict, recorded as skipped (why, or the
// decision's message) in the journal.
func skip(k int, it *Item, rec marks, p plan.Plan, d Decision, why string) *ItemResult {
	if why == "" {
		why = d.Message
	}
	_ = rec.skipped(k, it, why)
	return &ItemResult{Decision: d, Plan: p}
}

// describePatchError says what a failed patch means for the user.
func describePatchError(err error, attempts int, where cluster.Info) error {
	switch cluster.Classify(err) {
	case cluster.FailureConflict:
		return fmt.Errorf("the object kept changing (%d attempts); nothing was overwritten, run again: %w", attempts, err)
	case cluster.FailureRBAC:
		return fmt.Errorf("forbidden: your user may not patch this object in cluster %s (check `kubectl auth can-i patch …`); nothing was changed: %w", where.Name, err)
	case cluster.FailureAdmission:
		return fmt.Errorf("an admission policy or webhook denied the patch; nothing was changed: %w", err)
	case cluster.FailureArgoCDDenied:
		return err
	case cluster.FailureNotFound:
		return fmt.Errorf("the object is gone: %w", err)
	case cluster.FailureInvalid:
		return fmt.Errorf("the API server rejected the patch; nothing was changed: %w", err)
	case cluster.FailureUnreachable, cluster.FailureTimeout:
		return cluster.Explain(err, "patch", where)
	}
	return err
}
