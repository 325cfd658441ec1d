package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/verify"
)

// errDryRunSkip is what a write answers when a server dry run cannot judge it (it patches an
// Application that only a real create before it would have made).
var errDryRunSkip = errors.New("judged with an earlier step: a dry run leaves nothing for this step to write")

// Execute carries a change as far as mode says and returns what was done; the change is left as it
// is. A preview sends nothing. A server dry run sends every write with dryRun=All and runs no
// check: nothing changed for Argo CD to compare. To apply, the steps run in order and the run stops
// at the first step that fails; before the first write, the journal is written with every object
// planned (fsynced: nothing is changed before it is on disk). A step that lets an app delete runs
// only after the checks right before it passed, on comparisons that started after the last write.
// When a check fails after something was changed, the undo of the run's journal puts it back
// (Executed.Rollback); for a change that asks for it (a rename), when any step fails. A cancelled ctx (Ctrl-C) stops sending new patches at once; patches in
// flight finish and are recorded; the steps after are not attempted.
func (e *Engine) Execute(ctx context.Context, c *Change, mode DryRun) (*Executed, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	x := &Executed{Applied: c.Preview(), Steps: make([]StepResult, len(c.Steps)), Stopped: -1}
	for _, s := range c.Steps {
		x.kinds = append(x.kinds, s.Kind)
	}
	x.Mode = mode.Mode()
	if mode == DryRunClient || c.Refused() {
		// Refused as a whole: nothing is sent, and the report is the plan's.
		x.Mode = ModePreview
		return x, nil
	}
	r := &runner{e: e, c: c, x: x, dryRun: mode == DryRunServer, lastWrite: e.now(), passed: map[AppName]bool{}}
	if c.undoing != nil {
		r.rec, r.marks = c.undoing, undoMarks{c.undoing}
	}
	err := r.run(ctx)
	if c.undoing != nil && mode == DryRunNone {
		// Entries that needed nothing are undone too, so the journal says the undo is complete.
		for i, it := range c.Items {
			if x.Items[i].Outcome == OutcomeUnchanged && it.Objects != nil && len(x.Items[i].Plan.Notes) == 0 && it.Entry >= 0 {
				_ = c.undoing.MarkUndone(it.Entry)
			}
		}
	}
	if r.rec != nil {
		// Everything recorded is on disk now; the compaction into one document may run while the
		// caller reports.
		x.closeJournal = r.rec.CloseInBackground()
		if !e.CompactWhileReporting {
			x.WaitJournal()
		}
	}
	if err != nil {
		x.WaitJournal()
		return nil, err
	}
	failed := x.CheckFailed() || c.rollbackFailedStep && x.StepFailed()
	if mode == DryRunNone && failed && x.Wrote() && c.rollback && c.undoing == nil {
		// The undo reads the journal: it waits for the compacted file.
		x.WaitJournal()
		e.rollBack(ctx, c, x)
		if x.Rollback != nil {
			x.Rollback.WaitJournal()
		}
	}
	return x, nil
}

// WaitJournal waits until the run's journal is compacted into one document (with
// Engine.CompactWhileReporting, Execute returns before) and adds a failure to do so to JournalErr.
// Later calls do nothing.
func (x *Executed) WaitJournal() {
	if x.closeJournal == nil {
		return
	}
	wait := x.closeJournal
	x.closeJournal = nil
	if err := wait(); err != nil {
		x.JournalErr = errors.Join(x.JournalErr, err)
	}
}

// rollBack puts back what a run changed before a check (or a step) failed: the undo of its
// journal, carried out by the same rules (its own checks before anything that lets an app delete),
// reaching the clusters and the Argo CD the run reached.
func (e *Engine) rollBack(ctx context.Context, c *Change, x *Executed) {
	undo, err := e.reaching(c).undoJournal(context.WithoutCancel(ctx), x.Journal)
	if err != nil {
		x.RollbackErr = err
		return
	}
	x.RollbackChange = undo
	if x.Rollback, err = e.Execute(context.WithoutCancel(ctx), undo, DryRunNone); err != nil {
		x.RollbackErr = err
	}
}

