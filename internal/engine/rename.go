package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// RenameRequest is what `unprune rename` is asked to do.
type RenameRequest struct {
	App     AppName
	NewName string
	// Force renames an app that is not Synced.
	Force bool
	// KeepReleaseName gives the new app helm.releaseName: the old name, for every Helm source
	// without one, so that the chart renders the same objects.
	KeepReleaseName bool
}

// RefusedError is a request a safety rule refuses as a whole, before anything is changed.
type RefusedError struct {
	Code plan.RefusalCode
	Err  error
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

func refusedf(code plan.RefusalCode, format string, args ...any) error {
	return &RefusedError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Refusals of rename.
const (
	RefuseGenerated plan.RefusalCode = "GeneratedByApplicationSet"
	RefuseNotSynced plan.RefusalCode = "NotSynced"
	RefuseNameTaken plan.RefusalCode = "NameTaken"
	// RefuseTrackedByParent: the Application object is a resource of another app (app of apps).
	RefuseTrackedByParent plan.RefusalCode = "TrackedByParentApp"
	// RefuseNotReconciled: Argo CD's controller leaves the app alone (skip-reconcile), so no
	// comparison could show the new app declares the resources.
	RefuseNotReconciled plan.RefusalCode = "NotReconciled"
	// RefuseSourceHydrator: the app renders through Argo CD's source hydrator, whose rendering under
	// the new name no comparison before the rename shows (refuseHydrator).
	RefuseSourceHydrator plan.RefusalCode = "SourceHydrator"
)

// AnnotationRenameJournal marks an Application that a rename (or its undo) created or is about to
// delete, with the journal's id, while the rename is under way: the undo of that journal deletes
// only an app it marks, never one someone else made under the name meanwhile. The rename's last
// step takes it off again.
const AnnotationRenameJournal = "unprune.dev/rename-journal"

// Renaming names the two apps of a rename (or of its undo: Old is the app the undo gives the
// resources back to).
type Renaming struct {
	Old, New AppName
}

// PlanRename reads the app, its object and its live resources, and plans the rename as a change:
//
//  1. create NEW: APP's spec, labels and annotations, automated sync off, no finalizers, marked
//     with the journal, helm.releaseName pinned to APP's name where a Helm source has none;
//  2. check: Argo CD's comparison of NEW lists exactly APP's resources (NEW renders what APP
//     does), none missing, none of them already NEW's to prune;
//  3. patch APP: automated sync off, finalizers removed, marked argocd.argoproj.io/skip-reconcile
//     so that Argo CD's controller puts no pre-/post-delete hook finalizer back;
//  4. wait for a sync APP had begun to end;
//  5. rewrite every resource's tracking to NEW;
//  6. check: NEW's comparison shows every resource as APP's did (Synced), none requiring pruning;
//  7. delete the APP Application object, finalizers gone (Argo CD deletes none of its resources
//     and runs none of its hooks);
//  8. check NEW again, after that delete;
//  9. patch NEW: APP's sync policy and finalizers, the mark off — what lets NEW prune and cascade.
//
// A check or a step that fails after step 1 puts everything back as the journal says (the undo of
// the journal): a rename stopped between its steps leaves two apps, the old one switched off,
// which nothing in Argo CD puts right.
// Nothing is changed by planning.
func (e *Engine) PlanRename(ctx context.Context, req RenameRequest) (*Change, error) {
	apps, err := e.resolveApps(ctx, []AppName{req.App}, nil)
	if err != nil {
		return nil, err
	}
	app := apps[0]
	obj, err := e.ArgoCD.ApplicationObject(ctx, app.Namespace, app.Name)
	if err != nil {
		return nil, err
	}
	if err := e.refuseRename(ctx, app, obj, req); err != nil {
		return nil, err
	}
	old := AppName{Namespace: app.Namespace, Name: app.Name}
	rs := &renameState{e: e, old: old, new: AppName{Namespace: app.Namespace, Name: req.NewName},
		read: obj, oldUID: metaString(obj, "uid"), oldRV: metaString(obj, "resourceVersion"), info: &changeInfo{}}
	c := &Change{Planned: &Planned{Command: journal.CommandRename, Strategy: journal.StrategyMove, AllOrNothing: true},
		Renaming: &Renaming{Old: old, New: rs.new}, info: rs.info}
	if err := e.planRenameItems(ctx, c, app); err != nil {
		return nil, err
	}
	rs.created, rs.final = newApplication(obj, req.NewName), newApplication(obj, req.NewName)
	var pinned []string
	if req.KeepReleaseName {
		pinReleaseName(rs.final, obj, app.Name)
		pinned = pinReleaseName(rs.created, obj, app.Name)
	}
	withoutAutomation(rs.created)
	c.Steps = rs.steps(app)
	if len(pinned) > 0 {
		c.Steps[0].Why += fmt.Sprintf("; helm.releaseName %q on %s, since Helm's release name is the app's name unless set and charts name their objects from it",
			app.Name, strings.Join(pinned, " and "))
	}
	c.rollback, c.rollbackFailedStep = true, true
	c.verify = func(done *Applied) []appWait {
		return []appWait{{app: 1, req: verify.Request{App: c.Apps[1].App, Rows: movedRows(c.Planned, done), Want: verify.Adopted}}}
	}
	raw, err := json.Marshal(withoutServerFields(obj))
	if err != nil {
		return nil, err
	}
	c.Renamed = &journal.Renamed{From: journal.AppRef{Namespace: app.Namespace, Name: app.Name, Instance: c.Apps[0].Instance},
		To: journal.AppRef{Namespace: app.Namespace, Name: req.NewName, Instance: c.Apps[1].Instance}, Application: raw}
	return c, nil
}

// refuseRename refuses apps whose rename cannot be made safe.
func (e *Engine) refuseRename(ctx context.Context, app argocd.Application, obj map[string]any, req RenameRequest) error {
	for _, o := range ownerReferences(obj) {
		if o["kind"] == "ApplicationSet" {
			return refusedf(RefuseGenerated, "Application %s is generated by ApplicationSet %v: its template owns the name, and the ApplicationSet controller "+
				"would delete a renamed copy and recreate this one; change the template instead (`%s check` shows what that change would prune)", app.Ref(), o["name"], option.Program(ctx))
		}
	}
	if own := e.Settings.Owner(stringMap(obj, "labels"), stringMap(obj, "annotations"), argocd.ObjectRef{Group: "argoproj.io", Kind: "Application",
		Namespace: app.Namespace, Name: app.Name}); own.Tracked {
		// An app of apps: the parent's git still holds the old Application, so its next sync creates
		// it again (taking the resources back), and a copy of the parent's tracking on the new one
		// would let the parent prune it — with its finalizer, cascading.
		return refusedf(RefuseTrackedByParent, "Application %s is itself a resource of app instance %q (an app of apps): rename it in that app's source, "+
			"where the parent would otherwise create the old name again; `%s check` shows what that change deletes", app.Ref(), own.Instance, option.Program(ctx))
	}
	if err := refuseHydrator(ctx, app, obj); err != nil {
		return err
	}
	if skipsReconcile(obj) {
		return refusedf(RefuseNotReconciled, "Application %s is marked %s: Argo CD's controller does not compare it, and the new app would copy the mark, "+
			"so no comparison could show that it renders the same objects; remove the annotation, let Argo CD compare the app, and run again", app.Ref(), argocd.AnnotationSkipReconcile)
	}
	switch {
	case app.Operation:
		return refusedf(RefuseOperationRunning, "Application %s has a sync operation running (phase %s): wait for it to finish and run again", app.Ref(), orUnknown(app.OperationPhase))
	case app.SyncStatus != "Synced" && !req.Force:
		return refusedf(RefuseNotSynced, "Application %s is %s, not Synced: the new app would show (and, with automated sync, apply) the same differences; "+
			"sync it first", app.Ref(), orUnknown(app.SyncStatus))
	}
	if _, err := e.ArgoCD.GetApplication(ctx, app.Namespace, req.NewName); err == nil {
		return refusedf(RefuseNameTaken, "Application %s/%s exists already: choose another name", app.Namespace, req.NewName)
	} else if !cluster.IsNotFound(err) {
		return err
	}
	return nil
}

// refuseHydrator refuses an app with spec.sourceHydrator. Argo CD compares such an app with the
// branch its hydrator committed, not with its dry source (SourceHydrator.GetSyncSource,
// pkg/apis/application/v1alpha1/types.go), so every comparison a rename waits for shows the new
// app declaring the old one's objects — until the hydrator renders the dry source for the new app
// with its name (controller/state.go GetRepoObjs: AppName: app.InstanceName; Helm's release name
// unless drySource.helm.releaseName, reposerver/repository/repository.go helmTemplate) and commits
// that (controller/hydrator/hydrator.go). Its first hydration may reuse the old app's commit (the
// commit-server skips a dry SHA its branch's git note says it hydrated: commitserver/commit/
// commit.go, IsHydrated), so the switch can come as late as the next commit to the dry source;
// then the new app, its automated prune given back, prunes every object the old name rendered.
// No step of the rename could wait for that, so it is refused before anything is changed.
func refuseHydrator(ctx context.Context, app argocd.Application, obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	h := argocd.HydratorOf(spec)
	if h == nil {
		return nil
	}
	return refusedf(RefuseSourceHydrator, "Application %s renders through Argo CD's source hydrator (spec.sourceHydrator: dry source %s): Argo CD compares it "+
		"with what the hydrator committed to branch %q, path %q, so no comparison before the rename shows what the hydrator renders for the new name — it "+
		"renders the dry source with the app's name (a Helm chart's release name unless drySource.helm.releaseName is set; $ARGOCD_APP_NAME for plugins) and "+
		"commits it, at once or at the next commit to the dry source, and the renamed app, its automated prune back, then prunes every object the old name "+
		"rendered. %s does not rename hydrator apps: keep the name, or rename by hand — remove %s's resources finalizer, create the new app with automated sync "+
		"off, a syncSource.path of its own and, for a Helm dry source, drySource.helm.releaseName: %s (read from Argo CD v3.3.0; before, the release name is "+
		"always the app's), and compare the manifests the hydrator commits for it with %s's before deleting %s and giving the new app automated sync",
		app.Ref(), drySourceString(h.DrySource), h.SyncSource.TargetBranch, h.SyncSource.Path, option.Program(ctx), app.Ref(), app.Name, app.Ref(), app.Ref())
}

func drySourceString(d argocd.DrySource) string {
	return fmt.Sprintf("%s, path %q, revision %s", d.RepoURL, d.Path, orUnknown(d.TargetRevision))
}

// planRenameItems plans the rewrite of every live resource's tracking to the new app (hooks
// excepted: Argo CD creates them anew at each sync).
func (e *Engine) planRenameItems(ctx context.Context, rr *Change, app argocd.Application) error {
	next := app
	next.Name = rr.Renaming.New.Name
	src := &AppRun{App: app, Instance: app.Instance(e.ArgoCD.Namespace())}
	dst := &AppRun{App: next, Instance: next.Instance(e.ArgoCD.Namespace())}
	rr.Apps = []*AppRun{src, dst}
	objects, err := e.ArgoCD.Destination(ctx, app)
	if err != nil {
		return err
	}
	src.Objects, dst.Objects = objects, objects
	to := plan.MoveTo{Instance: dst.Instance, DestinationNamespace: app.Destination.Namespace}
	for i := range app.Resources {
		row := &app.Resources[i]
		if row.Hook {
			rr.Warnings = append(rr.Warnings, fmt.Sprintf("hook %s stays tracked by %s: Argo CD creates hooks anew at each sync", row, app.Ref()))
			continue
		}
		rr.Items = append(rr.Items, e.moveItem(ctx, src, row))
	}
	rr.planner = movePlanner{settings: e.Settings, to: to}
	e.readAndPlan(ctx, rr.Planned, nil)
	return nil
}

// withoutAutomation is an Application to create with automated sync off and no finalizers. A sync
// policy left with nothing in it is dropped: the controller normalizes an empty one away
// (util/argo/argo.go, NormalizeApplicationSpec: `if spec.SyncPolicy.IsZero()`) with an
// unconditional merge patch from its cached copy, which could land after unprune gives the app its
// sync policy back and remove it again (seen in the lab).
func withoutAutomation(obj map[string]any) map[string]any {
	delete(obj["metadata"].(map[string]any), "finalizers")
	spec := obj["spec"].(map[string]any)
	if policy, ok := spec["syncPolicy"].(map[string]any); ok {
		delete(policy, "automated")
		if zeroPolicy(policy) {
			delete(spec, "syncPolicy")
		}
	}
	return obj
}

// automationOff is the merge patch that switches an app's automated sync off, removes its
// finalizers and sets annotations, conditional on resourceVersion; like withoutAutomation it
// leaves no empty policy.
func automationOff(obj map[string]any, resourceVersion string, annotations map[string]any) []byte {
	var policy any = map[string]any{"automated": nil}
	if p, ok := syncPolicyOf(obj).(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range p {
			rest[k] = v
		}
		delete(rest, "automated")
		if zeroPolicy(rest) {
			policy = nil
		}
	}
	meta := map[string]any{"resourceVersion": resourceVersion, "finalizers": nil}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	patch, _ := json.Marshal(map[string]any{"metadata": meta, "spec": map[string]any{"syncPolicy": policy}})
	return patch
}

// zeroPolicy is Argo CD's SyncPolicy.IsZero (pkg/apis/application/v1alpha1/types.go) on a policy
// without automation.
func zeroPolicy(p map[string]any) bool {
	options, _ := p["syncOptions"].([]any)
	return len(options) == 0 && p["retry"] == nil && p["managedNamespaceMetadata"] == nil
}

// newApplication is the old Application under the new name: spec, labels, annotations and
// finalizers as they are, minus what names the old app or belongs to the API server and the
// controller (status, operation, uid, resourceVersion, a pending refresh, kubectl's copy of the old
// object).
func newApplication(old map[string]any, name string) map[string]any {
	obj := withoutRequests(withoutServerFields(old))
	meta := obj["metadata"].(map[string]any)
	meta["name"] = name
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		delete(annotations, argocd.AnnotationLastAppliedConfiguration)
	}
	return obj
}

// withoutRequests drops a refresh request from a copy of an Application. The request was for the
// object copied, and the controller consumes it with the comparison it asks for: on a new object it
// is stale, and a check's own request then meets an annotation already set — a patch that changes
// nothing and starts no comparison (v3.6 removes the request by the timestamp it was read with).
func withoutRequests(obj map[string]any) map[string]any {
	if annotations, ok := obj["metadata"].(map[string]any)["annotations"].(map[string]any); ok {
		delete(annotations, argocd.AnnotationRefresh)
		delete(annotations, argocd.AnnotationRefreshTimestamp)
	}
	return obj
}

// withoutServerFields copies an Application without status, operation and the metadata the API
// server sets.
func withoutServerFields(in map[string]any) map[string]any {
	data, _ := json.Marshal(in)
	var obj map[string]any
	_ = json.Unmarshal(data, &obj)
	delete(obj, "status")
	delete(obj, "operation")
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences"} {
		delete(meta, k)
	}
	return obj
}

func metaString(obj map[string]any, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	s, _ := meta[key].(string)
	return s
}

func stringMap(obj map[string]any, key string) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	m, _ := meta[key].(map[string]any)
	out := map[string]string{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func ownerReferences(obj map[string]any) []map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	list, _ := meta["ownerReferences"].([]any)
	var out []map[string]any
	for _, o := range list {
		if m, ok := o.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func finalizersOf(obj map[string]any) []string {
	meta, _ := obj["metadata"].(map[string]any)
	list, _ := meta["finalizers"].([]any)
	out := []string{}
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func syncPolicyOf(obj map[string]any) any {
	spec, _ := obj["spec"].(map[string]any)
	if p, ok := spec["syncPolicy"]; ok {
		return p
	}
	return nil
}
