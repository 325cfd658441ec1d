package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/fields"
)

// renameState is what a rename's Application writes share: the old app as read (its uid, and its
// resourceVersion as the switch-off left it, which the delete is conditional on) and the new app
// to create.
type renameState struct {
	e             *Engine
	old, new      AppName
	read          map[string]any
	oldUID, oldRV string
	// created is the new app as step 1 creates it; final as it ends up (what a dry-run create
	// judges, since a dry run leaves no app for the last step to patch).
	created, final map[string]any
	info           *changeInfo
}

// steps are the rename's steps, in order (see PlanRename). want are the old app's rows: what the
// new app must show before it may prune or cascade.
func (rs *renameState) steps(app argocd.Application) []*Step {
	want, fix := app.Resources, renameFix(rs.old, rs.new)
	return []*Step{
		{Kind: StepCreate, App: rs.new, Object: rs.created, write: rs.create,
			Why: "the new Application with the same spec, labels and annotations; automated sync off and no finalizers until it tracks the resources"},
		{Kind: StepCheck, App: rs.new, Expect: expectSameAs(want, true, fix),
			Why: "Argo CD's comparison of the new app lists exactly the old app's resources: it renders the same objects under the new name"},
		{Kind: StepUpdate, App: rs.old, Why: offWhy(finalizersOf(rs.read)), write: rs.switchOff},
		{Kind: StepSettle, App: rs.old, write: rs.settleOld,
			Why: "wait for a sync the old app began before its automation went off to end: it would write the old app's tracking back"},
		{Kind: StepPatch, App: rs.new, Phase: 0, Why: "rewrite every resource's tracking to the new app"},
		{Kind: StepCheck, App: rs.new, Expect: expectSameAs(want, false, fix),
			Why: "Argo CD's comparison of the new app shows every resource as the old app's did (Synced), none requiring pruning and none missing"},
		{Kind: StepDelete, App: rs.old, write: rs.deleteOld,
			Why: "delete the old Application object, which has no finalizer left: Argo CD deletes none of its resources and runs none of its hooks. This is the only DELETE unprune ever sends"},
		{Kind: StepCheck, App: rs.new, Expect: expectSameAs(want, false, fix),
			Why: "the new app's comparison again, after that delete, before it may prune or cascade"},
		{Kind: StepUpdate, App: rs.new, Lets: []AppName{rs.new}, write: rs.restoreNew,
			Why: "give the new app the old one's sync policy and finalizers"},
	}
}

// renameFix says what to do when the new app renders other objects than the old one.
func renameFix(old, new AppName) string {
	return fmt.Sprintf("Nothing was deleted. The app's manifests depend on its name: Helm's release name (the app's name unless spec.source.helm.releaseName is set), "+
		"$ARGOCD_APP_NAME in jsonnet, Helm or plugin parameters, or a .argocd-source-%s.yaml override in its source path. "+
		"Make the source render the same objects as %s (pin the name it depends on, or copy the override to .argocd-source-%s.yaml), or rename the objects in git instead",
		old.Name, old.Name, new.Name)
}

// offWhy says why the old app's automation and finalizers go (it must neither sync the resources
// back nor delete them), and why it is marked skip-reconcile: Argo CD's controller puts the
// pre-/post-delete hook finalizers back on an app whose manifests hold such hooks after every
// comparison of it, and deleting it with them would run its hooks.
func offWhy(finalizers []string) string {
	const skip = " and mark it " + argocd.AnnotationSkipReconcile + ", so that it can neither sync the resources back nor delete them, " +
		"and Argo CD's controller puts no pre-/post-delete hook finalizer back on it"
	if len(finalizers) == 0 {
		return "switch the old app's automated sync off (it has no finalizers)" + skip
	}
	return "switch the old app's automated sync off, remove its finalizers (" + strings.Join(finalizers, ", ") + ")" + skip
}