// Refused reports a change that is all or nothing and has an object refused or unreadable.
func (c *Change) Refused() bool {
	if !c.AllOrNothing {
		return false
	}
	n := c.Counts()
	return n[OutcomeRefused]+n[OutcomeFailed] > 0
}

// runner carries out one change.
type runner struct {
	e      *Engine
	c      *Change
	x      *Executed
	dryRun bool
	rec    *journal.Recorder
	marks  marks
	// entries are, by item index, the items' entries in the run's own journal.
	entries map[int]int
	// lastWrite is when the last write ended: a check judges only comparisons started later.
	lastWrite time.Time
	// passed are the apps whose checks passed since the last write.
	passed map[AppName]bool
	// written are the row keys of the objects the last patch step changed.
	written map[string]bool
}

func (r *runner) run(ctx context.Context) error {
	for i, s := range r.c.Steps {
		if err := ctx.Err(); err != nil && !r.dryRun {
			r.stop(i, Decision{OutcomeNotAttempted, string(cluster.FailureCanceled), "interrupted before this step"})
			r.x.Interrupted = true
			return nil
		}
		if s.Writes() && !r.dryRun && r.rec == nil && r.c.sends(s) {
			if err := r.startJournal(); err != nil {
				return err
			}
		}
		var res StepResult
		switch s.Kind {
		case StepCheck:
			if r.dryRun {
				res = StepResult{Decision: Decision{Outcome: OutcomeUnchanged, Message: "not run in a dry run: nothing changed for Argo CD to compare"}}
				break
			}
			res = r.check(ctx, s)
			if res.Outcome == OutcomePassed {
				r.passed[s.App] = true
			}
		case StepPatch:
			res = r.patch(ctx, s)
		default:
			res = r.write(ctx, i, s)
		}
		r.x.Steps[i] = res
		if s.Writes() && res.Outcome.Changed() {
			r.lastWrite, r.passed = r.e.now(), map[AppName]bool{}
		}
		// A dry run judges every write, one failing or not: none depends on another persisting.
		if r.dryRun && !r.x.Interrupted {
			continue
		}
		if res.Outcome == OutcomeFailed || r.x.Interrupted {
			r.stop(i+1, Decision{OutcomeNotAttempted, "", "an earlier step did not succeed"})
			r.x.Stopped = i
			return nil
		}
	}
	return nil
}

// sends reports whether step s has anything to send: an Application write, or objects of its phase
// planned to change.
func (c *Change) sends(s *Step) bool {
	if s.Kind != StepPatch {
		return s.Writes()
	}
	for _, it := range c.Items {
		if it.Phase == s.Phase && it.Outcome == OutcomePlanned {
			return true
		}
	}
	return false
}

// stop marks the steps from i on not attempted.
func (r *runner) stop(i int, d Decision) {
	if r.x.Stopped < 0 && i < len(r.c.Steps) && d.Reason == string(cluster.FailureCanceled) {
		r.x.Stopped = i
	}
	for k := i; k < len(r.c.Steps); k++ {
		if r.x.Steps[k].Outcome == "" {
			r.x.Steps[k] = StepResult{Decision: d}
		}
	}
	// The objects of phases not reached are not attempted either.
	for k, it := range r.c.Items {
		if it.Outcome == OutcomePlanned && r.x.Items[k].Outcome == OutcomePlanned && !r.dryRun {
			r.x.Items[k] = ItemResult{Decision: Decision{OutcomeNotAttempted, "", "the run stopped before this object's step"}, Plan: it.Plan}
			if r.rec != nil && r.c.undoing == nil {
				if err := r.rec.MarkSkipped(r.entries[k], "the run stopped before this object's step: "+d.Message); err != nil {
					r.x.JournalErr = errors.Join(r.x.JournalErr, err)
				}
			}
		}
	}
}

