// Package verify proves a release worked the way Argo CD itself reports it: it asks the application
// controller for a refresh and waits for a comparison that started after the patch, then judges the
// app's own status — the released objects gone (or no longer making the app OutOfSync) — and says
// exactly what else, if anything, keeps the app OutOfSync.
package verify

import (
	"context"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Expectation is how a released object should look in the app's status afterwards.
type Expectation int

const (
	// Gone: untracked objects disappear from .status.resources.
	Gone Expectation = iota
	// Ignored: kept objects stay listed (requiring pruning) but no longer make the app OutOfSync.
	Ignored
	// Adopted: moved objects are listed by the app that took them over, Synced and not requiring
	// pruning.
	Adopted
)

// Outcome is what the app's status said last.
type Outcome struct {
	// Verified: a comparison after the patch shows the expectation met.
	Verified bool
	// Fresh: the status comes from a comparison that started after the patch.
	Fresh bool
	App   argocd.Application
	// Lingering are released objects Argo CD still counts as the expectation forbids.
	Lingering []argocd.Resource
	// OutOfSync are other rows keeping the app OutOfSync (hooks never do).
	OutOfSync []argocd.Resource
}

// Judge compares an app's status with the expectation. patchedAt is when the last patch returned.
//
// A status proves something only if it comes from a comparison that saw the patch: for Gone, the
// released rows being absent proves it (before the patch they were listed); otherwise reconciledAt
// must be a later second than the patch — the controller records there, with second precision, the
// start of its last full comparison (controller/appcontroller.go takes the time before
// CompareAppState). A Synced read before that proves nothing.
func Judge(app argocd.Application, released []argocd.Resource, want Expectation, patchedAt time.Time) Outcome {
	if want == Adopted {
		return judgeAdopted(app, released, patchedAt)
	}
	o := Outcome{App: app}
	isReleased := map[string]bool{}
	for _, r := range released {
		isReleased[r.Key()] = true
	}
	for _, r := range app.Resources {
		if isReleased[r.Key()] {
			if want == Gone {
				o.Lingering = append(o.Lingering, r)
			}
			continue
		}
		if !r.Hook && (r.Status == "OutOfSync" || r.RequiresPruning) {
			o.OutOfSync = append(o.OutOfSync, r)
		}
	}
	o.Fresh = !app.ReconciledAt.IsZero() && app.ReconciledAt.Unix() > patchedAt.Unix()
	if want == Gone && len(o.Lingering) == 0 && len(released) > 0 {
		o.Fresh = true
	}
	switch {
	case !o.Fresh || len(o.Lingering) > 0:
	case want == Gone:
		o.Verified = true
	default:
		// Kept objects stay listed as OutOfSync rows; the app's status says whether they still count.
		o.Verified = app.SyncStatus == "Synced" || len(o.OutOfSync) > 0
	}
	return o
}

// judgeAdopted: every moved row is listed, Synced and not requiring pruning, in a comparison that
// started after the patch (its rows were listed before the patch too, OutOfSync, so only the time
// of the comparison proves anything).
func judgeAdopted(app argocd.Application, moved []argocd.Resource, patchedAt time.Time) Outcome {
	o := Outcome{App: app}
	rows := map[string]argocd.Resource{}
	for _, r := range app.Resources {
		rows[r.Key()] = r
	}
	isMoved := map[string]bool{}
	for _, m := range moved {
		isMoved[m.Key()] = true
		if r, ok := rows[m.Key()]; !ok || r.RequiresPruning || r.Status != "Synced" {
			if ok {
				m = r
			}
			o.Lingering = append(o.Lingering, m)
		}
	}
	for _, r := range app.Resources {
		if !isMoved[r.Key()] && !r.Hook && (r.Status == "OutOfSync" || r.RequiresPruning) {
			o.OutOfSync = append(o.OutOfSync, r)
		}
	}
	o.Fresh = !app.ReconciledAt.IsZero() && app.ReconciledAt.Unix() > patchedAt.Unix()
	o.Verified = o.Fresh && len(o.Lingering) == 0
	return o
}

// StaleRequest is how long a refresh request may stay pending with no comparison after the change
// before it is asked again: the controller may have taken it without the comparison it asks for,
// or it may never have reached the controller (a request set again unchanged sends no watch event;
// the backends' Refresh renew it with a change).
const StaleRequest = 15 * time.Second

// Asker decides, for a wait on Argo CD's comparison, when to ask for a refresh: Reask after the last
// request when none is pending (the controller took it without a comparison late enough), and
// StaleRequest after a pending one was first seen, and after the last request, when one is.
type Asker struct {
	Reask          time.Duration
	asked, pending time.Time
}

// Due reports whether to ask at now, given the refresh request the app carries ("" when none).
func (a *Asker) Due(now time.Time, request string) bool {
	switch {
	case request == "":
		a.pending = time.Time{}
		return now.Sub(a.asked) >= a.Reask
	case a.pending.IsZero():
		a.pending = now
		return false
	}
	return now.Sub(a.pending) >= StaleRequest && now.Sub(a.asked) >= StaleRequest
}

// Asked records a request made at now.
func (a *Asker) Asked(now time.Time) { a.asked, a.pending = now, time.Time{} }

// DefaultPoll is how often an app is read while waiting for Argo CD.
const DefaultPoll = 100 * time.Millisecond

// Options tune Wait.
type Options struct {
	Timeout time.Duration
	// Poll is how often the app is read; 0 means DefaultPoll.
	Poll time.Duration
	// Reask is how long to wait for a comparison before asking for a refresh again; 0 means 10s.
	// Every refresh makes the controller resolve the git revision again, so it is not hammered.
	Reask time.Duration
	Now   func() time.Time
}

// Wait asks for a refresh and polls the app until Judge verifies it or the timeout passes; the last
// outcome is returned either way, and an error only when the app could not be read at all.
func Wait(ctx context.Context, argo cluster.ArgoCD, app argocd.Application, released []argocd.Resource, want Expectation, patchedAt time.Time, opts Options) (Outcome, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Reask <= 0 {
		opts.Reask = 10 * time.Second
	}
	deadline := now().Add(opts.Timeout)
	current, err := argo.GetApplication(ctx, app.Namespace, app.Name)
	if err != nil {
		return Outcome{App: app}, err
	}
	ask := Asker{Reask: opts.Reask}
	for {
		o := Judge(current, released, want, patchedAt)
		t := now()
		if o.Verified || !t.Before(deadline) {
			return o, nil
		}
		if !o.Fresh && ask.Due(t, current.Refresh) {
			if err := argo.Refresh(ctx, current, false); err != nil {
				return o, err
			}
			ask.Asked(t)
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-time.After(opts.Poll):
		}
		next, err := argo.GetApplication(ctx, app.Namespace, app.Name)
		if err != nil {
			return o, err
		}
		current = next
	}
}
