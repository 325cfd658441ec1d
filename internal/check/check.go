// Package check answers, before a change is merged, what it would make Argo CD do with objects
// that already exist: which live objects the app would adopt (taking over an object it does not
// track — the first half of the incident) and which it would prune (the second half), with how bad
// each would be and what guards it. It reads only.
package check

import (
	"context"
	"fmt"
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

// Kind is what the change does to an object.
type Kind string

const (
	Adoption Kind = "Adoption"
	Prune    Kind = "Prune"
)

// Reason says more precisely what happens.
type Reason string

const (
	// Untracked: the object exists and no app tracks it; Argo CD takes it over, and removing it from
	// git later deletes it.
	Untracked Reason = "Untracked"
	// TrackedByOtherApp: another app tracks the object; the two apps will fight over it.
	TrackedByOtherApp Reason = "TrackedByOtherApp"
	// CopiedTracking: the object carries a tracking-id naming another object (copied metadata);
	// Argo CD will write its own.
	CopiedTracking Reason = "CopiedTracking"
	// DeletedAtNextSync: the app prunes automatically; the next sync deletes the object.
	DeletedAtNextSync Reason = "DeletedAtNextSync"
	// LeftRequiringPruning: the app does not prune automatically; the object stays, requiring
	// pruning, until a sync with PRUNE ticked deletes it.
	LeftRequiringPruning Reason = "LeftRequiringPruning"
	// DeletedWithNamespace: the same prune deletes the object's Namespace, and the namespace
	// controller the object with it, whatever guards it carries.
	DeletedWithNamespace Reason = "DeletedWithNamespace"
)

// Item is one adoption or prune.
type Item struct {
	Kind     Kind
	Reason   Reason
	Resource argocd.Resource
	Cluster  cluster.Info
	// OtherInstance is the app instance that tracks the object now (TrackedByOtherApp).
	OtherInstance string
	Risk          risk.Class
	RiskWhy       string
	Contents      *risk.Contents
	Guards        []risk.Guard
	// Guarded: for a prune, a hard guard stops the deletion.
	Guarded bool
	Notes   []string
	Error   string
	// judged is the object as the deletion verdict read it, and the verdict.
	judged *judged
}

type judged struct {
	object  deletion.Object
	verdict deletion.Verdict
}

// Report is a whole check.
type Report struct {
	App      argocd.Application
	Instance string
	Cluster  cluster.Info
	Items    []Item
	// Skipped are manifests Argo CD would not manage as ordinary resources (hooks, excluded kinds,
	// kinds the project does not permit), with why.
	Skipped  []string
	Warnings []string
	// Apps are the Applications the change deletes or renames, with what that does to their
	// resources (apps of apps, ApplicationSets).
	Apps []AppChange
	// Set is the ApplicationSet a check of one found (RunSet); nil for an Application's check.
	Set *SetInfo
	// Answers say where each kind of answer came from: Argo CD itself, or unprune offline.
	Answers []Answer
	// Version is the Argo CD version the check judged for, nil when unknown.
	Version *argocd.Version
	// MovedOut are the objects this app would prune that the same change gives to another app
	// (FoldMoves): each is a Move item in that app's report.
	MovedOut []MovedOut
}

// MovedOut is an object the change moves from this app to another.
type MovedOut struct {
	Resource argocd.Resource
	// To is the app it moves to.
	To string
}

// Answer is where one kind of answer of a check came from.
type Answer struct {
	// Question is Manifests (what the change makes the app render), Generation (the Applications an
	// ApplicationSet generates) or Deletions (what Argo CD deletes, judged on the live objects).
	Question string
	// By is ArgoCD (argocd-server answered), Given (the user's rendered manifests) or Offline
	// (unprune computed it from Argo CD's rules and the live objects).
	By     string
	Server string
	// For names what it was about (an ApplicationSet), when not the whole check.
	For string
}

// Questions and sources of answers.
const (
	QuestionManifests  = "Manifests"
	QuestionGeneration = "Generation"
	QuestionDeletions  = "Deletions"

	ByArgoCD  = "ArgoCD"
	ByGiven   = "Given"
	ByOffline = "Offline"
)

// Run compares the desired manifests with the live objects of the app's destination and with what
// the app tracks today, under Argo CD's rules. oracle, when not nil, is argocd-server, which then
// generates the ApplicationSets the manifests change.
func Run(ctx context.Context, argo cluster.ArgoCD, s cluster.Settings, app argocd.Application, manifests []Manifest, oracle cluster.Oracle) (Report, error) {
	rep := Report{App: app, Instance: app.Instance(argo.Namespace()), Answers: []Answer{{Question: QuestionDeletions, By: ByOffline}}, Version: s.Version}
	objects, err := argo.Destination(ctx, app)
	if err != nil {
		return rep, err
	}
	rep.Cluster = objects.Info()
	if !s.FilterKnown {
		rep.Warnings = append(rep.Warnings, "resource.exclusions and resource.inclusions are unknown here (Argo CD's API does not serve them): only Argo CD's built-in exclusions are applied")
	}
	project, perr := argo.Project(ctx, app.Project)
	if perr != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("cannot read AppProject %s (%v): kinds it does not permit are not told apart", app.Project, perr))
	}
	targets, keys := desired(ctx, objects, s, app, project, perr == nil, manifests, &rep)
	policy, warn := guard.ReadInstalled(ctx, objects)
	if warn != "" {
		rep.Warnings = append(rep.Warnings, warn)
	}
	adoptions(ctx, objects, s, targets, policy, argo.Namespace(), &rep)
	prunes(ctx, objects, s, keys, policy, argo.Namespace(), &rep)
	family(ctx, argo, s, manifests, oracle, &rep)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	sort.SliceStable(rep.Items, func(i, j int) bool {
		if rep.Items[i].Kind != rep.Items[j].Kind {
			return rep.Items[i].Kind == Adoption
		}
		return rep.Items[i].Resource.String() < rep.Items[j].Resource.String()
	})
	return rep, nil
}

