package engine

import (
	"context"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// Verify waits, for every app of the run that had objects released, until a comparison Argo CD
// started after the patches shows them released (gone from the app, or with the keep strategy no
// longer making it OutOfSync), or the timeout passes. It does not wait for Synced: other resources
// the run did not touch may keep the app OutOfSync, and the verification names them.
//
// It returns, per app of the plan, what Argo CD showed; nil for the apps it did not wait for.
func (e *Engine) Verify(ctx context.Context, p *Planned, done *Applied, timeout time.Duration) Verified {
	want := verify.Gone
	if p.Strategy == string(plan.StrategyKeep) {
		want = verify.Ignored
	}
	type job struct {
		released []argocd.Resource
		changed  bool
	}
	jobs := map[*AppRun]*job{}
	for i, it := range p.Items {
		if it.App == nil {
			continue
		}
		r := done.Items[i]
		j := jobs[it.App]
		if j == nil {
			j = &job{}
			jobs[it.App] = j
		}
		switch {
		case r.Outcome.Changed():
			j.changed = true
		case r.Outcome == OutcomeUnchanged && r.Reason == ReasonAlreadyReleased:
			// Released by an earlier, interrupted run (or by hand) while Argo CD lagged: nothing
			// was patched now, but only Argo CD dropping it proves the release, so wait for that.
			j.changed = true
		case r.Outcome == OutcomeUnchanged && it.Row != nil && it.Row.RequiresPruning:
			// Released already (by someone else): it must leave the app's status too.
		default:
			continue
		}
		// An object the app does not list (forced) has no row; only a later comparison can prove its
		// release.
		if it.Row != nil {
			j.released = append(j.released, *it.Row)
		}
	}
	var which []int
	var reqs []verify.Request
	for i, a := range p.Apps {
		if j := jobs[a]; j != nil && j.changed {
			which = append(which, i)
			reqs = append(reqs, verify.Request{App: a.App, Rows: j.released, Want: want, Objects: a.Objects})
		}
	}
	out := make(Verified, len(p.Apps))
	for k, v := range verify.Apps(ctx, e.ArgoCD, reqs, e.now(), e.verifyOptions(timeout), "Applications Argo CD has compared again") {
		out[which[k]] = &v
	}
	return out
}

func (e *Engine) verifyOptions(timeout time.Duration) verify.Options {
	return verify.Options{Timeout: timeout, Poll: e.Poll, Now: e.Now}
}