// startJournal writes the run's own journal, every planned object an entry.
func (r *runner) startJournal() error {
	todo := r.c.planned()
	rec, err := r.e.startJournal(r.c.Planned, todo)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNothingChanged, err)
	}
	r.rec, r.marks, r.x.Journal = rec, applyMarks{rec}, rec.Path()
	if r.c.info != nil {
		r.c.info.journalID = rec.Snapshot().ID
	}
	r.entries = map[int]int{}
	for k, i := range todo {
		r.entries[i] = k
	}
	return nil
}

// patch sends the planned objects of one phase.
func (r *runner) patch(ctx context.Context, s *Step) StepResult {
	var todo, entries []int
	for i, it := range r.c.Items {
		if it.Phase == s.Phase && it.Outcome == OutcomePlanned {
			todo = append(todo, i)
			if r.entries != nil {
				entries = append(entries, r.entries[i])
			}
		}
	}
	if len(todo) == 0 {
		return StepResult{Decision: Decision{Outcome: OutcomeUnchanged, Message: "no object to patch"}, At: r.e.now()}
	}
	marks, ok := r.marks, OutcomeApplied
	if r.dryRun {
		marks, ok, entries = noMarks{}, OutcomeDryRunAccepted, nil
	} else if r.c.undoing != nil {
		ok, entries = OutcomeRestored, nil
	}
	r.e.patchAll(ctx, r.c.Planned, r.x.Applied, todo, entries, r.rebased(todo), r.dryRun, marks, ok)
	n := 0
	r.written = map[string]bool{}
	for _, i := range todo {
		if r.x.Items[i].Outcome == ok {
			r.written[r.c.Items[i].rowKey()] = true
			n++
		}
	}
	d := Decision{Outcome: ok}
	switch {
	case n == len(todo):
		if ok == OutcomeRestored {
			d.Outcome = OutcomeApplied
		}
	case r.x.Interrupted:
		d = Decision{OutcomeNotAttempted, string(cluster.FailureCanceled), fmt.Sprintf("interrupted: %d of %d objects patched", n, len(todo))}
	case r.c.lastWriteIs(s):
		// A failed object does not stop what follows when nothing follows: the report names it.
		d = Decision{OutcomeApplied, "", fmt.Sprintf("%d of %d objects patched", n, len(todo))}
	default:
		d = Decision{OutcomeFailed, "", fmt.Sprintf("%d of %d objects patched (see below): the steps after need them all", n, len(todo))}
	}
	if n > 0 && d.Outcome == OutcomeNotAttempted {
		// Some were changed: the check after must not think nothing was.
		r.lastWrite = r.e.now()
	}
	return StepResult{Decision: d, At: r.e.now()}
}

// rebased are, for the items todo names, the object as an earlier phase of this run left it.
func (r *runner) rebased(todo []int) map[int]*cluster.Object {
	latest := map[string]*cluster.Object{}
	for _, res := range r.x.Items {
		if res.Object != nil {
			latest[res.Object.UID] = res.Object
		}
	}
	out := map[int]*cluster.Object{}
	for _, i := range todo {
		if it := r.c.Items[i]; it.Live != nil {
			if o := latest[it.Live.UID]; o != nil {
				out[i] = o
			}
		}
	}
	return out
}

// lastWriteIs reports whether s is the change's last write.
func (c *Change) lastWriteIs(s *Step) bool {
	last := -1
	for i, st := range c.Steps {
		if st.Writes() {
			last = i
		}
	}
	return last >= 0 && c.Steps[last] == s
}

