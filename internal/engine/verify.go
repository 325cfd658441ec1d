package engine

import (
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// releaseWaits are, for every app of a release that had objects released, the wait until a
// comparison Argo CD started after the patches shows them released (gone from the app, or with the
// keep strategy no longer making it OutOfSync). It does not wait for Synced: other resources the run
// did not touch may keep the app OutOfSync, and the verification names them.
func releaseWaits(p *Planned) func(done *Applied) []appWait {
	return func(done *Applied) []appWait {
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
			// An object the app does not list (forced) has no row; only a later comparison can prove
			// its release.
			if it.Row != nil {
				j.released = append(j.released, *it.Row)
			}
		}
		var out []appWait
		for i, a := range p.Apps {
			if j := jobs[a]; j != nil && j.changed {
				out = append(out, appWait{app: i, req: verify.Request{App: a.App, Rows: j.released, Want: want, Objects: a.Objects}})
			}
		}
		return out
	}
}

func (e *Engine) verifyOptions(timeout time.Duration) verify.Options {
	return verify.Options{Timeout: timeout, Poll: e.Poll, Now: e.Now}
}
