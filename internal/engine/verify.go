package engine

import (
	"context"
	"sync"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/progress"
	"github.com/unprune/unprune/internal/verify"
)

// Verify waits, for every app of the run that had objects released, until a comparison Argo CD
// started after the patches shows them released (gone from the app, or with --strategy keep no
// longer making it OutOfSync), or the timeout passes. It does not wait for Synced: other resources
// the run did not touch may keep the app OutOfSync, and the verification names them.
func (e *Engine) Verify(ctx context.Context, run *Run, timeout time.Duration) {
	want := verify.Gone
	if run.Strategy == string(plan.StrategyKeep) {
		want = verify.Ignored
	}
	type job struct {
		app      *AppRun
		released []argocd.Resource
		changed  bool
	}
	jobs := map[*AppRun]*job{}
	var order []*AppRun
	for _, it := range run.Items {
		if it.App == nil {
			continue
		}
		j := jobs[it.App]
		if j == nil {
			j = &job{app: it.App}
			jobs[it.App] = j
			order = append(order, it.App)
		}
		switch {
		case it.Outcome.Changed():
			j.changed = true
		case it.Outcome == OutcomeUnchanged && it.Reason == ReasonAlreadyReleased:
			// Released by an earlier, interrupted run (or by hand) while Argo CD lagged: nothing
			// was patched now, but only Argo CD dropping it proves the release, so wait for that.
			j.changed = true
		case it.Outcome == OutcomeUnchanged && it.Row != nil && it.Row.RequiresPruning:
			// Released already (by someone else): it must leave the app's status too.
		default:
			continue
		}
		// An object named with --force has no row; only a later comparison can prove its release.
		if it.Row != nil {
			j.released = append(j.released, *it.Row)
		}
	}
	patchedAt := e.now()
	var mu sync.Mutex
	waiting := 0
	for _, a := range order {
		if jobs[a].changed {
			waiting++
		}
	}
	step := progress.Start(ctx, "Applications Argo CD has compared again", waiting)
	defer step.Finish()
	parallel.ForEach(len(order), len(order), func(i int) {
		j := jobs[order[i]]
		if !j.changed {
			return
		}
		defer step.Add(1)
		out, err := verify.Wait(ctx, e.ArgoCD, j.app.App, j.released, want, patchedAt,
			verify.Options{Timeout: timeout, Poll: e.Poll, Now: e.Now})
		v := &Verification{Verified: out.Verified, Compared: out.Fresh, Synced: out.App.SyncStatus == "Synced", SyncStatus: out.App.SyncStatus,
			Revision: out.App.Revision, Elapsed: e.now().Sub(patchedAt), StillListed: out.Lingering}
		if err != nil {
			v.Verified = false
			v.Error = cluster.Explain(err, "verify Application "+j.app.Ref(), e.ArgoCD.Cluster()).Error()
		}
		v.OutOfSync = e.explainOutOfSync(ctx, j.app, out.OutOfSync)
		mu.Lock()
		j.app.Verification = v
		mu.Unlock()
	})
}

// explainOutOfSync drops, from the rows keeping an app OutOfSync, those whose live object is marked
// IgnoreExtraneous: Argo CD does not count them against the app.
func (e *Engine) explainOutOfSync(ctx context.Context, a *AppRun, rows []argocd.Resource) []argocd.Resource {
	if a.Objects == nil {
		return rows
	}
	var check []int
	var refs []cluster.Ref
	for i, r := range rows {
		if !r.RequiresPruning {
			continue
		}
		ref, err := a.Objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			continue
		}
		check = append(check, i)
		refs = append(refs, ref)
	}
	ignored := map[int]bool{}
	for k, res := range a.Objects.Read(ctx, refs) {
		if res.Object != nil && argocd.HasOption(res.Object.Annotations[argocd.AnnotationCompareOptions], argocd.OptionIgnoreExtraneous) {
			ignored[check[k]] = true
		}
	}
	var out []argocd.Resource
	for i, r := range rows {
		if !ignored[i] {
			out = append(out, r)
		}
	}
	return out
}
