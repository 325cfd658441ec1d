package engine

import (
	"context"
	"errors"
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
	// AllOrNothing changes nothing when any selected object is refused or cannot be read.
	AllOrNothing bool
	// Read, when set, are the apps read already (ReadApps, while the settings were read).
	Read *AppsRead
}

// PlanDetach reads the apps and their selected objects and plans each object's release, a change of
// one step: the patches. A release lets Argo CD delete nothing (untrack takes the object out of its
// app; keep adds the options that keep every sync from pruning it), so no check comes before it;
// Argo CD showing the release is the verification after. Nothing is changed. Objects are read in
// bulk per destination cluster.
func (e *Engine) PlanDetach(ctx context.Context, req DetachRequest) (*Change, error) {
	if len(req.Resources) > 0 && (len(req.Apps) != 1 || req.Selector != nil) {
		return nil, &RequestError{Kind: ResourcesForOneApp, Err: errors.New("name resources for one app only")}
	}
	read := req.Read
	if read == nil {
		read = &AppsRead{}
		read.Apps, read.Err = e.resolveApps(ctx, req.Apps, req.Selector)
	}
	apps, err := read.Apps, read.Err
	if err != nil {
		return nil, err
	}
	opts := plan.Options{Strategy: req.Strategy, Force: req.Force, ScrubLastApplied: req.ScrubLastApplied,
		KeepManagedFields: req.KeepManagedFields}
	p := &Planned{Command: "detach", Strategy: string(req.Strategy), planner: releasePlanner{e.Settings, opts}, AllOrNothing: req.AllOrNothing}
	c := &Change{Planned: p, Steps: []*Step{{Kind: StepPatch, Why: "release the selected resources"}}, verify: releaseWaits(p)}
	if req.Selector != nil && len(apps) == 0 {
		return c, nil
	}
	for _, app := range apps {
		if err := e.selectForApp(ctx, p, app, req, len(apps) == 1); err != nil {
			return nil, err
		}
	}
	e.readAndPlan(ctx, p, e.releasedBefore)
	if req.Strategy == plan.StrategyKeep {
		e.refuseKeepsANamespaceUndoes(ctx, p)
	}
	return c, nil
}

// refuseKeepsANamespaceUndoes refuses to keep an object whose Namespace its app still prunes: the
// prune of the Namespace deletes it, Prune=false aside (deletion.Together). A Namespace this run
// keeps too holds.
func (e *Engine) refuseKeepsANamespaceUndoes(ctx context.Context, p *Planned) {
	marked := map[string]bool{}
	for _, it := range p.Items {
		if it.Ref.Group == "" && it.Ref.Kind == "Namespace" && (it.Outcome == OutcomePlanned || it.Outcome == OutcomeUnchanged) {
			marked[it.rowKey()] = true
		}
	}
	for _, it := range p.Items {
		if it.Outcome != OutcomePlanned || it.Ref.Namespace == "" || it.App == nil {
			continue
		}
		goes, err := e.prunedNamespace(ctx, it.App.App, it.Objects, it.Ref.Namespace, marked)
		switch {
		case err != nil:
			it.Decision = Decision{OutcomeFailed, string(cluster.Classify(err)), fmt.Sprintf("read Namespace %s, which its app prunes too: %v", it.Ref.Namespace, err)}
		case goes:
			why := namespaceGoesWhy(it.App.App.Ref(), it.Ref.Namespace, argocd.OptionPrune+"=false", "keep")
			it.Plan.Refusal = &plan.Refusal{Code: RefuseNamespacePruned, Message: why}
			it.Decision = Decision{OutcomeRefused, string(RefuseNamespacePruned), why}
		}
	}
}

// releasePlanner plans the release of an app's object.
type releasePlanner struct {
	settings argocd.Settings
	opts     plan.Options
}

func (r releasePlanner) Plan(it *Item, live *cluster.Object) plan.Plan {
	return plan.Build(r.settings, targetOf(it.App.Instance, live, it.Row), r.opts)
}

// releasedBefore says, for each object released already, which earlier run released it, when a
// journal of this machine knows: the messages by UID.
func (e *Engine) releasedBefore(uids map[string]bool) map[string]string {
	if len(uids) == 0 || e.Journals == nil {
		return nil
	}
	found := e.Journals.Releases(uids)
	out := map[string]string{}
	for uid := range uids {
		r, ok := found[uid]
		switch {
		case !ok:
			out[uid] = "already released: it carries no tracking metadata of the app (removed by hand or by another tool); Argo CD has not compared the app since"
		case r.Sent:
			out[uid] = fmt.Sprintf("already released by unprune at %s (journal %s); Argo CD has not compared the app since", r.At.UTC().Format(time.RFC3339), r.Path)
		default:
			out[uid] = fmt.Sprintf("already released: unprune's run of %s (journal %s) ended before it could record the patch; Argo CD has not compared the app since",
				r.At.UTC().Format(time.RFC3339), r.Path)
		}
	}
	return out
}