// write sends an Application write or waits for a settle, after checking the rule once more.
func (r *runner) write(ctx context.Context, i int, s *Step) StepResult {
	for _, app := range s.Lets {
		if !r.dryRun && !r.passed[app] {
			return StepResult{Decision: Decision{OutcomeFailed, "", fmt.Sprintf("not sent: Argo CD has not shown, in a comparison after the last change, that Application %s deletes nothing", app)}}
		}
	}
	if r.dryRun && s.Kind == StepSettle {
		return StepResult{Decision: Decision{Outcome: OutcomeUnchanged, Message: "not run in a dry run"}}
	}
	err := s.write(ctx, r.dryRun)
	switch {
	case errors.Is(err, errDryRunSkip):
		return StepResult{Decision: Decision{Outcome: OutcomeUnchanged, Message: err.Error()}}
	case err != nil:
		return StepResult{Decision: Decision{OutcomeFailed, string(cluster.Classify(err)), err.Error()}, At: r.e.now()}
	case r.dryRun:
		return StepResult{Decision: Decision{Outcome: OutcomeDryRunAccepted}}
	case s.Kind == StepSettle:
		return StepResult{Decision: Decision{Outcome: OutcomePassed}, At: r.e.now()}
	}
	return StepResult{Decision: Decision{Outcome: OutcomeApplied}, At: r.e.now()}
}

// check asks Argo CD to compare the step's app, waits for a comparison that started after the last
// write, and judges it.
//
// ReconciledAt is when the comparison started, in seconds; the controller sets it only for
// comparisons at CompareWithLatest level (controller/appcontroller.go, processAppRefreshQueueItem:
// `if app.Status.ReconciledAt == nil || comparisonLevel >= CompareWithLatest`), which a refresh
// request asks for. So a comparison counts when its second is later than the write's.
//
// Starting later is not seeing: the controller compares against its live-state cache, which its
// watch fills (gitops-engine pkg/cache/cluster.go, watchEvents), some time after the API server
// took the write; on a busy controller, seconds after. A comparison before that shows the objects
// as they were. So a mismatch is judged again on a later comparison before the check fails, and a
// mismatch that is only what an unseen write of ours looks like (Mismatch.Unseen, every row one the
// last patch step changed) is judged again on every later comparison until the check's timeout: it
// ends the moment the cache shows the write, and never makes a check pass that a comparison does
// not.
func (r *runner) check(ctx context.Context, s *Step) StepResult {
	timeout := r.e.checkTimeout()
	deadline := r.e.now().Add(timeout)
	after := r.lastWrite
	var last *Mismatch
	for attempt := 0; ; attempt++ {
		app, fresh, err := r.e.compared(ctx, s.App, after, deadline)
		switch {
		case err != nil:
			return StepResult{Decision: Decision{OutcomeFailed, string(cluster.Classify(err)), fmt.Sprintf("could not read Application %s: %v", s.App, err)}}
		case !fresh && last != nil:
			return StepResult{Decision: Decision{OutcomeFailed, ReasonMismatch, fmt.Sprintf("%s (in every comparison for %s after the last change)", last, timeout)}, Mismatch: last}
		case !fresh:
			d := Decision{OutcomeFailed, ReasonNotCompared, fmt.Sprintf("Argo CD did not compare Application %s within %s of the last change (its controller is busy or stopped)", s.App, timeout)}
			return StepResult{Decision: d}
		}
		if last = s.Expect(app); last == nil && s.Live != nil {
			last = s.Live(ctx)
		}
		if last == nil {
			return StepResult{Decision: Decision{Outcome: OutcomePassed}, At: app.ReconciledAt}
		}
		if attempt > 0 && !r.unseen(last) {
			return StepResult{Decision: Decision{OutcomeFailed, ReasonMismatch, last.String()}, Mismatch: last}
		}
		after = app.ReconciledAt
	}
}

// unseen reports whether m is only what Argo CD shows for objects the last patch step changed
// before its controller has seen the change.
func (r *runner) unseen(m *Mismatch) bool {
	if len(m.Unseen) == 0 {
		return false
	}
	for _, k := range m.Unseen {
		if !r.written[k] {
			return false
		}
	}
	return true
}

