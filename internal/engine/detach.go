package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
)

// DetachRequest is what `unprune detach` is asked to do.
type DetachRequest struct {
	// Apps names the Applications; Selector selects them instead (with All).
	Apps     []AppName
	Selector *cluster.Selector
	// Resources are the objects to detach, for a single app; All selects every resource of each
	// app that requires pruning (hooks never do).
	Resources        []ResourceArg
	All              bool
	Force            bool
	Strategy         plan.Strategy
	ScrubLastApplied bool
	// KeepManagedFields leaves Argo CD's entries in managedFields (plan.Options).
	KeepManagedFields bool
}

// PlanDetach reads the apps and their selected objects and plans each object's release. Nothing
// is changed. Objects are read in bulk per destination cluster.
func (e *Engine) PlanDetach(ctx context.Context, req DetachRequest) (*Run, error) {
	if len(req.Resources) > 0 && (len(req.Apps) != 1 || req.Selector != nil) {
		return nil, usage("name resources for one app only; for several apps use --all")
	}
	apps, err := e.resolveApps(ctx, req.Apps, req.Selector)
	if err != nil {
		return nil, err
	}
	run := &Run{Command: "detach", Strategy: string(req.Strategy), Mode: ModePreview}
	if req.Selector != nil && len(apps) == 0 {
		return run, nil
	}
	opts := plan.Options{Strategy: req.Strategy, Force: req.Force, ScrubLastApplied: req.ScrubLastApplied,
		KeepManagedFields: req.KeepManagedFields}
	for _, app := range apps {
		if err := e.selectForApp(ctx, run, app, req, opts, len(apps) == 1); err != nil {
			return nil, err
		}
	}
	e.readAndPlan(ctx, run)
	e.explainReleased(run)
	return run, nil
}

// explainReleased says, for each object released already, which earlier run released it, when a
// journal of this machine knows.
func (e *Engine) explainReleased(run *Run) {
	uids := map[string]bool{}
	for _, it := range run.Items {
		if it.Reason == ReasonAlreadyReleased && it.Live != nil {
			uids[it.Live.UID] = true
		}
	}
	if len(uids) == 0 || e.Journals == nil {
		return
	}
	found := e.Journals.Releases(uids)
	for _, it := range run.Items {
		if it.Reason != ReasonAlreadyReleased || it.Live == nil {
			continue
		}
		r, ok := found[it.Live.UID]
		switch {
		case !ok:
			it.Message = "already released: it carries no tracking metadata of the app (removed by hand or by another tool); Argo CD has not compared the app since"
		case r.Sent:
			it.Message = fmt.Sprintf("already released by unprune at %s (journal %s); Argo CD has not compared the app since", r.At.UTC().Format(time.RFC3339), r.Path)
		default:
			it.Message = fmt.Sprintf("already released: unprune's run of %s (journal %s) ended before it could record the patch; Argo CD has not compared the app since",
				r.At.UTC().Format(time.RFC3339), r.Path)
		}
	}
}

