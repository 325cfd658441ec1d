package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// MoveRequest is what `unprune move` is asked to do.
type MoveRequest struct {
	From, To  AppName
	Resources []ResourceArg
	// All selects every resource of From that To declares; with Prepare, every resource of From
	// (hooks excepted).
	All bool
	// Prepare marks the resources so that From cannot prune or cascade-delete them while the commit
	// that moves their manifests lands, instead of moving them.
	Prepare bool
}

// Refusals of move.
const (
	// RefuseNotDeclared: the app the resource would move to does not declare it (its status does
	// not list it): that app would prune it at its next sync.
	RefuseNotDeclared plan.RefusalCode = "NotDeclaredByTargetApp"
	// RefuseStillDeclared: the app the resource would leave still declares it (its git still holds
	// it): it would take the resource back at its next sync.
	RefuseStillDeclared plan.RefusalCode = "StillDeclaredBySourceApp"
	// RefuseOperationRunning: a sync operation runs on one of the apps.
	RefuseOperationRunning plan.RefusalCode = "OperationRunning"
)

// PlanMove reads both apps and the selected objects and plans, per object, the rewrite of its
// tracking from From to To — or, with Prepare, the sync options that keep From from pruning it
// meanwhile. Nothing is changed.
func (e *Engine) PlanMove(ctx context.Context, req MoveRequest) (*Planned, error) {
	apps, err := e.resolveApps(ctx, []AppName{req.From, req.To}, nil)
	if err != nil {
		return nil, err
	}
	if len(apps) != 2 {
		return nil, &RequestError{Kind: SameApp, Err: fmt.Errorf("%s holds the resources already: name another app", apps[0].Ref())}
	}
	from, to := apps[0], apps[1]
	strategy := journal.StrategyMove
	if req.Prepare {
		strategy = journal.StrategyPrepare
	}
	src := &AppRun{App: from, Instance: from.Instance(e.ArgoCD.Namespace())}
	dst := &AppRun{App: to, Instance: to.Instance(e.ArgoCD.Namespace())}
	if src.Objects, err = e.sameDestination(ctx, from, to); err != nil {
		return nil, err
	}
	dst.Objects = src.Objects
	rows, err := moveRows(ctx, from, to, req)
	if err != nil {
		return nil, err
	}
	mp := movePlanner{settings: e.Settings, to: plan.MoveTo{Instance: dst.Instance, DestinationNamespace: to.Destination.Namespace},
		prepare: req.Prepare, prepared: map[string]journal.Preparation{}}
	if !req.Prepare && e.Journals != nil {
		mp.prepared = e.Journals.Preparations(journal.AppRef{Namespace: from.Namespace, Name: from.Name})
	}
	p := &Planned{Command: journal.CommandMove, Strategy: strategy, Apps: []*AppRun{src, dst}, planner: mp}
	for i := range rows {
		it := e.moveItem(ctx, src, &rows[i])
		if it.Outcome == "" && !req.Prepare {
			it.Decision = firstDecision(refuseUndeclared(it, to), refuseStillDeclared(it, prepareOption()))
		}
		if it.Outcome == "" {
			it.Decision = firstDecision(refuseOperation(from), refuseOperation(to))
		}
		p.Items = append(p.Items, it)
	}
	e.readAndPlan(ctx, p, nil)
	notePrepared(p, mp.prepared, req.Prepare, prepareCommand())
	return p, nil
}

// movePlanner plans the move of an object of the source app to the target app, or with prepare the
// sync options that keep the source app from pruning it meanwhile.
type movePlanner struct {
	settings argocd.Settings
	to       plan.MoveTo
	prepare  bool
	// prepared are the preparations found in journals, by UID.
	prepared map[string]journal.Preparation
}

func (m movePlanner) Plan(it *Item, live *cluster.Object) plan.Plan {
	t := targetOf(it.App.Instance, live, it.Row)
	if m.prepare {
		return plan.BuildPrepare(m.settings, t)
	}
	return plan.BuildMove(m.settings, t, m.to, preparedMarks(m.prepared, live.UID))
}