// compared asks for a refresh of app and polls it until a comparison that started after after is
// in its status, or the deadline passes (fresh false). A request the controller took without a
// comparison that started late enough (one arriving mid-comparison is taken by it) is asked again,
// a second apart; a pending one is not asked again until it has stayed pending for verify.StaleRequest
// with no such comparison — one that can stay so is a request the controller took before it was
// renewed, or one whose renewal changed nothing on the object and so reached no controller (see
// the backends' Refresh) — and a pending hard refresh is never downgraded.
func (e *Engine) compared(ctx context.Context, name AppName, after, deadline time.Time) (argocd.Application, bool, error) {
	ask := verify.Asker{Reask: time.Second}
	for {
		app, err := e.ArgoCD.GetApplication(ctx, e.namespaceOf(name), name.Name)
		if err != nil {
			return app, false, err
		}
		if !app.ReconciledAt.IsZero() && app.ReconciledAt.Unix() > after.Unix() && app.Refresh == "" {
			return app, true, nil
		}
		now := e.now()
		if !now.Before(deadline) {
			return app, false, nil
		}
		if ask.Due(now, app.Refresh) {
			if err := e.ArgoCD.Refresh(ctx, app, false); err != nil {
				return app, false, err
			}
			ask.Asked(now)
		}
		select {
		case <-ctx.Done():
			return app, false, ctx.Err()
		case <-time.After(e.poll()):
		}
	}
}

func (e *Engine) namespaceOf(a AppName) string {
	if a.Namespace == "" && e.ArgoCD != nil {
		return e.ArgoCD.Namespace()
	}
	return a.Namespace
}

// CheckTimeout bounds how long a check waits for Argo CD to compare an app, by default.
const CheckTimeout = 2 * time.Minute

func (e *Engine) checkTimeout() time.Duration {
	if e.CheckTimeout > 0 {
		return e.CheckTimeout
	}
	return CheckTimeout
}

// VerifyChange waits, once every step of a change succeeded, until Argo CD shows it done (released
// objects gone, moved ones adopted, the renamed app Synced) in comparisons that started after the
// last write, or the timeout passes. It returns, per app of the plan, what Argo CD showed; nil for
// the apps not waited for.
func (e *Engine) VerifyChange(ctx context.Context, c *Change, x *Executed, timeout time.Duration) Verified {
	if c.verify == nil || x.Mode != ModeApply || x.Stopped >= 0 {
		return nil
	}
	waits := c.verify(x.Applied)
	if len(waits) == 0 {
		return nil
	}
	reqs := make([]verify.Request, len(waits))
	for i, w := range waits {
		reqs[i] = w.req
	}
	out := make(Verified, len(c.Apps))
	for k, v := range verify.Apps(ctx, e.ArgoCD, reqs, e.now(), e.verifyOptions(timeout), "Applications Argo CD has compared again") {
		out[waits[k].app] = &v
	}
	return out
}

// appWait is one app of a change to wait for: its index among the plan's apps.
type appWait struct {
	app int
	req verify.Request
}

// reaching is the engine an undo of c's journal runs with: the clusters c's objects live in and
// the Argo CD installation c ran against, before whatever e was given to reach a journal's.
func (e *Engine) reaching(c *Change) *Engine {
	r := *e
	objects := map[string]cluster.Objects{}
	for _, it := range c.Items {
		if it.Objects != nil {
			info := it.Objects.Info()
			objects[info.Name+"|"+info.Server] = it.Objects
		}
	}
	r.Connect = func(ctx context.Context, info cluster.Info, app *journal.AppRef) (cluster.Objects, error) {
		if o, ok := objects[info.Name+"|"+info.Server]; ok {
			return o, nil
		}
		if e.Connect != nil {
			return e.Connect(ctx, info, app)
		}
		return nil, fmt.Errorf("cluster %s: not one this run reached", info)
	}
	if e.ArgoCD != nil {
		r.ArgoCDOf = func(context.Context, *journal.Journal) (cluster.ArgoCD, error) { return e.ArgoCD, nil }
	}
	return &r
}