// skipReconcile is the annotation the switch-off of an app about to be deleted sets.
func skipReconcile() map[string]any { return map[string]any{argocd.AnnotationSkipReconcile: "true"} }

// create creates the new app, marked with the journal (a dry run judges it as it ends up).
func (rs *renameState) create(ctx context.Context, dryRun bool) error {
	obj := rs.created
	if dryRun {
		obj = rs.final
	} else {
		obj = withoutServerFields(obj)
		markRename(obj, rs.info.journalID)
	}
	_, err := rs.e.ArgoCD.CreateApplication(ctx, obj, dryRun)
	return err
}

// markRename sets AnnotationRenameJournal on an Application object.
func markRename(obj map[string]any, journalID string) {
	meta := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[AnnotationRenameJournal] = journalID
}

func (rs *renameState) settleOld(ctx context.Context, _ bool) error {
	return settle(ctx, rs.e.ArgoCD, rs.old, SettleTimeout, rs.e.poll())
}

func (rs *renameState) deleteOld(ctx context.Context, dryRun bool) error {
	return deleteApplication(ctx, rs.e.ArgoCD, rs.old, rs.oldUID, rs.oldRV, dryRun)
}

// restoreNew gives the new app the old one's sync policy and finalizers and takes the journal's
// mark off: from then on it is the app the old one was.
func (rs *renameState) restoreNew(ctx context.Context, dryRun bool) error {
	if dryRun {
		return errDryRunSkip
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"finalizers": finalizersOf(rs.read), "annotations": map[string]any{AnnotationRenameJournal: nil}},
		"spec":     map[string]any{"syncPolicy": syncPolicyOf(rs.read)}})
	if err != nil {
		return err
	}
	_, err = rs.e.ArgoCD.PatchApplication(ctx, rs.new.Namespace, rs.new.Name, patch, false)
	return err
}

// switchOff sends the patch that switches the old app's automated sync off and removes its
// finalizers, conditional on the resourceVersion it was planned from. The controller writes the
// app's status all the time, so on a conflict the app is read again and, while its spec, finalizers
// and operation are as planned (only status moved), the patch is sent again at the fresh version.
func (rs *renameState) switchOff(ctx context.Context, dryRun bool) error {
	rv, err := switchOff(ctx, rs.e.ArgoCD, rs.old, rs.read, rs.oldRV, skipReconcile(), dryRun)
	if err == nil && !dryRun {
		// The delete is conditional on this very version: no finalizer added back since.
		rs.oldRV = rv
	}
	return err
}

// switchOff patches app's automated sync off and removes its finalizers (and sets annotations, when
// given), conditional on resourceVersion; on a conflict it reads the app again and, while nothing
// but its status changed since read, sends the patch again at the fresh version. It returns the
// resourceVersion the patch left.
func switchOff(ctx context.Context, argo cluster.ArgoCD, app AppName, read map[string]any, resourceVersion string, annotations map[string]any, dryRun bool) (string, error) {
	patch := automationOff(read, resourceVersion, annotations)
	for i := 1; ; i++ {
		out, err := argo.PatchApplication(ctx, app.Namespace, app.Name, patch, dryRun)
		if err == nil {
			return metaString(out, "resourceVersion"), nil
		}
		if !cluster.IsConflict(err) || i == 5 {
			return "", err
		}
		fresh, gerr := argo.ApplicationObject(ctx, app.Namespace, app.Name)
		if gerr != nil {
			return "", gerr
		}
		if why := changedSince(read, fresh); why != "" {
			return "", fmt.Errorf("Application %s changed since unprune read it (%s): nothing of it was changed; run again", app, why)
		}
		patch = automationOff(fresh, metaString(fresh, "resourceVersion"), annotations)
	}
}

// SettleTimeout bounds how long a rename (or its undo) waits for a sync an app began before its
// automation was switched off.
const SettleTimeout = 2 * time.Minute

