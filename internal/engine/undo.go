package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/lastapplied"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
)

// Connect reaches the cluster a journal entry lives in; app is the entry's Application (Argo CD's
// API reaches objects only through their app).
type Connect func(ctx context.Context, c cluster.Info, app *journal.AppRef) (cluster.Objects, error)

// PlanUndo reads, for every entry of the journal not undone yet, the live object in the entry's
// cluster and decides which keys to put back: only keys that still hold what unprune wrote (a key
// someone has set differently since is left alone and reported), only on the object unprune changed
// (same UID), never tracking metadata naming another app or object than the entry's own, and
// tracking only for an app that exists, as the journal describes it, in the journal's Argo CD
// installation (reached with e.ArgoCDOf; the objects with e.Connect).
//
// The undo is a change like any other. An object's entries are restored last first (a move's
// marks go back on before its tracking does). Putting something back that lets an app delete —
// tracking handed back to an app that prunes on its own, a guard against prune taken off an object
// such an app tracks — waits for that app's comparison to show that it declares the object
// (expectDeclares); a rename journal's undo also writes the Applications back (planRenameUndo).
func (e *Engine) PlanUndo(ctx context.Context, rec *journal.Recorder) (*Change, error) {
	j := rec.Snapshot()
	var creates *journal.AppRef
	if j.Rename != nil {
		creates = &j.Rename.From
	}
	apps := checkApps(ctx, j, e.ArgoCDOf, readApplicationsHow(), creates)
	p := &Planned{Command: "undo", Strategy: j.Command, planner: undoPlanner{j: j, checks: apps.refusals}}
	runs := map[string]*AppRun{}
	byCluster := map[string][]*Item{}
	var clusters []string
	// later[i] counts the entries of entry i's object that come after it: those are restored first.
	later, seen := make([]int, len(j.Entries)), map[string]int{}
	for i := len(j.Entries) - 1; i >= 0; i-- {
		later[i] = seen[j.Entries[i].Object.UID]
		seen[j.Entries[i].Object.UID]++
	}
	for i, entry := range j.Entries {
		it := &Item{Ref: entry.Object.Ref(), Entry: i, Phase: later[i] * undoPhases}
		if a := entry.Application; a != nil {
			if runs[a.String()] == nil {
				runs[a.String()] = &AppRun{App: argocd.Application{Namespace: a.Namespace, Name: a.Name}, Instance: a.Instance}
				p.Apps = append(p.Apps, runs[a.String()])
			}
			it.App = runs[a.String()]
		}
		p.Items = append(p.Items, it)
		switch {
		case entry.State == journal.StateUndone:
			it.Decision = Decision{Outcome: OutcomeUnchanged, Message: "undone already"}
			continue
		case len(entry.Changes) == 0:
			it.Decision = Decision{Outcome: OutcomeUnchanged, Message: "nothing was changed (" + orUnknown(entry.Error) + ")"}
			continue
		}
		key := entry.Cluster
		if info, _ := j.ClusterOf(entry); info.Via == cluster.ViaArgoCDAPI && entry.Application != nil {
			key += "|" + entry.Application.String()
		}
		if _, ok := byCluster[key]; !ok {
			clusters = append(clusters, key)
		}
		byCluster[key] = append(byCluster[key], it)
	}
	connect := e.Connect
	if connect == nil {
		connect = func(context.Context, cluster.Info, *journal.AppRef) (cluster.Objects, error) {
			return nil, fmt.Errorf("this undo was given no way to reach the journal's clusters")
		}
	}
	parallel.ForEach(len(clusters), len(clusters), func(k int) {
		readUndo(ctx, j, byCluster[clusters[k]], connect, p.planner)
	})
	c := &Change{Planned: p, undoing: rec, info: &changeInfo{journalID: j.ID}}
	if j.Rename != nil {
		if err := e.planRenameUndo(ctx, c, j, apps); err != nil {
			return nil, err
		}
		return c, nil
	}
	c.Steps = e.undoSteps(ctx, j, c, apps)
	return c, nil
}