// target is a manifest resolved to the object it names.
type target struct {
	ref cluster.Ref
	row argocd.Resource
	// syncOptions is the manifest's argocd.argoproj.io/sync-options.
	syncOptions string
}

// desired resolves the manifests the app would manage as ordinary resources: namespaced ones
// default to the destination namespace; hooks, excluded kinds and kinds the project does not
// permit are skipped, with why. keys are every manifest's object, hooks included (a hook in git is
// not pruned).
func desired(ctx context.Context, objects cluster.Objects, s cluster.Settings, app argocd.Application, project argocd.Project, checkProject bool,
	manifests []Manifest, rep *Report) ([]target, map[string]bool) {
	var out []target
	keys := map[string]bool{}
	for _, m := range manifests {
		gvk := m.Object.GroupVersionKind()
		ref, err := objects.Resolve(ctx, gvk.Group, gvk.Kind, gvk.Version, m.Object.GetNamespace(), m.Object.GetName())
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", m.Source, err))
			continue
		}
		if ref.Namespaced && ref.Namespace == "" {
			ref.Namespace = app.Destination.Namespace
		}
		row := argocd.Resource{Group: ref.Group, Version: ref.Version, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		keys[row.Key()] = true
		switch {
		case argocd.IsHook(m.Object.GetAnnotations()):
			rep.Skipped = append(rep.Skipped, row.String()+": a hook (run by syncs, never adopted or pruned as a resource)")
		case s.Filter.Excluded(ref.Group, ref.Kind, rep.Cluster.Server):
			rep.Skipped = append(rep.Skipped, row.String()+": its kind is excluded from Argo CD's watch (resource.exclusions)")
		case s.Filter.Hidden(ref.Group, ref.Kind, rep.Cluster.Server, m.Object.GetLabels()):
			rep.Skipped = append(rep.Skipped, row.String()+": its labels do not match resource.selectors: Argo CD does not watch it, and shows it OutOfSync")
		case checkProject && !project.Permits(ref.Group, ref.Kind, ref.Name, ref.Namespaced):
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: AppProject %s does not permit it: the sync would fail on it", row, project.Name))
		default:
			out = append(out, target{ref: ref, row: row, syncOptions: m.Object.GetAnnotations()[argocd.AnnotationSyncOptions]})
		}
	}
	return out, keys
}