// firstDecision is the first of ds that decides something.
func firstDecision(ds ...Decision) Decision {
	for _, d := range ds {
		if d.Outcome != "" {
			return d
		}
	}
	return Decision{}
}

// sameDestination returns the objects of the apps' destination cluster, and refuses apps that
// deploy to different clusters: tracking names an app, not a cluster, so moving an object to an
// app on another cluster would hand it to an app that cannot see it.
func (e *Engine) sameDestination(ctx context.Context, from, to argocd.Application) (cluster.Objects, error) {
	objects, err := e.ArgoCD.Destination(ctx, from)
	if err != nil {
		return nil, err
	}
	other, err := e.ArgoCD.Destination(ctx, to)
	if err != nil {
		return nil, err
	}
	a, b := objects.Info(), other.Info()
	same := a.Server != "" && a.Server == b.Server || a.Server == "" && b.Server == "" && a.Name == b.Name
	if !same {
		return nil, invalid("Application %s deploys to %s and %s to %s: resources move only between apps of the same destination cluster",
			from.Ref(), from.Destination, to.Ref(), to.Destination)
	}
	return objects, nil
}

// moveRows picks the rows of From to move: the named ones, or with All those To declares (every
// non-hook row with Prepare, before To declares anything).
func moveRows(ctx context.Context, from, to argocd.Application, req MoveRequest) ([]argocd.Resource, error) {
	if !req.All {
		rows, unknown := selectRows(from, req.Resources, false)
		if len(unknown) > 0 {
			return nil, invalid("Application %s lists no resource %s: name resources as `%s scan` or `argocd app resources` print them", from.Ref(), Quote(unknown[0].Raw), option.Program(ctx))
		}
		return rows, nil
	}
	declared := map[string]bool{}
	for _, r := range to.Resources {
		declared[r.Key()] = !r.RequiresPruning
	}
	var rows []argocd.Resource
	for _, r := range from.Resources {
		if !r.Hook && (req.Prepare || declared[r.Key()]) {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// moveItem is one row of the source app, resolved.
func (e *Engine) moveItem(ctx context.Context, src *AppRun, row *argocd.Resource) *Item {
	ref := cluster.Ref{Group: row.Group, Version: row.Version, Kind: row.Kind, Namespace: row.Namespace, Name: row.Name}
	it := &Item{App: src, Row: row, Objects: src.Objects, Ref: ref, Entry: -1}
	resolved, err := src.Objects.Resolve(ctx, row.Group, row.Kind, row.Version, row.Namespace, row.Name)
	if err != nil {
		it.Decision = Decision{OutcomeFailed, string(cluster.Classify(err)), err.Error()}
		return it
	}
	it.Ref = resolved
	return it
}

// targetOf is what the planner sees of a live object of the app with this instance.
func targetOf(instance string, live *cluster.Object, row *argocd.Resource) plan.Target {
	t := plan.Target{Instance: instance, Ref: live.Ref.ObjectRef(), Labels: live.Labels, Annotations: live.Annotations,
		OwnerReferences: live.Owners, Deleting: live.Deleting, ManagedFields: live.ManagedFields}
	if row != nil {
		t.RequiresPruning, t.Hook = row.RequiresPruning, row.Hook
	} else {
		t.Hook = argocd.IsHook(live.Annotations)
	}
	return t
}

// refuseUndeclared refuses a row the target app does not list as its own desired resource: the
// app's status lists every resource of its desired state (controller/state.go, CompareAppState:
// one row per target object, live or not), typically OutOfSync with a SharedResourceWarning while
// another app tracks it. A row requiring pruning there is not desired either.
func refuseUndeclared(it *Item, to argocd.Application) Decision {
	for _, r := range to.Resources {
		if r.Key() == it.Row.Key() && !r.RequiresPruning && !r.Hook {
			return Decision{}
		}
	}
	return Decision{OutcomeRefused, string(RefuseNotDeclared), fmt.Sprintf("Application %s does not declare %s (its status does not list it): after the move it would prune it; "+
		"commit the manifest to its source first, and wait until it lists the resource (OutOfSync, shared with %s)", to.Ref(), it.Row, it.App.Ref())}
}

// refuseStillDeclared refuses a row the source app still declares (it does not require pruning
// there): that app would see the object tracked by the other (a SharedResourceWarning,
// controller/state.go) and its next sync would write its own tracking back — the two apps fighting
// over it. prepare names the option that keeps the source app from pruning it meanwhile.
func refuseStillDeclared(it *Item, prepare string) Decision {
	if it.Row.RequiresPruning {
		return Decision{}
	}
	return Decision{OutcomeRefused, string(RefuseStillDeclared), fmt.Sprintf("Application %s still declares %s: after the move its next sync would take it back; commit its removal from %s's source first "+
		"(with %s before, so that it cannot prune it meanwhile)", it.App.Ref(), it.Row, it.App.Ref(), prepare)}
}

// refuseOperation refuses the rows of a move while a sync operation runs on one of the apps.
func refuseOperation(app argocd.Application) Decision {
	if !app.Operation {
		return Decision{}
	}
	return Decision{OutcomeRefused, string(RefuseOperationRunning), fmt.Sprintf("Application %s has a sync operation running (phase %s): "+
		"changing its resources now races the sync; wait for it to finish and run again", app.Ref(), orUnknown(app.OperationPhase))}
}

func preparedMarks(found map[string]journal.Preparation, uid string) *plan.Prepared {
	p, ok := found[uid]
	if !ok {
		return nil
	}
	after, _ := p.Change.Value()
	return &plan.Prepared{Before: p.Change.Before, After: after}
}

// notePrepared says, per moved object, whether a prepare journal was found: without one, the
// sync options are left as they are, whoever set them. command names the command that prepares.
func notePrepared(p *Planned, found map[string]journal.Preparation, prepare bool, command string) {
	if prepare {
		return
	}
	for _, it := range p.Items {
		if it.Live == nil {
			continue
		}
		if p, ok := found[it.Live.UID]; ok {
			it.Plan.Notes = append(it.Plan.Notes, "takes off the sync options "+command+" added (journal "+p.Path+")")
		} else if _, has := it.Live.Annotations[argocd.AnnotationSyncOptions]; has {
			it.Plan.Notes = append(it.Plan.Notes, "no "+command+" journal of this object on this machine: its sync options are left as they are")
		}
	}
}

// VerifyMove waits until Argo CD shows the move: the source app no longer lists the moved objects,
// and the target app lists them Synced, each in a comparison that started after the last patch.
// A prepare changes nothing Argo CD reports, so nothing is verified.
func (e *Engine) VerifyMove(ctx context.Context, p *Planned, done *Applied, timeout time.Duration) Verified {
	if p.Strategy != journal.StrategyMove || len(p.Apps) != 2 {
		return nil
	}
	moved := movedRows(p, done)
	if len(moved) == 0 {
		return nil
	}
	reqs := []verify.Request{{App: p.Apps[0].App, Rows: moved, Want: verify.Gone}, {App: p.Apps[1].App, Rows: moved, Want: verify.Adopted}}
	out := make(Verified, len(p.Apps))
	for i, v := range verify.Apps(ctx, e.ArgoCD, reqs, e.now(), e.verifyOptions(timeout), "") {
		out[i] = &v
	}
	return out
}

// movedRows are the status rows of the objects a run moved (or found moved already).
func movedRows(p *Planned, done *Applied) []argocd.Resource {
	var rows []argocd.Resource
	for i, it := range p.Items {
		if o := done.Items[i].Outcome; it.Row != nil && (o.Changed() || o == OutcomeUnchanged) {
			rows = append(rows, *it.Row)
		}
	}
	return rows
}