// selectForApp adds an app and its selected rows to the run.
// With one app, a destination that cannot be reached is an error; with several, it fails that
// app's objects and the others go on.
func (e *Engine) selectForApp(ctx context.Context, run *Run, app argocd.Application, req DetachRequest, opts plan.Options, single bool) error {
	a := &AppRun{App: app, Instance: app.Instance(e.ArgoCD.Namespace())}
	run.Apps = append(run.Apps, a)
	rows, unknown := selectRows(app, req.Resources, req.All)
	objects, destErr := e.ArgoCD.Destination(ctx, app)
	if destErr != nil && single && len(rows)+len(unknown) > 0 {
		return destErr
	}
	var forced []cluster.Ref
	for _, arg := range unknown {
		if !req.Force || destErr != nil {
			if destErr != nil {
				return usage("%v", destErr)
			}
			return unknownResource(app, arg)
		}
		// --force may name an object the app does not list (a copy, another app's object): read
		// it, and let the planner say whether it may be touched.
		ref, err := objects.Resolve(ctx, arg.Group, arg.Kind, "", arg.Namespace, arg.Name)
		if err != nil {
			return usage("%s: %v", Quote(arg.Raw), err)
		}
		if ref.Namespaced && ref.Namespace == "" {
			return usage("%s is namespaced: use %s/NAMESPACE/%s", ref.Kind, arg.Kind, arg.Name)
		}
		forced = append(forced, ref)
	}
	if destErr != nil {
		a.Message = destErr.Error()
	} else {
		a.Objects = objects
	}
	if app.Operation && len(rows)+len(forced) > 0 {
		a.Message = fmt.Sprintf("Application %s has a sync operation running (phase %s): changing its resources now races the sync; wait for it to finish and run again",
			app.Ref(), orUnknown(app.OperationPhase))
	}
	add := func(row *argocd.Resource, ref cluster.Ref) {
		it := &Item{App: a, Row: row, Objects: a.Objects, Ref: ref, Entry: -1}
		target := func(live *cluster.Object) plan.Target {
			t := plan.Target{Instance: a.Instance, Ref: live.Ref.ObjectRef(), Labels: live.Labels, Annotations: live.Annotations,
				OwnerReferences: live.Owners, Deleting: live.Deleting, ManagedFields: live.ManagedFields}
			if row != nil {
				t.RequiresPruning, t.Hook = row.RequiresPruning, row.Hook
			} else {
				t.Hook = argocd.IsHook(live.Annotations)
			}
			return t
		}
		it.replan = func(live *cluster.Object) plan.Plan { return plan.Build(e.Settings, target(live), opts) }
		switch {
		case app.Operation:
			it.Outcome, it.Reason, it.Message = OutcomeRefused, "OperationRunning", a.Message
		case a.Objects == nil:
			it.Outcome, it.Reason, it.Message = OutcomeFailed, string(cluster.Classify(destErr)), a.Message
		}
		run.Items = append(run.Items, it)
	}
	for i := range rows {
		row := rows[i]
		ref := cluster.Ref{Group: row.Group, Version: row.Version, Kind: row.Kind, Namespace: row.Namespace, Name: row.Name}
		if a.Objects != nil {
			resolved, err := a.Objects.Resolve(ctx, row.Group, row.Kind, row.Version, row.Namespace, row.Name)
			if err != nil {
				it := &Item{App: a, Row: &row, Objects: a.Objects, Ref: ref, Entry: -1,
					Outcome: OutcomeFailed, Reason: string(cluster.Classify(err)), Message: err.Error()}
				run.Items = append(run.Items, it)
				continue
			}
			ref = resolved
		}
		add(&row, ref)
	}
	for _, ref := range forced {
		add(nil, ref)
	}
	return nil
}

// readAndPlan reads every item still to decide, in bulk per destination, and plans it.
func (e *Engine) readAndPlan(ctx context.Context, run *Run) {
	byObjects := map[cluster.Objects][]*Item{}
	var order []cluster.Objects
	for _, it := range run.Items {
		if it.Outcome != "" {
			continue
		}
		if _, ok := byObjects[it.Objects]; !ok {
			order = append(order, it.Objects)
		}
		byObjects[it.Objects] = append(byObjects[it.Objects], it)
	}
	parallel.ForEach(len(order), len(order), func(i int) {
		items := byObjects[order[i]]
		refs := make([]cluster.Ref, len(items))
		for k, it := range items {
			refs[k] = it.Ref
		}
		for k, res := range order[i].Read(ctx, refs) {
			decide(items[k], res)
		}
	})
}

// decide plans one item from what was read.
func decide(it *Item, res cluster.ReadResult) {
	switch {
	case cluster.IsNotFound(res.Err):
		it.Outcome, it.Reason, it.Message = OutcomeGone, string(cluster.FailureNotFound), "the object no longer exists (the app's status predates its deletion); skipped"
		return
	case res.Err != nil:
		it.Outcome, it.Reason, it.Message = OutcomeFailed, string(cluster.Classify(res.Err)), res.Err.Error()
		return
	}
	it.Live = res.Object
	it.Plan = it.replan(res.Object)
	switch {
	case it.Plan.Refusal != nil:
		it.Outcome, it.Reason, it.Message = OutcomeRefused, string(it.Plan.Refusal.Code), it.Plan.Refusal.Message
	case it.Plan.Released && len(it.Plan.Changes) == 0:
		it.Outcome, it.Reason, it.Message = OutcomeUnchanged, ReasonAlreadyReleased, "already released: it carries no tracking metadata of the app; Argo CD has not compared the app since"
	case len(it.Plan.Changes) == 0:
		it.Outcome = OutcomeUnchanged
	default:
		it.Outcome = OutcomePlanned
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