// adoptions reports desired objects that exist live and are not this app's.
func adoptions(ctx context.Context, objects cluster.Objects, s cluster.Settings, targets []target, policy *guard.Installed, argocdNamespace string, rep *Report) {
	refs := make([]cluster.Ref, len(targets))
	for i, t := range targets {
		refs[i] = t.ref
	}
	for i, res := range objects.Read(ctx, refs) {
		t := targets[i]
		if cluster.IsNotFound(res.Err) {
			continue // created by the sync: nothing to take over
		}
		item := Item{Kind: Adoption, Resource: t.row, Cluster: rep.Cluster}
		if res.Err != nil {
			item.Reason, item.Error = Untracked, res.Err.Error()
			rep.Items = append(rep.Items, assess(ctx, objects, item, nil, policy, s, rep.App, argocdNamespace))
			continue
		}
		live := res.Object
		if len(live.Owners) > 0 {
			continue // owned objects are never top-level managed objects
		}
		own := s.Owner(live.Labels, live.Annotations, t.ref.ObjectRef())
		switch {
		case own.TrackedBy(rep.Instance):
			continue
		case own.Tracked:
			item.Reason, item.OtherInstance = TrackedByOtherApp, own.Instance
			item.Notes = append(item.Notes, fmt.Sprintf("tracked by app instance %q: both apps will claim it, each sync overwriting the other's tracking", own.Instance))
		case own.Reason == argocd.ReasonTrackingIDNamesOtherObject:
			item.Reason = CopiedTracking
			item.Notes = append(item.Notes, own.Detail)
		default:
			item.Reason = Untracked
			item.Notes = append(item.Notes, "no app tracks it: Argo CD takes it over, and removing it from git later deletes it")
		}
		if n := recreation(t, rep.App, live); n != "" {
			item.Notes = append(item.Notes, n)
		}
		rep.Items = append(rep.Items, assess(ctx, objects, item, live, policy, s, rep.App, argocdNamespace))
	}
}

// recreation says when a sync of the app deletes the live object it adopts and creates it anew
// (argocd.Recreated): what no Prune= or Delete= option stops.
func recreation(t target, app argocd.Application, live *cluster.Object) string {
	const stops = "Prune=false and Delete=false do not stop that; only an admission policy that denies its DELETE does"
	switch argocd.Recreated(t.ref.Group, t.ref.Kind, app.SyncOptions, t.syncOptions, live.Annotations[argocd.AnnotationSyncOptions]) {
	case argocd.OnForce:
		return "synced with Replace=true: a sync of this app with FORCE ticked deletes it and creates it anew (a forced kubectl replace: DELETE, then CREATE); " + stops
	case argocd.Always:
		return "synced with Replace=true and Force=true: every sync of this app deletes it and creates it anew (a forced kubectl replace: DELETE, then CREATE); " + stops
	}
	return ""
}