// settle waits until no operation of app is requested or running, polling every interval, and
// fails once timeout has passed.
func settle(ctx context.Context, argo cluster.ArgoCD, app AppName, timeout, interval time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		a, err := argo.GetApplication(ctx, app.Namespace, app.Name)
		if err != nil {
			return fmt.Errorf("read Application %s to see whether it is syncing: %w", app, err)
		}
		if !a.Operation {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Application %s has had an operation running (%s) for %s: once it ends, run again", app, orUnknown(a.OperationPhase), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// deleteApplication deletes an Application object only while it has no finalizer and no automated
// sync, and is the object unprune read (its uid). The controller writes the app's status all the
// time, so a resourceVersion precondition alone fails: on a conflict the app is read again, the
// conditions are checked on that fresh copy, and the delete is sent again conditional on it.
//
// An Application without finalizers is removed by the API server at once: the controller deletes
// an app's resources only while finalizing an app that has resources-finalizer.argocd.argoproj.io
// (or its /foreground, /background forms; controller/appcontroller.go,
// finalizeApplicationDeletion: `if app.CascadedDeletion()`), and runs deletion hooks only for the
// pre-/post-delete finalizers. So this delete lets Argo CD delete nothing and run no hook.
//
// The controller puts those hook finalizers back after each comparison of an app whose manifests
// hold such hooks (processAppRefreshQueueItem, its finalizer block), with a merge patch of the
// whole list that carries no resourceVersion (updateFinalizers). The switch-off marked the app
// skip-reconcile, after which no comparison of it is queued; one queued or running before the mark
// landed may still put them back, once. So when the fresh copy carries the mark and no finalizer
// but hook ones, they are removed again, conditional on that copy's resourceVersion, and the
// delete is sent conditional on the version the removal left: the API server deletes the app only
// if no finalizer came back in between. Any other finalizer back stops the delete.
//
// In a dry run the earlier patch that removed the finalizers and automation was itself a dry run, so
// a fresh read still shows them: only the identity is checked then, and the delete stays a dry run.
func deleteApplication(ctx context.Context, argo cluster.ArgoCD, app AppName, uid, resourceVersion string, dryRun bool) error {
	const attempts = 8
	for i := 1; ; i++ {
		err := argo.DeleteApplication(ctx, app.Namespace, app.Name, uid, resourceVersion, dryRun)
		if err == nil || !cluster.IsConflict(err) || i == attempts {
			return err
		}
		fresh, gerr := argo.ApplicationObject(ctx, app.Namespace, app.Name)
		switch {
		case gerr != nil:
			return gerr
		case metaString(fresh, "uid") != uid:
			return fmt.Errorf("Application %s was deleted and created again meanwhile: not deleting the new one", app)
		case dryRun:
		case automated(fresh):
			return fmt.Errorf("Application %s has automated sync again: not deleting it", app)
		}
		resourceVersion = metaString(fresh, "resourceVersion")
		if f := finalizersOf(fresh); len(f) > 0 && !dryRun {
			if err := hookFinalizersOnly(app, fresh); err != nil {
				return err
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion, "finalizers": nil}})
			out, perr := argo.PatchApplication(ctx, app.Namespace, app.Name, patch, false)
			switch {
			case perr == nil:
				resourceVersion = metaString(out, "resourceVersion")
			case !cluster.IsConflict(perr):
				return fmt.Errorf("remove the hook finalizers %v Argo CD's controller put back on Application %s: %w", f, app, perr)
			}
			// After a conflict the delete fails on its precondition as well, and the app is read again.
		}
	}
}