// selectForApp adds an app and its selected rows to the plan.
// With one app, a destination that cannot be reached is an error; with several, it fails that
// app's objects and the others go on.
func (e *Engine) selectForApp(ctx context.Context, p *Planned, app argocd.Application, req DetachRequest, single bool) error {
	a := &AppRun{App: app, Instance: app.Instance(e.ArgoCD.Namespace())}
	p.Apps = append(p.Apps, a)
	rows, unknown := selectRows(app, req.Resources, req.All)
	objects, destErr := e.ArgoCD.Destination(ctx, app)
	if destErr != nil && single && len(rows)+len(unknown) > 0 {
		return destErr
	}
	forced, err := e.resolveForced(ctx, app, objects, destErr, unknown, req.Force)
	if err != nil {
		return err
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
	// Decided before reading: the app's state rules the object out.
	var before Decision
	switch {
	case app.Operation:
		before = Decision{OutcomeRefused, "OperationRunning", a.Message}
	case a.Objects == nil:
		before = Decision{OutcomeFailed, string(cluster.Classify(destErr)), a.Message}
	}
	for i := range rows {
		row := &rows[i]
		ref, d := cluster.Ref{Group: row.Group, Version: row.Version, Kind: row.Kind, Namespace: row.Namespace, Name: row.Name}, before
		if a.Objects != nil {
			resolved, err := a.Objects.Resolve(ctx, row.Group, row.Kind, row.Version, row.Namespace, row.Name)
			if err != nil {
				d = Decision{OutcomeFailed, string(cluster.Classify(err)), err.Error()}
			} else {
				ref = resolved
			}
		}
		p.Items = append(p.Items, &Item{App: a, Row: row, Objects: a.Objects, Ref: ref, Entry: -1, Decision: d})
	}
	for _, ref := range forced {
		p.Items = append(p.Items, &Item{App: a, Objects: a.Objects, Ref: ref, Entry: -1, Decision: before})
	}
	return nil
}

// resolveForced resolves the arguments an app lists no row for: when forced, objects to read
// anyway (a copy, another app's object), which the planner then judges; without, an error.
func (e *Engine) resolveForced(ctx context.Context, app argocd.Application, objects cluster.Objects, destErr error, unknown []ResourceArg, force bool) ([]cluster.Ref, error) {
	var forced []cluster.Ref
	for _, arg := range unknown {
		if !force || destErr != nil {
			if destErr != nil {
				return nil, invalid("%v", destErr)
			}
			return nil, unknownResource(ctx, app, arg)
		}
		ref, err := objects.Resolve(ctx, arg.Group, arg.Kind, "", arg.Namespace, arg.Name)
		if err != nil {
			return nil, invalid("%s: %v", Quote(arg.Raw), err)
		}
		if ref.Namespaced && ref.Namespace == "" {
			return nil, invalid("%s is namespaced: use %s/NAMESPACE/%s", ref.Kind, arg.Kind, arg.Name)
		}
		forced = append(forced, ref)
	}
	return forced, nil
}

// readAndPlan reads every item still to decide, in bulk per destination, and plans it: the one
// place an item read is decided. released, when given, words the already-released objects (by UID).
func (e *Engine) readAndPlan(ctx context.Context, p *Planned, released func(uids map[string]bool) map[string]string) {
	byObjects := map[cluster.Objects][]*Item{}
	var order []cluster.Objects
	for _, it := range p.Items {
		if it.Outcome != "" {
			continue
		}
		if _, ok := byObjects[it.Objects]; !ok {
			order = append(order, it.Objects)
		}
		byObjects[it.Objects] = append(byObjects[it.Objects], it)
	}
	reads := make([][]cluster.ReadResult, len(order))
	parallel.ForEach(len(order), len(order), func(i int) {
		items := byObjects[order[i]]
		refs := make([]cluster.Ref, len(items))
		for k, it := range items {
			refs[k] = it.Ref
		}
		reads[i] = order[i].Read(ctx, refs)
	})
	type decided struct {
		it   *Item
		live *cluster.Object
		plan plan.Plan
		d    Decision
	}
	var all []decided
	for i, objects := range order {
		for k, it := range byObjects[objects] {
			x := decided{it: it}
			gone := goneFromStatus
			if it.Row == nil {
				// Named on the command line (guard), not listed by an app.
				gone = "the object does not exist; skipped"
			}
			x.live, x.plan, x.d = decide(p.planner, it, reads[i][k], gone)
			all = append(all, x)
		}
	}
	if released != nil {
		uids := map[string]bool{}
		for _, x := range all {
			if x.d.Reason == ReasonAlreadyReleased {
				uids[x.live.UID] = true
			}
		}
		said := released(uids)
		for k, x := range all {
			if x.d.Reason != ReasonAlreadyReleased {
				continue
			}
			if m, ok := said[x.live.UID]; ok {
				all[k].d.Message = m
			}
		}
	}
	for _, x := range all {
		x.it.Live, x.it.Plan, x.it.Decision = x.live, x.plan, x.d
	}
}

// goneFromStatus explains an object an app's status lists that no longer exists.
const goneFromStatus = "the object no longer exists (the app's status predates its deletion); skipped"

// decide plans one item from what was read; gone explains an object that no longer exists.
func decide(planner Planner, it *Item, res cluster.ReadResult, gone string) (*cluster.Object, plan.Plan, Decision) {
	switch {
	case cluster.IsNotFound(res.Err):
		return nil, plan.Plan{}, Decision{OutcomeGone, string(cluster.FailureNotFound), gone}
	case res.Err != nil:
		return nil, plan.Plan{}, Decision{OutcomeFailed, string(cluster.Classify(res.Err)), res.Err.Error()}
	}
	p := planner.Plan(it, res.Object)
	switch {
	case p.Refusal != nil:
		return res.Object, p, Decision{OutcomeRefused, string(p.Refusal.Code), p.Refusal.Message}
	case p.Released && len(p.Changes) == 0:
		return res.Object, p, Decision{OutcomeUnchanged, ReasonAlreadyReleased, "already released: it carries no tracking metadata of the app; Argo CD has not compared the app since"}
	case len(p.Changes) == 0:
		return res.Object, p, Decision{Outcome: OutcomeUnchanged}
	}
	return res.Object, p, Decision{Outcome: OutcomePlanned}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