// prunes reports objects the app tracks today that the change removes.
func prunes(ctx context.Context, objects cluster.Objects, s cluster.Settings, keys map[string]bool, policy *guard.Installed, argocdNamespace string, rep *Report) {
	var rows []argocd.Resource
	var refs []cluster.Ref
	for _, r := range rep.App.Resources {
		if r.Hook || keys[r.Key()] || s.Filter.Excluded(r.Group, r.Kind, rep.Cluster.Server) {
			continue
		}
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", r, err))
			continue
		}
		rows, refs = append(rows, r), append(refs, ref)
	}
	var pruned []Item
	for i, res := range objects.Read(ctx, refs) {
		r := rows[i]
		if cluster.IsNotFound(res.Err) {
			continue
		}
		item := Item{Kind: Prune, Resource: r, Cluster: rep.Cluster, Reason: LeftRequiringPruning}
		if rep.App.AutoPrune {
			item.Reason = DeletedAtNextSync
		}
		if r.RequiresPruning {
			item.Notes = append(item.Notes, "requires pruning already")
		}
		if res.Err != nil {
			item.Error = res.Err.Error()
			pruned = append(pruned, assess(ctx, objects, item, nil, policy, s, rep.App, argocdNamespace))
			continue
		}
		live := res.Object
		if len(live.Owners) > 0 || !s.Owner(live.Labels, live.Annotations, refs[i].ObjectRef()).TrackedBy(rep.Instance) {
			continue // not the app's: a sync does not prune it
		}
		if s.Filter.Hidden(r.Group, r.Kind, rep.Cluster.Server, live.Labels) {
			continue // resource.selectors keep it out of Argo CD's cache: no sync sees it to prune
		}
		pruned = append(pruned, assess(ctx, objects, item, live, policy, s, rep.App, argocdNamespace))
	}
	for _, item := range together(pruned) {
		if item.Guarded && item.Reason == DeletedAtNextSync {
			item.Reason = LeftRequiringPruning
			item.Notes = append(item.Notes, "guarded: the automated sync skips it and the app stays OutOfSync")
		}
		rep.Items = append(rep.Items, item)
	}
}

// together judges the items of one event — the prunes of one sync, or one app's cascade — as the
// one event they are (deletion.Together): an object kept by its own guards inside a Namespace the
// same event deletes is deleted with it.
func together(items []Item) []Item {
	var objects []deletion.Object
	var verdicts []deletion.Verdict
	var at []int
	for i, it := range items {
		if it.judged != nil {
			objects, verdicts, at = append(objects, it.judged.object), append(verdicts, it.judged.verdict), append(at, i)
		}
	}
	for k, v := range deletion.Together(objects, verdicts) {
		it := &items[at[k]]
		it.Notes = append(it.Notes, v.Notes[len(it.judged.verdict.Notes):]...)
		it.Guarded, it.judged.verdict = v.Guarded, v
		switch {
		case v.WithNamespace == "" || v.Guarded:
		case it.Kind == Prune:
			it.Reason = DeletedWithNamespace
		case it.Kind == CascadeDelete:
			it.Reason = DeletedWithApp
		}
	}
	return items
}

// assess adds the risk of deleting the object, what goes with it and what guards a prune of it, as
// the one deletion verdict reads it.
func assess(ctx context.Context, objects cluster.Objects, item Item, live *cluster.Object, policy *guard.Installed, s cluster.Settings,
	app argocd.Application, argocdNamespace string) Item {
	r := item.Resource
	obj := deletion.FromRow(r)
	if live != nil {
		obj = deletion.FromLive(live, &r)
		item.Contents = risk.ContentsOf(ctx, objects, live.Ref, r)
	}
	item.Risk, item.RiskWhy = risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Labels: obj.Labels, Annotations: obj.Annotations}, argocdNamespace)
	v := deletion.Judge(obj, deletion.Prune, deletion.Context{Version: s.Version, AppSyncOptions: app.SyncOptions, Policy: policy})
	item.Guards, item.Guarded = v.Guards, v.Guarded
	item.judged = &judged{object: obj, verdict: v}
	if item.Kind == Prune {
		item.Notes = append(item.Notes, v.Notes...)
		if v.Soft && app.AutoPrune && item.Reason == DeletedAtNextSync {
			item.Reason = LeftRequiringPruning
			item.Notes = append(item.Notes, "the app's own syncOptions keep its automated syncs from pruning it; a sync request carrying its own options (or PRUNE ticked with other options) deletes it")
		}
	}
	return item
}
