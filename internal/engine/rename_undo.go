package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

// RefuseNotRenamed: the undo of a rename meets a new app that the rename did not create.
const RefuseNotRenamed plan.RefusalCode = "NotCreatedByRename"

// renameUndo is what the Application writes of a rename's undo share.
type renameUndo struct {
	e        *Engine
	argo     cluster.ArgoCD
	old, new AppName
	// copy is the old Application as the journal keeps it.
	copy          map[string]any
	newRead       map[string]any
	newUID, newRV string
	info          *changeInfo
}

// planRenameUndo adds to the undo of a rename journal (c: the tracking moving back) the writes of
// Applications around it, each only where the live apps show it is due:
//
//  1. patch the new app (when this rename made it): automated sync off, finalizers removed, marked
//     with the journal again and skip-reconcile (Argo CD's controller would put pre-/post-delete
//     hook finalizers back); then wait for a sync it had begun to end;
//  2. create the old app from the journal, automated sync off and no finalizers (when it is gone);
//  3. move every resource's tracking back (c's phases, checked as any undo's);
//  4. delete the new app (finalizers gone: Argo CD deletes none of its resources, runs none of its
//     hooks);
//  5. take the skip-reconcile mark the rename put on the old app off, so that Argo CD compares it
//     again (its automation and finalizers still off);
//  6. check: the old app's comparison declares every resource (and, when it prunes on its own,
//     lists nothing to prune); then give it its sync policy, finalizers and annotations back as the
//     journal's copy has them — only when they are still as the rename left them (off), never over
//     what someone set since.
func (e *Engine) planRenameUndo(ctx context.Context, c *Change, j *journal.Journal, apps undoApps) error {
	r := j.Rename
	var copied map[string]any
	if err := json.Unmarshal(r.Application, &copied); err != nil {
		return fmt.Errorf("the journal's copy of Application %s is damaged: %w", r.From, err)
	}
	if apps.argo == nil {
		return fmt.Errorf("undo of a rename writes Applications, and this undo cannot reach the journal's Argo CD: %w", apps.argoErr)
	}
	u := &renameUndo{e: e, argo: apps.argo, old: AppName{Namespace: r.From.Namespace, Name: r.From.Name},
		new: AppName{Namespace: r.To.Namespace, Name: r.To.Name}, copy: copied, info: c.info}
	c.Renaming = &Renaming{Old: u.old, New: u.new}
	liveOld, errOld := u.argo.ApplicationObject(ctx, u.old.Namespace, u.old.Name)
	if errOld != nil && !cluster.IsNotFound(errOld) {
		return errOld
	}
	liveNew, errNew := u.argo.ApplicationObject(ctx, u.new.Namespace, u.new.Name)
	if errNew != nil && !cluster.IsNotFound(errNew) {
		return errNew
	}
	oldGone := cluster.IsNotFound(errOld)
	ours := errNew == nil && createdBy(liveNew, j, copied, oldGone)
	if errNew == nil && !ours {
		return refusedf(RefuseNotRenamed, "Application %s exists, but the rename of journal %s did not create it (it carries no %s of that journal): "+
			"undoing would take its resources from it; leave it, or delete it yourself first", u.new, j.ID, AnnotationRenameJournal)
	}
	marked := !oldGone && skipsReconcile(liveOld) && !skipsReconcile(copied)
	if marked && automated(liveOld) {
		// Handing the resources back to an app that syncs on its own waits for its comparison,
		// which the mark keeps Argo CD from making; taking the mark off first would let it sync
		// before any check.
		return refusedf(RefuseUnchecked, "Application %s has automated sync again, and still carries the %s mark the rename put on it, so Argo CD does not compare it: "+
			"undo cannot check that giving its resources back deletes nothing. Switch its automated sync off again (or take the mark off yourself once you know "+
			"what its sync would do: kubectl annotate applications.argoproj.io -n %s %s %s-) and undo again", u.old, argocd.AnnotationSkipReconcile,
			u.old.Namespace, u.old.Name, argocd.AnnotationSkipReconcile)
	}
	var steps []*Step
	if ours {
		u.newRead, u.newUID, u.newRV = liveNew, metaString(liveNew, "uid"), metaString(liveNew, "resourceVersion")
		steps = append(steps,
			&Step{Kind: StepUpdate, App: u.new, write: u.switchOffNew,
				Why: "switch the new app's automated sync off and remove its finalizers (marked with this journal until it is deleted, and " +
					argocd.AnnotationSkipReconcile + " so that Argo CD's controller puts no pre-/post-delete hook finalizer back on it)"},
			&Step{Kind: StepSettle, App: u.new, write: u.settleNew,
				Why: "wait for a sync the new app began before its automation went off to end: it would write the new app's tracking back"})
	}
	if oldGone {
		created := withoutRequests(withoutAutomation(withoutServerFields(copied)))
		steps = append(steps, &Step{Kind: StepCreate, App: u.old, Object: created, write: u.createOld,
			Why: "the old Application again, from the journal, automated sync off and no finalizers until it tracks the resources"})
	}
	for _, s := range e.undoSteps(ctx, j, c, apps) {
		if s.Kind == StepPatch && s.App.Name == "" {
			s.App, s.Why = u.old, "move every resource's tracking back to the old app"
		}
		steps = append(steps, s)
	}
	if ours {
		steps = append(steps, &Step{Kind: StepDelete, App: u.new, write: u.deleteNew,
			Why: "delete the new Application object, which has no finalizer left: Argo CD deletes none of its resources and runs none of its hooks"})
	}
	off := !oldGone && switchedOff(liveOld, copied)
	switch {
	case marked && off:
		// Before the check: a refresh of an app marked so is never compared.
		steps = append(steps, &Step{Kind: StepUpdate, App: u.old, write: u.unskipOld,
			Why: "take the " + argocd.AnnotationSkipReconcile + " mark the rename put on the old app off, so that Argo CD compares it again (its automated sync and finalizers stay off)"})
	case marked:
		c.Warnings = append(c.Warnings, fmt.Sprintf("Application %s keeps %s: its finalizers were changed since the rename, so undo leaves it as it is; "+
			"take the mark off yourself once you know what it would do (kubectl annotate applications.argoproj.io -n %s %s %s-)",
			u.old, argocd.AnnotationSkipReconcile, u.old.Namespace, u.old.Name, argocd.AnnotationSkipReconcile))
	}
	if oldGone || off && (automated(copied) || !slices.Equal(finalizersOf(liveOld), finalizersOf(copied))) {
		var rows []argocd.Resource
		for _, it := range c.Items {
			rows = append(rows, rowOf(it))
		}
		expect := expectDeclares(rows, undoFix(u.old))
		if prunes(copied) {
			expect = expectAll(expect, expectNothingToPrune(undoFix(u.old)))
		}
		steps = append(steps,
			&Step{Kind: StepCheck, App: u.old, Expect: expect,
				Why: "the old app's comparison declares every resource and, if it prunes on its own, lists nothing to prune"},
			&Step{Kind: StepUpdate, App: u.old, Lets: []AppName{u.old}, write: u.restoreOld,
				Why: "give the old app its sync policy, finalizers and annotations back as the journal's copy has them"})
	}
	c.Steps = steps
	return nil
}