// undoJournal plans the undo of the journal at path: what a run whose check failed puts back.
func (e *Engine) undoJournal(ctx context.Context, path string) (*Change, error) {
	rec, err := e.Journals.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := e.PlanUndo(ctx, rec)
	if err != nil {
		_ = rec.Close()
	}
	return c, err
}

// undoPlanner plans the restore of a journal entry (the item's Entry) on its live object.
type undoPlanner struct {
	j      *journal.Journal
	checks appChecks
}

func (u undoPlanner) Plan(it *Item, live *cluster.Object) plan.Plan {
	entry := u.j.Entries[it.Entry]
	return u.checks.guard(u.j, entry, undoPlan(u.j, entry, live))
}

// readUndo reads the objects of one cluster's entries and plans their restore.
func readUndo(ctx context.Context, j *journal.Journal, items []*Item, connect Connect, planner Planner) {
	first := j.Entries[items[0].Entry]
	info, _ := j.ClusterOf(first)
	objects, err := connect(ctx, info, first.Application)
	if err != nil {
		for _, it := range items {
			it.Decision = Decision{OutcomeFailed, string(cluster.Classify(err)), err.Error()}
		}
		return
	}
	refs := make([]cluster.Ref, len(items))
	for i, it := range items {
		refs[i] = it.Ref
		if resolved, err := objects.Resolve(ctx, it.Ref.Group, it.Ref.Kind, it.Ref.Version, it.Ref.Namespace, it.Ref.Name); err == nil {
			refs[i] = resolved
		}
	}
	for i, res := range objects.Read(ctx, refs) {
		it := items[i]
		it.Objects, it.Ref = objects, refs[i]
		it.Live, it.Plan, it.Decision = decide(planner, it, res, "the object no longer exists")
	}
}

// undoMarks records restored entries as undone in the journal being undone.
type undoMarks struct{ rec *journal.Recorder }

func (m undoMarks) applied(_ int, it *Item, done plan.Plan, _ string) error {
	if len(done.Notes) > 0 {
		return nil // some keys were left alone: the entry is not fully undone
	}
	return m.rec.MarkUndone(it.Entry)
}
func (undoMarks) failed(int, *Item, string, bool) error         { return nil }
func (undoMarks) skipped(int, *Item, string) error              { return nil }
func (undoMarks) replanned(int, *Item, plan.Plan, string) error { return nil }

// undoPlan decides which of an entry's changes to reverse on the live object. The plan's Changes
// are the inverse changes to apply; its Notes the keys left alone; a Refusal means the whole entry
// is left alone.
func undoPlan(j *journal.Journal, e journal.Entry, live *cluster.Object) plan.Plan {
	p := plan.Plan{}
	refuse := func(code plan.RefusalCode, format string, args ...any) plan.Plan {
		p.Refusal = &plan.Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
		return p
	}
	if live.UID != e.Object.UID {
		return refuse("Recreated", "the object was recreated (uid %s, the journal recorded %s): it is not the object unprune changed", live.UID, e.Object.UID)
	}
	for _, c := range e.Changes {
		if err := restorable(j, e, c); err != nil {
			return refuse("ForeignTracking", "the journal would write back %s: %v; the journal may have been edited — nothing of this entry is restored", c.Inverse(), err)
		}
	}
	for _, c := range e.Changes {
		if c.ManagedFields != nil {
			continue // after the tracking keys: undoManagedFields
		}
		current := live.Annotations
		if c.Field == journal.FieldLabel {
			current = live.Labels
		}
		v, has := current[c.Key]
		switch {
		case c.Expects(v, has):
			inverse, err := inverseOf(c, v)
			if err != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("%s %s left as is: %v", c.Field, c.Key, err))
				continue
			}
			p.Changes = append(p.Changes, inverse)
		case c.Found(v, has):
			// Back to what unprune found already.
		default:
			p.Notes = append(p.Notes, fmt.Sprintf("%s %s is now %s, neither what unprune wrote nor what it found: left as is",
				c.Field, c.Key, describeValue(c, v, has)))
		}
	}
	p = undoManagedFields(p, e, live, len(p.Notes) == 0)
	if len(p.Changes) == 0 && len(p.Notes) > 0 {
		return refuse("ChangedSince", "%s", strings.Join(p.Notes, "; "))
	}
	return p
}

