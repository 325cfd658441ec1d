package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/progress"
)

// Apply carries a planned run as far as mode says: nothing more for a preview; every patch with
// dryRun=All for a server dry run; for DryRunNone, a journal with every planned object (fsynced
// before the first patch), then the patches, each outcome recorded. A cancelled ctx (Ctrl-C) stops
// sending new patches at once; patches in flight finish and are recorded; the rest are marked not
// attempted.
func (e *Engine) Apply(ctx context.Context, run *Run, mode DryRun) error {
	run.Mode = mode.Mode()
	todo := run.planned()
	switch {
	case mode == DryRunClient || len(todo) == 0:
		return nil
	case mode == DryRunServer:
		e.patchAll(ctx, run, todo, true, noMarks{}, OutcomeDryRunAccepted)
		return nil
	}
	rec, err := e.startJournal(run, todo)
	if err != nil {
		return err
	}
	e.patchAll(ctx, run, todo, false, applyMarks{rec}, OutcomeApplied)
	if err := rec.Close(); err != nil {
		run.JournalErr = err
	}
	return nil
}

// startJournal writes the journal of a run with an entry per item to change, every one planned,
// fsynced before it returns: nothing is changed before it is on disk.
func (e *Engine) startJournal(run *Run, todo []*Item) (*journal.Recorder, error) {
	j := journal.New(run.Command, run.Strategy, e.ToolVersion)
	j.Rename = run.Renamed
	if e.ArgoCD != nil {
		j.ArgoCD = &journal.ArgoCDRef{Namespace: e.ArgoCD.Namespace(), TrackingMethod: string(e.Settings.Method),
			InstanceLabelKey: e.Settings.InstanceLabelKey, InstallationID: e.Settings.InstallationID,
			Cluster: j.AddCluster(e.ArgoCD.Cluster())}
	}
	for _, it := range todo {
		entry := journal.Entry{
			Cluster: j.AddCluster(it.Objects.Info()),
			Object:  objectRef(it.Ref, it.Live),
			Changes: it.Plan.Changes,
		}
		if it.App != nil {
			entry.Application = &journal.AppRef{Namespace: it.App.App.Namespace, Name: it.App.App.Name, Instance: it.App.Instance}
		}
		it.Entry = len(j.Entries)
		j.Entries = append(j.Entries, entry)
	}
	rec, err := e.Journals.Create(j)
	if err != nil {
		return nil, fmt.Errorf("write the journal (nothing was changed): %w", err)
	}
	run.Journal = rec.Path()
	return rec, nil
}

func (r *Run) planned() []*Item {
	var out []*Item
	for _, it := range r.Items {
		if it.Outcome == OutcomePlanned {
			out = append(out, it)
		}
	}
	return out
}

func objectRef(r cluster.Ref, live *cluster.Object) journal.ObjectRef {
	return journal.ObjectRef{Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind,
		Namespace: r.Namespace, Name: r.Name, UID: live.UID, ResourceVersion: live.ResourceVersion}
}

// marks records outcomes in a journal: a detach's own, or the journal an undo restores.
type marks interface {
	applied(it *Item, resourceVersion string) error
	failed(it *Item, why string, rejected bool) error
	skipped(it *Item, why string) error
	// replanned is called, and must be durable, before the re-planned patch is sent.
	replanned(it *Item, resourceVersion string) error
}

type noMarks struct{}

func (noMarks) applied(*Item, string) error      { return nil }
func (noMarks) failed(*Item, string, bool) error { return nil }
func (noMarks) skipped(*Item, string) error      { return nil }
func (noMarks) replanned(*Item, string) error    { return nil }

// applyMarks records a run in its own journal.
type applyMarks struct{ rec *journal.Recorder }

func (m applyMarks) applied(it *Item, rv string) error { return m.rec.MarkApplied(it.Entry, rv) }
func (m applyMarks) failed(it *Item, why string, rejected bool) error {
	return m.rec.MarkFailed(it.Entry, why, rejected)
}
func (m applyMarks) skipped(it *Item, why string) error { return m.rec.MarkSkipped(it.Entry, why) }
func (m applyMarks) replanned(it *Item, rv string) error {
	return m.rec.Replan(it.Entry, rv, it.Plan.Changes)
}

