package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// RenameUndo is the undo of a rename, around the restore of its tracking rewrites: Before (create
// the old Application again, automated sync off and no finalizers, unless it exists; switch the new
// one's automated sync off and remove its finalizers), then the tracking moves back, then After
// (delete the new Application object — no finalizer left, so Argo CD deletes nothing — and give the
// old one its sync policy and finalizers back).
type RenameUndo struct {
	Before, After []*AppStep
	argo          cluster.ArgoCD
	to            AppName
	newUID, newRV string
	// newRead is the new Application as read when the undo was planned.
	newRead map[string]any
}

// PlanRenameUndo plans the Application writes of a rename journal's undo from the journal's copy of
// the old Application and the live new one.
func PlanRenameUndo(ctx context.Context, argo cluster.ArgoCD, r *journal.Renamed) (*RenameUndo, error) {
	var old map[string]any
	if err := json.Unmarshal(r.Application, &old); err != nil {
		return nil, fmt.Errorf("the journal's copy of Application %s is damaged: %w", r.From, err)
	}
	from, to := AppName{Namespace: r.From.Namespace, Name: r.From.Name}, AppName{Namespace: r.To.Namespace, Name: r.To.Name}
	u := &RenameUndo{argo: argo, to: to}
	if _, err := argo.ApplicationObject(ctx, from.Namespace, from.Name); cluster.IsNotFound(err) {
		created := withoutAutomation(withoutServerFields(old))
		u.Before = append(u.Before, &AppStep{Verb: "create", App: from, Object: created,
			Why: "the old Application again, from the journal, automated sync off and no finalizers until it tracks the resources"})
	} else if err != nil {
		return nil, err
	}
	live, err := argo.ApplicationObject(ctx, to.Namespace, to.Name)
	if err != nil && !cluster.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		u.newUID, u.newRV, u.newRead = metaString(live, "uid"), metaString(live, "resourceVersion"), live
		off := automationOff(live, u.newRV)
		u.Before = append(u.Before, &AppStep{Verb: "patch", App: to, Patch: off, Why: "switch the new app's automated sync off and remove its finalizers"})
		u.After = append(u.After, &AppStep{Verb: "delete", App: to, Why: "delete the new Application object, which has no finalizer left: Argo CD deletes none of its resources"})
	}
	back, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizersOf(old)}, "spec": map[string]any{"syncPolicy": syncPolicyOf(old)}})
	u.After = append(u.After, &AppStep{Verb: "patch", App: from, Patch: back, Why: "give the old app its sync policy and finalizers back"})
	return u, nil
}

// Send carries out steps in order (with dryRun=All when asked), stopping at the first failure, and
// returns the outcome of each step; ok is false when one failed.
func (u *RenameUndo) Send(ctx context.Context, steps []*AppStep, dryRun bool) (out []Decision, ok bool) {
	done := OutcomeApplied
	if dryRun {
		done = OutcomeDryRunAccepted
	}
	out = make([]Decision, len(steps))
	for i, s := range steps {
		var err error
		switch s.Verb {
		case "create":
			_, err = u.argo.CreateApplication(ctx, s.Object, dryRun)
		case "patch":
			err = u.patch(ctx, s, dryRun)
		case "delete":
			err = deleteApplication(ctx, u.argo, s.App, u.newUID, u.newRV, dryRun)
		}
		if err != nil {
			out[i] = Decision{Outcome: OutcomeFailed, Message: err.Error()}
			for k := i + 1; k < len(steps); k++ {
				out[k] = Decision{Outcome: OutcomeNotAttempted, Message: "an earlier step failed"}
			}
			return out, false
		}
		out[i] = Decision{Outcome: done}
	}
	return out, true
}

// patch sends a step's patch. The new app's switch-off is conditional on the version read; the
// controller writes the app's status all the time, so on a conflict it is read again and, while only
// its status moved, the switch-off is sent again at the fresh version.
func (u *RenameUndo) patch(ctx context.Context, s *AppStep, dryRun bool) error {
	body := s.Patch
	for i := 1; ; i++ {
		out, err := u.argo.PatchApplication(ctx, s.App.Namespace, s.App.Name, body, dryRun)
		switching := u.newRead != nil && metaString(u.newRead, "name") == s.App.Name
		if err == nil {
			if !dryRun && switching {
				u.newRV = metaString(out, "resourceVersion")
			}
			return nil
		}
		if !switching || !cluster.IsConflict(err) || i == 5 {
			return err
		}
		fresh, gerr := u.argo.ApplicationObject(ctx, s.App.Namespace, s.App.Name)
		if gerr != nil {
			return gerr
		}
		if why := changedSince(u.newRead, fresh); why != "" {
			return fmt.Errorf("Application %s/%s changed since unprune read it (%s): run the undo again", s.App.Namespace, s.App.Name, why)
		}
		body = automationOff(fresh, metaString(fresh, "resourceVersion"))
	}
}

// Settle waits, once Before has switched the new app's automated sync off, until no operation of the
// new app is requested or running: a sync it started before — its automation was still on — goes on
// applying the new app's manifests, and would write the new app's tracking back over the tracking
// undo restores (the lab met it: an automated sync the rename's last step caused was still running
// when the undo began). It polls every interval until timeout, and fails when the operation lasts
// longer; nothing of the tracking has moved back then.
func (u *RenameUndo) Settle(ctx context.Context, timeout, interval time.Duration) error {
	if u.newRead == nil {
		return nil
	}
	return settle(ctx, u.argo, u.to, timeout, interval)
}

// settle waits until no operation of app is requested or running, polling every interval, and
// fails once timeout has passed.
func settle(ctx context.Context, argo cluster.ArgoCD, app AppName, timeout, interval time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		a, err := argo.GetApplication(ctx, app.Namespace, app.Name)
		if err != nil {
			return fmt.Errorf("read Application %s/%s to see whether it is syncing: %w", app.Namespace, app.Name, err)
		}
		if !a.Operation {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Application %s/%s has had an operation running (%s) for %s: once it ends, run again",
				app.Namespace, app.Name, orUnknown(a.OperationPhase), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
