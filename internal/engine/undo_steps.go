package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

// undoPhases spaces an undo's phases: an object's entries are restored last first (phase
// later*undoPhases), and within one such phase the objects whose restore lets an app delete are
// patched after the others, app by app, each after a check of that app.
const undoPhases = 1000

// RefuseUnchecked: what undo would put back lets an app delete, and undo cannot ask Argo CD
// whether it would (the app cannot be read).
const RefuseUnchecked plan.RefusalCode = "DeletionUnchecked"

// undoSteps plans the steps of a journal's undo (not a rename's): the phases in order, each object
// that lets an app delete once restored in a phase of its own app, after a check that the app
// declares it.
func (e *Engine) undoSteps(ctx context.Context, j *journal.Journal, c *Change, apps undoApps) []*Step {
	lets := e.undoLets(ctx, j, c.Planned, apps)
	byPhase := map[int][]int{}
	for i, it := range c.Items {
		if it.Outcome != OutcomePlanned {
			continue
		}
		if a, ok := lets.get(i); ok {
			it.Phase += 1 + slices.Index(lets.order, a.Ref())
		}
		byPhase[it.Phase] = append(byPhase[it.Phase], i)
	}
	phases := slices.Sorted(maps.Keys(byPhase))
	if len(phases) == 0 {
		phases = []int{0}
	}
	var steps []*Step
	for _, ph := range phases {
		step := &Step{Kind: StepPatch, Phase: ph, Why: "restore what the journal records"}
		if ph%undoPhases > 0 {
			app := lets.apps[lets.order[ph%undoPhases-1]]
			name := AppName{Namespace: app.Namespace, Name: app.Name}
			var rows []argocd.Resource
			for _, i := range byPhase[ph] {
				rows = append(rows, rowOf(c.Items[i]))
			}
			steps = append(steps, &Step{Kind: StepCheck, App: name, Expect: expectDeclares(rows, undoFix(name)),
				Why: fmt.Sprintf("Application %s prunes automatically: its comparison must show that it declares what undo gives back to it", name)})
			step.Lets, step.App = []AppName{name}, name
			step.Why = fmt.Sprintf("restore what the journal records on %s resources of %s", countOf(rows), name)
		}
		steps = append(steps, step)
	}
	return steps
}

func countOf(rows []argocd.Resource) string {
	if len(rows) == 1 {
		return "1"
	}
	return fmt.Sprint(len(rows))
}

func undoFix(app AppName) string {
	return fmt.Sprintf("Nothing of it was restored: Application %s would prune it at once. Switch %s's automated prune off first, or put its manifest back in %s's source, and undo again", app, app, app)
}

// rowOf is an item's object as its app's status lists it.
func rowOf(it *Item) argocd.Resource {
	if it.Row != nil {
		return *it.Row
	}
	return argocd.Resource{Group: it.Ref.Group, Version: it.Ref.Version, Kind: it.Ref.Kind, Namespace: it.Ref.Namespace, Name: it.Ref.Name}
}

// letting maps items (by index) to the app their restore lets delete.
type letting struct {
	byItem map[int]argocd.Application
	apps   map[string]argocd.Application
	order  []string
}

func (l *letting) add(i int, app argocd.Application) {
	if _, ok := l.apps[app.Ref()]; !ok {
		l.apps[app.Ref()] = app
		l.order = append(l.order, app.Ref())
	}
	l.byItem[i] = app
}

func (l letting) get(i int) (argocd.Application, bool) {
	a, ok := l.byItem[i]
	return a, ok
}