// hookFinalizersOnly says why an app about to be deleted must not lose the finalizers it has again:
// one is not a delete-hook finalizer (a resources finalizer would cascade), or the app is not
// marked skip-reconcile (the controller would put them back after every comparison).
func hookFinalizersOnly(app AppName, obj map[string]any) error {
	f := finalizersOf(obj)
	for _, x := range f {
		if !argocd.IsDeleteHookFinalizer(x) {
			return fmt.Errorf("Application %s has finalizers again (%v): not deleting it, which would delete its resources", app, f)
		}
	}
	if !skipsReconcile(obj) {
		return fmt.Errorf("Application %s has hook finalizers again (%v) and is not marked %s: not deleting it, which would run its delete hooks", app, f, argocd.AnnotationSkipReconcile)
	}
	return nil
}

// skipsReconcile reports an Application that Argo CD's controller leaves alone.
func skipsReconcile(obj map[string]any) bool {
	v, set := stringMap(obj, "annotations")[argocd.AnnotationSkipReconcile]
	return argocd.SkipsReconcile(v, set)
}

// userFinalizers are an Application's finalizers but the delete-hook ones Argo CD's controller sets.
func userFinalizers(obj map[string]any) []string {
	out := []string{}
	for _, f := range finalizersOf(obj) {
		if !argocd.IsDeleteHookFinalizer(f) {
			out = append(out, f)
		}
	}
	return out
}

func automated(obj map[string]any) bool {
	policy, _ := syncPolicyOf(obj).(map[string]any)
	a, ok := policy["automated"].(map[string]any)
	if !ok {
		return false
	}
	enabled, set := a["enabled"].(bool)
	return !set || enabled
}

// changedSince says what of an Application that matters to a rename differs between two reads:
// its identity, spec, finalizers (but the delete-hook ones, which Argo CD's controller adds and
// removes as the app's manifests hold such hooks, and which the switch-off removes anyway), or a
// sync operation requested.
func changedSince(before, after map[string]any) string {
	same := func(key string, a, b any) string {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if string(x) != string(y) {
			return key
		}
		return ""
	}
	switch {
	case metaString(before, "uid") != metaString(after, "uid"):
		return "it was deleted and created again"
	case after["operation"] != nil:
		return "a sync operation was requested"
	}
	for _, why := range []string{same("spec", before["spec"], after["spec"]), same("finalizers", userFinalizers(before), userFinalizers(after))} {
		if why != "" {
			return "its " + why + " changed"
		}
	}
	return ""
}

// pinReleaseName gives every Helm source of obj (an Application to create) without a release name
// the old app's name as helm.releaseName, and returns which sources it pinned. Helm's release name
// is the app's name unless helm.releaseName is set (reposerver/repository/repository.go,
// helmTemplate: `templateOpts.Name = appName`, then `if appHelm.ReleaseName != ""`), and charts name
// and select their objects from {{ .Release.Name }}. A source is Helm when Argo CD found it so (the
// app's status.sourceType, or status.sourceTypes for several sources), or names a chart of a Helm
// repository (spec.source.chart).
func pinReleaseName(obj, read map[string]any, oldName string) []string {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := read["status"].(map[string]any)
	var pinned []string
	pin := func(src map[string]any, sourceType, where string) {
		if src == nil || sourceType != "Helm" && fields.String(src["chart"]) == "" {
			return
		}
		helm, _ := src["helm"].(map[string]any)
		if helm == nil {
			helm = map[string]any{}
			src["helm"] = helm
		}
		if fields.String(helm["releaseName"]) != "" {
			return
		}
		helm["releaseName"] = oldName
		pinned = append(pinned, where)
	}
	if sources, ok := spec["sources"].([]any); ok && len(sources) > 0 {
		types, _ := status["sourceTypes"].([]any)
		for i, s := range sources {
			t := ""
			if i < len(types) {
				t, _ = types[i].(string)
			}
			src, _ := s.(map[string]any)
			pin(src, t, fmt.Sprintf("spec.sources[%d]", i))
		}
		return pinned
	}
	src, _ := spec["source"].(map[string]any)
	t, _ := status["sourceType"].(string)
	pin(src, t, "spec.source")
	return pinned
}