// createdBy reports whether the new app is the one the rename of journal j created: it carries the
// journal's mark (a rename under way, or an undo under way), or — once the rename is complete, the
// mark taken off and the old app deleted — the journal's tracking rewrites were applied (they come
// after the create, so the rename made the app) and it deploys the old app's source to its
// destination.
func createdBy(app map[string]any, j *journal.Journal, copied map[string]any, oldGone bool) bool {
	if stringMap(app, "annotations")[AnnotationRenameJournal] == j.ID {
		return true
	}
	rewritten := len(j.Entries) == 0
	for _, e := range j.Entries {
		rewritten = rewritten || e.State == journal.StateApplied || e.State == journal.StateUndone
	}
	return oldGone && rewritten && sameTarget(app, copied)
}

// sameTarget reports whether two Applications deploy the same source(s) to the same place, a
// release name the rename pinned aside.
func sameTarget(a, b map[string]any) bool {
	pick := func(obj map[string]any) string {
		spec, _ := withoutServerFields(obj)["spec"].(map[string]any)
		out := map[string]any{"project": spec["project"], "destination": spec["destination"], "source": spec["source"], "sources": spec["sources"]}
		for _, src := range append([]any{spec["source"]}, toList(spec["sources"])...) {
			if m, ok := src.(map[string]any); ok {
				if helm, ok := m["helm"].(map[string]any); ok {
					delete(helm, "releaseName")
					if len(helm) == 0 {
						delete(m, "helm")
					}
				}
			}
		}
		data, _ := json.Marshal(out)
		return string(data)
	}
	return pick(a) == pick(b)
}