// undoLets finds, for each planned item, the app its restore lets delete: the restored tracking's
// app, when that app prunes on its own; or, when the restore takes a guard against prune off the
// object (Prune=false or Prune=confirm in its sync-options, the protection label), the app that
// tracks it, when that app prunes on its own. An object that keeps a Prune=false or Prune=confirm of
// its own after the restore lets nothing delete: Argo CD reads them from the live object at prune
// time, before any app-level option (gitops-engine pkg/sync/sync_context.go). An item whose app
// cannot be read is refused.
func (e *Engine) undoLets(ctx context.Context, j *journal.Journal, p *Planned, apps undoApps) letting {
	l := letting{byItem: map[int]argocd.Application{}, apps: map[string]argocd.Application{}}
	settings := e.Settings
	if e.ArgoCD == nil {
		settings = journalSettings(j)
	}
	for i, it := range p.Items {
		if it.Outcome != OutcomePlanned || it.Live == nil {
			continue
		}
		labels, annotations := afterChanges(it.Live, it.Plan.Changes)
		if pruneGuarded(annotations[argocd.AnnotationSyncOptions]) {
			continue
		}
		entry := j.Entries[it.Entry]
		if entry.Application != nil && writesTracking(j, it.Plan.Changes) {
			if app, ok := apps.live[entry.Application.String()]; ok && app.Automated && app.AutoPrune {
				l.add(i, app)
			}
			continue
		}
		if !weakensGuard(it.Live, labels, annotations) {
			continue
		}
		own := settings.Owner(labels, annotations, it.Ref.ObjectRef())
		if !own.Tracked {
			continue
		}
		app, err := e.appOfInstance(ctx, apps, own.Instance)
		switch {
		case err != nil:
			it.Decision = Decision{OutcomeRefused, string(RefuseUnchecked), fmt.Sprintf("putting the guard back off lets app instance %q prune it, and undo cannot read that app "+
				"to see whether it would: %v; run the undo where Argo CD can be read (%s)", own.Instance, err, readApplicationsHow())}
		case app != nil && app.Automated && app.AutoPrune:
			l.add(i, *app)
		}
	}
	return l
}

// appOfInstance reads the app Argo CD tracks as instance ("name", or "namespace_name" for an app
// outside Argo CD's namespace); nil when there is none.
func (e *Engine) appOfInstance(ctx context.Context, apps undoApps, instance string) (*argocd.Application, error) {
	argo := e.ArgoCD
	if argo == nil {
		argo = apps.argo
	}
	if argo == nil {
		if apps.argoErr != nil {
			return nil, apps.argoErr
		}
		return nil, fmt.Errorf("no Argo CD to ask")
	}
	ns, name, found := strings.Cut(instance, "_")
	if !found {
		ns, name = argo.Namespace(), instance
	}
	app, err := argo.GetApplication(ctx, ns, name)
	if err != nil {
		if cluster.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return &app, nil
}

// pruneGuarded reports sync options of the object's own that keep any prune away: Prune=false, or
// Prune=confirm (the prune waits for an approval).
func pruneGuarded(syncOptions string) bool {
	return argocd.HasOption(syncOptions, argocd.OptionPruneDisabled) || argocd.HasOption(syncOptions, argocd.OptionPruneConfirm)
}

// weakensGuard reports a restore that takes a guard against prune off: a Prune option gone from
// the sync-options, or the protection label removed.
func weakensGuard(live *cluster.Object, labels, annotations map[string]string) bool {
	if pruneGuarded(live.Annotations[argocd.AnnotationSyncOptions]) && !pruneGuarded(annotations[argocd.AnnotationSyncOptions]) {
		return true
	}
	_, had := live.Labels[guard.ProtectLabel]
	_, has := labels[guard.ProtectLabel]
	return had && !has
}

// afterChanges are an object's labels and annotations once changes are applied.
func afterChanges(live *cluster.Object, changes []journal.Change) (map[string]string, map[string]string) {
	labels, annotations := maps.Clone(live.Labels), maps.Clone(live.Annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, c := range changes {
		m := annotations
		switch c.Field {
		case journal.FieldLabel:
			m = labels
		case journal.FieldAnnotation:
		default:
			continue
		}
		if v, has := c.Value(); has {
			m[c.Key] = v
		} else {
			delete(m, c.Key)
		}
	}
	return labels, annotations
}

// journalSettings are the tracking settings a journal recorded (both methods as candidates when it
// recorded none).
func journalSettings(j *journal.Journal) argocd.Settings {
	if j.ArgoCD == nil || j.ArgoCD.TrackingMethod == "" {
		return argocd.Settings{Ambiguous: true, InstanceLabelKey: argocd.DefaultInstanceLabelKey}
	}
	s := argocd.Settings{Method: argocd.Method(j.ArgoCD.TrackingMethod), MethodConfigured: true,
		InstanceLabelKey: j.ArgoCD.InstanceLabelKey, InstallationID: j.ArgoCD.InstallationID}
	if s.InstanceLabelKey == "" {
		s.InstanceLabelKey = argocd.DefaultInstanceLabelKey
	}
	return s
}