func describeValue(c journal.Change, v string, has bool) string {
	switch {
	case !has:
		return "absent"
	case c.Embedded != nil:
		return "another configuration"
	}
	return Quote(v)
}

// inverseOf is the change that puts c back, given the live value (which holds what c wrote). For an
// embedded configuration the value to write is rebuilt from the live one with the removed keys put
// back, and must match the digest of what was there.
func inverseOf(c journal.Change, live string) (journal.Change, error) {
	inv := c.Inverse()
	if c.Embedded == nil {
		return inv, nil
	}
	doc, err := lastapplied.Parse(live)
	if err != nil {
		return inv, err
	}
	for _, k := range c.Embedded.Removed {
		if doc.Has(string(k.Field), k.Key) {
			return inv, fmt.Errorf("the embedded configuration holds %s %s again", k.Field, k.Key)
		}
		doc.Insert(string(k.Field), k.Key, k.Value)
	}
	restored, err := doc.Encode()
	if err != nil {
		return inv, err
	}
	e, err := inv.Embedded.WithValues(live, restored)
	if err != nil {
		return inv, fmt.Errorf("cannot rebuild the configuration exactly: %w", err)
	}
	inv.Embedded = &e
	return inv, nil
}

// restorable refuses changes whose restore would write tracking metadata naming another app or
// another object than the entry's: a journal is an input, and an edited one must not be able to
// hand an object to an app of the editor's choosing.
func restorable(j *journal.Journal, e journal.Entry, c journal.Change) error {
	before := c.Before
	values := map[string]string{}
	if before != nil {
		values[c.Key] = *before
	}
	if c.Embedded != nil {
		for _, k := range c.Embedded.Removed {
			if err := restorableValue(j, e, k.Field, k.Key, k.Value); err != nil {
				return err
			}
		}
		return nil
	}
	if before == nil {
		return nil
	}
	return restorableValue(j, e, c.Field, c.Key, *before)
}

func restorableValue(j *journal.Journal, e journal.Entry, field journal.Field, key, value string) error {
	instance := ""
	if e.Application != nil {
		instance = e.Application.Instance
	}
	labelKey := argocd.DefaultInstanceLabelKey
	installationID := ""
	if j.ArgoCD != nil {
		if j.ArgoCD.InstanceLabelKey != "" {
			labelKey = j.ArgoCD.InstanceLabelKey
		}
		installationID = j.ArgoCD.InstallationID
	}
	switch {
	case field == journal.FieldAnnotation && key == argocd.AnnotationTrackingID:
		id, ok := argocd.ParseTrackingID(value)
		ref := e.Object.Ref().ObjectRef()
		ref.ClusterScoped = e.Object.Namespace == ""
		switch {
		case !ok:
			return fmt.Errorf("the tracking-id %s is malformed", Quote(value))
		case instance == "" || id.Instance != instance:
			return fmt.Errorf("the tracking-id names app instance %s, not the entry's %s", Quote(id.Instance), Quote(instance))
		case !id.RefersTo(ref):
			return fmt.Errorf("the tracking-id names %s/%s %s, not this object", id.Group, id.Kind, Quote(id.Name))
		}
	case field == journal.FieldLabel && key == labelKey:
		truncated, _ := argocd.TruncatedLabelValue(instance)
		if instance == "" || (value != instance && value != truncated) {
			return fmt.Errorf("the label names app instance %s, not the entry's %s", Quote(value), Quote(instance))
		}
	case field == journal.FieldAnnotation && key == argocd.AnnotationInstallationID:
		if value != installationID {
			return fmt.Errorf("the installation-id %s is not the installation's %s", Quote(value), Quote(installationID))
		}
	}
	return nil
}