func toList(v any) []any {
	l, _ := v.([]any)
	return l
}

// switchedOff reports an Application as a rename leaves the old one (copy as the journal keeps
// it): no automated sync, and no finalizer but the copy's own or delete-hook ones — Argo CD's
// controller puts those back after a comparison of an app whose manifests hold such hooks, and one
// already under way when the rename marked the app skip-reconcile may even have written the copy's
// list back with them (updateFinalizers patches the whole list, from the app as it read it).
func switchedOff(obj, copied map[string]any) bool {
	if obj == nil || automated(obj) {
		return false
	}
	own := finalizersOf(copied)
	for _, f := range finalizersOf(obj) {
		if !argocd.IsDeleteHookFinalizer(f) && !slices.Contains(own, f) {
			return false
		}
	}
	return true
}

// prunes reports an Application whose automated sync prunes.
func prunes(obj map[string]any) bool {
	policy, _ := syncPolicyOf(obj).(map[string]any)
	a, _ := policy["automated"].(map[string]any)
	p, _ := a["prune"].(bool)
	return automated(obj) && p
}

func (u *renameUndo) switchOffNew(ctx context.Context, dryRun bool) error {
	annotations := skipReconcile()
	annotations[AnnotationRenameJournal] = u.info.journalID
	rv, err := switchOff(ctx, u.argo, u.new, u.newRead, u.newRV, annotations, dryRun)
	if err == nil && !dryRun {
		u.newRV = rv
	}
	return err
}

func (u *renameUndo) settleNew(ctx context.Context, _ bool) error {
	return settle(ctx, u.argo, u.new, SettleTimeout, u.e.poll())
}

func (u *renameUndo) createOld(ctx context.Context, dryRun bool) error {
	_, err := u.argo.CreateApplication(ctx, withoutAutomation(withoutServerFields(u.copy)), dryRun)
	return err
}

func (u *renameUndo) deleteNew(ctx context.Context, dryRun bool) error {
	return deleteApplication(ctx, u.argo, u.new, u.newUID, u.newRV, dryRun)
}

// unskipOld takes the skip-reconcile mark off the old app (to the copy's value, which has none).
func (u *renameUndo) unskipOld(ctx context.Context, dryRun bool) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{argocd.AnnotationSkipReconcile: nil}}})
	if err != nil {
		return err
	}
	_, err = u.argo.PatchApplication(ctx, u.old.Namespace, u.old.Name, patch, dryRun)
	return err
}

// restoreOld gives the old app its sync policy, finalizers and annotations as the journal's copy
// has them: the whole finalizer list (delete-hook finalizers the controller put back meanwhile
// included), every annotation of the copy but a refresh request the controller has answered, and
// skip-reconcile off unless the copy had it.
func (u *renameUndo) restoreOld(ctx context.Context, dryRun bool) error {
	annotations := map[string]any{argocd.AnnotationSkipReconcile: nil}
	for k, v := range stringMap(u.copy, "annotations") {
		if k != argocd.AnnotationRefresh && k != argocd.AnnotationRefreshTimestamp {
			annotations[k] = v
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizersOf(u.copy), "annotations": annotations},
		"spec": map[string]any{"syncPolicy": syncPolicyOf(u.copy)}})
	if err != nil {
		return err
	}
	_, err = u.argo.PatchApplication(ctx, u.old.Namespace, u.old.Name, patch, dryRun)
	return err
}

// expectNothingToPrune expects the app to list no resource as requiring pruning (hooks aside): its
// automated prune then deletes nothing.
func expectNothingToPrune(fix string) Expectation {
	return func(app argocd.Application) *Mismatch {
		var pruning []string
		for _, r := range app.Pruning() {
			pruning = append(pruning, r.String())
		}
		if len(pruning) == 0 {
			return nil
		}
		return &Mismatch{Summary: fmt.Sprintf("Application %s lists resources its automated prune would delete", app.Ref()), Details: pruning, Fix: fix}
	}
}