// patchAll patches items concurrently; ok is the outcome of a successful patch.
func (e *Engine) patchAll(ctx context.Context, run *Run, items []*Item, dryRun bool, rec marks, ok Outcome) {
	what := "patching"
	if dryRun {
		what = "dry-run patching"
	}
	step := progress.Start(ctx, what, len(items))
	defer step.Finish()
	// Patches already sent are not cut off by an interruption: they finish (within a grace period
	// that starts with the interruption) so that the journal says what really happened. The grace
	// must not start earlier: with a low --qps a patch waits in the client's rate limiter for longer
	// than that, and would fail without ever being sent.
	inFlight, cutOff := context.WithCancel(context.WithoutCancel(ctx))
	defer cutOff()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(e.grace(), cutOff) })
	defer stop()
	started := parallel.ForEachUntil(ctx, len(items), e.workers(), func(i int) {
		e.patchOne(inFlight, items[i], dryRun, rec, ok)
		step.Add(1)
	})
	for _, it := range items[started:] {
		run.Interrupted = true
		it.Outcome, it.Reason, it.Message = OutcomeNotAttempted, string(cluster.FailureCanceled), "interrupted before its patch was sent"
		if err := rec.skipped(it, it.Message); err != nil {
			run.JournalErr = errors.Join(run.JournalErr, err)
		}
	}
}

// patchOne sends one object's patch, re-reading and re-planning on a conflict, and records the
// outcome in the journal.
func (e *Engine) patchOne(ctx context.Context, it *Item, dryRun bool, rec marks, ok Outcome) {
	live, current := it.Live, it.Plan
	redact := redactorFor(current.Changes, live)
	// rejected stays true while every patch sent was refused by the API server (an API status):
	// then nothing of ours reached the object, whatever the journal entry planned.
	rejected := true
	var failure error
	for attempt := 1; ; attempt++ {
		it.Attempts = attempt
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
			it.Plan = current
			it.Outcome = ok
			if err := rec.applied(it, out.ResourceVersion); err != nil {
				it.Message = "patched, but the journal could not record it: " + err.Error()
			}
			return
		}
		if !cluster.IsConflict(err) || attempt >= e.attempts() || it.replan == nil {
			failure = describePatchError(err, attempt, it.Objects.Info())
			break
		}
		// Someone wrote the object since it was read: read it again and decide again, rather than
		// overwrite their change or apply a plan made from stale metadata.
		fresh, gerr := it.Objects.Get(ctx, it.Ref)
		switch {
		case cluster.IsNotFound(gerr):
			e.skip(it, rec, OutcomeGone, "the object was deleted while unprune worked")
			return
		case gerr != nil:
			failure = fmt.Errorf("re-read after a conflict: %w", gerr)
		case fresh.UID != live.UID:
			failure = fmt.Errorf("the object was deleted and recreated (uid %s, was %s) while unprune worked; run again", fresh.UID, live.UID)
		}
		if failure != nil {
			break
		}
		live = fresh
		it.Live = fresh
		current = it.replan(fresh)
		if current.Refusal == nil && len(current.Changes) == 0 {
			it.Plan = current
			if current.Released {
				it.Reason = ReasonAlreadyReleased
			}
			e.skip(it, rec, OutcomeUnchanged, "nothing left to change after a conflict: released by someone else meanwhile")
			return
		}
		if current.Refusal != nil {
			it.Plan = current
			it.Outcome, it.Reason, it.Message = OutcomeRefused, string(current.Refusal.Code), current.Refusal.Message
			_ = rec.skipped(it, "refused after a conflict: "+current.Refusal.Message)
			return
		}
		it.Plan = current
		if err := rec.replanned(it, fresh.ResourceVersion); err != nil {
			failure = fmt.Errorf("record the re-planned changes in the journal (nothing patched): %w", err)
			break
		}
		redact = append(redact, redactorFor(current.Changes, fresh)...)
	}
	it.Plan = current
	it.Outcome, it.Reason, it.Message = OutcomeFailed, string(cluster.Classify(failure)), redact.String(failure.Error())
	if err := rec.failed(it, it.Message, rejected); err != nil {
		it.Message += "; the journal could not record it: " + err.Error()
	}
}

func (e *Engine) skip(it *Item, rec marks, outcome Outcome, why string) {
	it.Outcome, it.Message = outcome, why
	_ = rec.skipped(it, why)
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
