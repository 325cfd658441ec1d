package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// MoveRequest is what `unprune move` is asked to do.
type MoveRequest struct {
	From, To  AppName
	Resources []ResourceArg
	// All selects every resource of From that To declares (and every object a prepare marked that
	// To has taken over already); with Prepare, every resource of From (hooks excepted).
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

// The phases of a move: the tracking handed over, then the marks `move --prepare` placed taken off.
const (
	phaseTracking = 0
	phaseMarks    = 1
)

// PlanMove reads both apps and the selected objects and plans the move as a change. Without
// Prepare: every object's tracking handed from From to To (after To's comparison shows it declares
// them), then — once To's comparison shows it declares them and From's no longer lists them to
// prune — the sync options a prepare added taken off; an object To has taken over already (its
// automated sync applied it) only has its marks taken off. With Prepare: the sync options that keep
// From from pruning it merged in, and From's comparison must show it does not see them (Argo CD
// would write its manifest's value back over a mark it sees). Nothing is changed by planning.
func (e *Engine) PlanMove(ctx context.Context, req MoveRequest) (*Change, error) {
	apps, err := e.resolveApps(ctx, []AppName{req.From, req.To}, nil)
	if err != nil {
		return nil, err
	}
	if len(apps) != 2 {
		return nil, &RequestError{Kind: SameApp, Err: fmt.Errorf("%s holds the resources already: name another app", apps[0].Ref())}
	}
	// The apps' status decides what moves: taken from comparisons Argo CD starts now, not from
	// whatever it compared last (after the commit, the target's automated sync may have taken the
	// objects over before the source app was compared again).
	apps, warnings := e.freshlyCompared(ctx, apps)
	from, to := apps[0], apps[1]
	src := &AppRun{App: from, Instance: from.Instance(e.ArgoCD.Namespace())}
	dst := &AppRun{App: to, Instance: to.Instance(e.ArgoCD.Namespace())}
	if src.Objects, err = e.sameDestination(ctx, from, to); err != nil {
		return nil, err
	}
	dst.Objects = src.Objects
	mp := movePlanner{settings: e.Settings, to: plan.MoveTo{Instance: dst.Instance, DestinationNamespace: to.Destination.Namespace},
		prepare: req.Prepare, replace: slices.Contains(from.SyncOptions, "Replace=true"), prepared: map[string]journal.Preparation{}}
	if !req.Prepare && e.Journals != nil {
		mp.prepared = e.Journals.Preparations(journal.AppRef{Namespace: from.Namespace, Name: from.Name})
	}
	p := &Planned{Command: journal.CommandMove, Strategy: journal.StrategyMove, Apps: []*AppRun{src, dst}, planner: mp, AllOrNothing: true, Warnings: warnings}
	c := &Change{Planned: p, rollback: true}
	if req.Prepare {
		p.Strategy = journal.StrategyPrepare
		return c, e.planPrepare(ctx, c, req)
	}
	return c, e.planHandover(ctx, c, req, mp.prepared)
}

// planPrepare plans `move --prepare`: the marks on each selected resource of From, then a check
// that From's comparison does not see them.
func (e *Engine) planPrepare(ctx context.Context, c *Change, req MoveRequest) error {
	src := c.Apps[0]
	rows, err := moveRows(ctx, src.App, c.Apps[1].App, req)
	if err != nil {
		return err
	}
	for i := range rows {
		it := e.moveItem(ctx, src, &rows[i])
		if it.Outcome == "" {
			it.Decision = refuseOperation(src.App)
		}
		c.Items = append(c.Items, it)
	}
	e.readAndPlan(ctx, c.Planned, nil)
	var marked []argocd.Resource
	for _, it := range c.Items {
		if it.Outcome == OutcomePlanned {
			marked = append(marked, *it.Row)
		}
	}
	name := AppName{Namespace: src.App.Namespace, Name: src.App.Name}
	c.Steps = []*Step{
		{Kind: StepPatch, App: name, Phase: phaseTracking, Why: "merge Prune=false,Delete=false into each resource's argocd.argoproj.io/sync-options"},
		{Kind: StepCheck, App: name, Expect: expectUnchanged(marked, markFix(name)), Live: e.marksPresent(c.Planned),
			Why: fmt.Sprintf("Argo CD's comparison of %s does not see the marks (its manifests do not write that annotation), and they are still there", name)},
	}
	return nil
}

// markFix says what to do when Argo CD sees (and so resets) a mark.
func markFix(app AppName) string {
	return fmt.Sprintf("Argo CD writes its manifest's value back over a mark it sees, so the marks were taken off again. Put Prune=false,Delete=false into the sync-options "+
		"annotation of the manifests in %s's source (a commit of its own, synced before the move's commit), or, on Argo CD v3.4 or later, set syncPolicy.syncOptions "+
		"[Prune=false, Delete=false] on %s until the move is done", app, app)
}

// marksPresent reads the marked objects again: a mark Argo CD's self-heal wrote over before the
// comparison the check judged shows no difference from git any more, yet it is gone.
func (e *Engine) marksPresent(p *Planned) func(ctx context.Context) *Mismatch {
	return func(ctx context.Context) *Mismatch {
		var gone []string
		for _, it := range p.Items {
			if it.Outcome != OutcomePlanned {
				continue
			}
			live, err := it.Objects.Get(ctx, it.Ref)
			if err != nil {
				gone = append(gone, fmt.Sprintf("%s could not be read again: %v", it.Ref, err))
				continue
			}
			for _, o := range plan.KeepSyncOptions() {
				if !argocd.HasOption(live.Annotations[argocd.AnnotationSyncOptions], o) {
					gone = append(gone, fmt.Sprintf("%s no longer has %s", it.Ref, o))
				}
			}
		}
		if len(gone) == 0 {
			return nil
		}
		return &Mismatch{Summary: "the marks did not hold", Details: gone, Fix: markFix(AppName{Namespace: p.Apps[0].App.Namespace, Name: p.Apps[0].App.Name})}
	}
}

// planHandover plans the move itself: the tracking of each selected resource handed to To, then
// the marks taken off.
func (e *Engine) planHandover(ctx context.Context, c *Change, req MoveRequest, prepared map[string]journal.Preparation) error {
	src, dst := c.Apps[0], c.Apps[1]
	from, to := src.App, dst.App
	rows, taken, err := handoverRows(ctx, from, to, req, prepared)
	if err != nil {
		return err
	}
	for i := range rows {
		it := e.moveItem(ctx, src, &rows[i])
		if it.Outcome == "" {
			it.Decision = firstDecision(refuseUndeclared(it, to), refuseStillDeclared(it, prepareOption()), refuseOperation(from), refuseOperation(to))
		}
		c.Items = append(c.Items, it)
	}
	for i := range taken {
		// Taken over already: To's automated sync applied the object, and its tracking is To's.
		it := e.moveItem(ctx, dst, &taken[i])
		it.App, it.Phase = src, phaseMarks
		if it.Outcome == "" {
			it.Decision = firstDecision(refuseOperation(from), refuseOperation(to))
		}
		c.Items = append(c.Items, it)
	}
	e.readAndPlan(ctx, c.Planned, nil)
	c.Items = append(c.Items, marksItems(c.Items, c.planner)...)
	c.Steps = handoverSteps(c)
	c.verify = func(done *Applied) []appWait {
		moved := movedRows(c.Planned, done)
		if len(moved) == 0 {
			return nil
		}
		return []appWait{{app: 0, req: verify.Request{App: from, Rows: moved, Want: verify.Gone}}, {app: 1, req: verify.Request{App: to, Rows: moved, Want: verify.Adopted}}}
	}
	return nil
}

// marksItems are, for each object whose tracking is handed over and that a prepare marked, a second
// item taking the marks off in phase 1 (once Argo CD has shown the handover).
func marksItems(items []*Item, planner Planner) []*Item {
	var out []*Item
	for _, it := range items {
		if it.Phase != phaseTracking || it.Live == nil || it.Outcome != OutcomePlanned && it.Outcome != OutcomeUnchanged {
			continue
		}
		next := *it
		next.Phase = phaseMarks
		marks := planner.Plan(&next, it.Live)
		if len(marks.Changes) == 0 && marks.Refusal == nil {
			continue
		}
		next.Plan, next.Decision = marks, Decision{Outcome: OutcomePlanned}
		if marks.Refusal != nil {
			next.Decision = Decision{OutcomeRefused, string(marks.Refusal.Code), marks.Refusal.Message}
		}
		out = append(out, &next)
	}
	return out
}

// handoverSteps are a move's steps: To's comparison shows it declares the objects; their tracking
// handed over; To's comparison shows it still declares them and From's no longer lists them to
// prune; the marks taken off.
func handoverSteps(c *Change) []*Step {
	from, to := c.Apps[0].App, c.Apps[1].App
	src, dst := AppName{Namespace: from.Namespace, Name: from.Name}, AppName{Namespace: to.Namespace, Name: to.Name}
	var tracking, marks []argocd.Resource
	for _, it := range c.Items {
		if it.Outcome != OutcomePlanned || it.Row == nil {
			continue
		}
		if it.Phase == phaseTracking {
			tracking = append(tracking, *it.Row)
		} else {
			marks = append(marks, *it.Row)
		}
	}
	fix := fmt.Sprintf("Nothing was deleted. Commit the resources' manifests to %s's source and wait until it lists them, then run the move again", dst)
	var steps []*Step
	if len(tracking) > 0 {
		steps = append(steps,
			&Step{Kind: StepCheck, App: dst, Expect: expectDeclares(tracking, fix),
				Why: fmt.Sprintf("Argo CD's comparison of %s declares every resource before it gets them", dst)},
			&Step{Kind: StepPatch, App: dst, Phase: phaseTracking, Lets: []AppName{dst},
				Why: fmt.Sprintf("rewrite each resource's tracking to %s", dst)})
	}
	if len(marks) > 0 {
		steps = append(steps,
			&Step{Kind: StepCheck, App: dst, Expect: expectDeclares(marks, fix),
				Why: fmt.Sprintf("%s's comparison declares every resource: it may keep them without marks", dst)},
			&Step{Kind: StepCheck, App: src, Expect: expectNotPruning(marks, fmt.Sprintf("Commit the removal of their manifests from %s's source first", src)),
				Why: fmt.Sprintf("%s's comparison no longer lists them to prune", src)},
			&Step{Kind: StepPatch, App: dst, Phase: phaseMarks, Lets: []AppName{dst, src},
				Why: "take off the sync options " + prepareCommand() + " added"})
	}
	return steps
}

// movePlanner plans the move of an object of the source app to the target app (phase 0), the marks
// taken off (phase 1), or with prepare the sync options that keep the source app from pruning it.
type movePlanner struct {
	settings argocd.Settings
	to       plan.MoveTo
	prepare  bool
	// replace is true when the source app syncs with Replace=true.
	replace bool
	// prepared are the preparations found in journals, by UID.
	prepared map[string]journal.Preparation
}

func (m movePlanner) Plan(it *Item, live *cluster.Object) plan.Plan {
	t := targetOf(it.App.Instance, live, it.Row)
	prepared, found := m.prepared[live.UID]
	switch {
	case m.prepare:
		return plan.BuildPrepare(m.settings, t, m.replace)
	case it.Phase == phaseMarks:
		p := plan.BuildUnprepare(t, preparedMarks(m.prepared, live.UID))
		if found {
			p.Notes = append(p.Notes, "takes off the sync options "+prepareCommand()+" added (journal "+prepared.Path+")")
		}
		return p
	}
	p := plan.BuildMove(m.settings, t, m.to)
	if _, has := live.Annotations[argocd.AnnotationSyncOptions]; has && !found {
		p.Notes = append(p.Notes, "no "+prepareCommand()+" journal of this object on this machine: its sync options are left as they are")
	}
	return p
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

// moveRows picks the rows of From to prepare: the named ones, or with All every non-hook row.
func moveRows(ctx context.Context, from, _ argocd.Application, req MoveRequest) ([]argocd.Resource, error) {
	if !req.All {
		rows, unknown := selectRows(from, req.Resources, false)
		if len(unknown) > 0 {
			return nil, invalid("Application %s lists no resource %s: name resources as `%s scan` or `argocd app resources` print them", from.Ref(), Quote(unknown[0].Raw), option.Program(ctx))
		}
		return rows, nil
	}
	var rows []argocd.Resource
	for _, r := range from.Resources {
		if !r.Hook {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// handoverRows picks what a move hands over: the rows of From to move (the named ones, or with All
// those To declares), and the rows of To that it has taken over already from From (its automated
// sync applied them; From lists them no more): those named that only To lists, or with All those of
// objects a prepare of From marked.
func handoverRows(ctx context.Context, from, to argocd.Application, req MoveRequest, prepared map[string]journal.Preparation) (rows, taken []argocd.Resource, err error) {
	declared := map[string]argocd.Resource{}
	for _, r := range to.Resources {
		if !r.RequiresPruning && !r.Hook {
			declared[r.Key()] = r
		}
	}
	if !req.All {
		rows, unknown := selectRows(from, req.Resources, false)
		for _, u := range unknown {
			r, ok := findRow(to, u)
			if !ok {
				return nil, nil, invalid("neither %s nor %s lists a resource %s: name resources as `%s scan` or `argocd app resources` print them",
					from.Ref(), to.Ref(), Quote(u.Raw), option.Program(ctx))
			}
			taken = append(taken, r)
		}
		return rows, taken, nil
	}
	listed := map[string]bool{}
	for _, r := range from.Resources {
		listed[r.Key()] = true
		if _, ok := declared[r.Key()]; ok && !r.Hook {
			rows = append(rows, r)
		}
	}
	for _, p := range prepared {
		key := p.Object.Group + "/" + p.Object.Kind + "/" + p.Object.Namespace + "/" + p.Object.Name
		if r, ok := declared[key]; ok && !listed[key] {
			taken = append(taken, r)
		}
	}
	slices.SortFunc(taken, func(a, b argocd.Resource) int { return compareKeys(a.Key(), b.Key()) })
	return rows, taken, nil
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// findRow is the row of app an argument names, not requiring pruning and not a hook.
func findRow(app argocd.Application, arg ResourceArg) (argocd.Resource, bool) {
	for _, r := range app.Resources {
		if arg.Matches(r) && !r.RequiresPruning && !r.Hook {
			return r, true
		}
	}
	return argocd.Resource{}, false
}

// moveItem is one row, resolved in the app's cluster.
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
		t.Declared = !row.RequiresPruning && !row.Hook
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

// movedRows are the status rows of the objects a run moved (or found moved already).
func movedRows(p *Planned, done *Applied) []argocd.Resource {
	var rows []argocd.Resource
	seen := map[string]bool{}
	for i, it := range p.Items {
		if o := done.Items[i].Outcome; it.Row != nil && (o.Changed() || o == OutcomeUnchanged) && !seen[it.Row.Key()] {
			seen[it.Row.Key()] = true
			rows = append(rows, *it.Row)
		}
	}
	return rows
}

// freshlyCompared asks Argo CD to compare each app and returns them as comparisons started after now
// show them; an app Argo CD does not compare within the check timeout is returned as last compared,
// with a warning.
func (e *Engine) freshlyCompared(ctx context.Context, apps []argocd.Application) ([]argocd.Application, []string) {
	now := e.now()
	out := make([]argocd.Application, len(apps))
	warnings := make([]string, len(apps))
	parallel.ForEach(len(apps), len(apps), func(i int) {
		out[i] = apps[i]
		app, fresh, err := e.compared(ctx, AppName{Namespace: apps[i].Namespace, Name: apps[i].Name}, now, now.Add(e.checkTimeout()))
		switch {
		case err != nil:
			warnings[i] = fmt.Sprintf("could not read Application %s again: %v; planned from its last comparison", apps[i].Ref(), err)
		case !fresh:
			warnings[i] = fmt.Sprintf("Argo CD did not compare Application %s within %s; planned from its last comparison", apps[i].Ref(), e.checkTimeout())
		default:
			out[i] = app
		}
	})
	var said []string
	for _, w := range warnings {
		if w != "" {
			said = append(said, w)
		}
	}
	return out, said
}
