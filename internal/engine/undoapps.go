package engine

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/plan"
)

// ArgoCDOf reaches the Argo CD installation a journal recorded (journal.ArgoCD), so that undo can
// read the Applications whose tracking it would write back. PlanUndo calls it at most once, and
// only for a journal that restores tracking: guard and keep journals never need Argo CD.
type ArgoCDOf func(ctx context.Context, j *journal.Journal) (cluster.ArgoCD, error)

// Refusals of undo that come from checking the entry's Application in Argo CD.
const (
	// RefuseAppNotFound: the app whose tracking would be restored does not exist.
	RefuseAppNotFound plan.RefusalCode = "ApplicationNotFound"
	// RefuseInstanceMismatch: the instance the journal records is not what Argo CD tracks the app by.
	RefuseInstanceMismatch plan.RefusalCode = "InstanceMismatch"
	// RefuseAppUnverified: the app could not be read, so its existence is unknown.
	RefuseAppUnverified plan.RefusalCode = "ApplicationUnverified"
)

// appChecks are the refusals, by AppRef.String(), for the apps whose tracking must not be written
// back; an app that is absent from the map was found as the journal describes it.
type appChecks map[string]*plan.Refusal

// guard refuses a plan that would write tracking back for an app the check did not find as the
// journal describes it. A plan that restores no tracking (guard, keep, a key already back) passes.
func (c appChecks) guard(j *journal.Journal, e journal.Entry, p plan.Plan) plan.Plan {
	if p.Refusal != nil || e.Application == nil || !writesTracking(j, p.Changes) {
		return p
	}
	if r := c[e.Application.String()]; r != nil {
		return plan.Plan{Refusal: r}
	}
	return p
}

// writesTracking reports whether changes set a key Argo CD reads for ownership under the journal's
// settings: the instance label or the tracking-id annotation. A value inside kubectl's
// last-applied-configuration is not one: Argo CD ignores that copy for ownership.
func writesTracking(j *journal.Journal, changes []journal.Change) bool {
	labelKey := argocd.DefaultInstanceLabelKey
	if j.ArgoCD != nil && j.ArgoCD.InstanceLabelKey != "" {
		labelKey = j.ArgoCD.InstanceLabelKey
	}
	for _, c := range changes {
		if _, has := c.Value(); !has || c.Embedded != nil {
			continue
		}
		if (c.Field == journal.FieldLabel && c.Key == labelKey) || (c.Field == journal.FieldAnnotation && c.Key == argocd.AnnotationTrackingID) {
			return true
		}
	}
	return false
}

// undoApps is what undo learned of a journal's Applications in Argo CD before planning: refusals of
// the apps whose tracking must not be written back, and the apps as read.
type undoApps struct {
	refusals appChecks
	// live are the apps read, by AppRef.String(); an app the undo creates itself (a rename's old
	// app) is there as it will be created: automated sync off.
	live map[string]argocd.Application
	// argo is the journal's installation, when reached; argoErr why not.
	argo    cluster.ArgoCD
	argoErr error
}

// checkApps reads, in the journal's Argo CD installation, every Application whose tracking an
// entry could write back, before anything is read or patched. Tracking written for an app that is
// not there hands the object to whichever app is created under that name next (Argo CD adopts it
// at once); a journal edited consistently — the app name replaced everywhere — passes every check
// of the entry against itself, but not this one. creates, when not nil, is an app the undo creates
// itself from the journal when it is missing (a rename's old app).
//
// how says how to let undo read them, for when it cannot.
func checkApps(ctx context.Context, j *journal.Journal, argoOf ArgoCDOf, how string, creates *journal.AppRef) undoApps {
	var apps []journal.AppRef
	seen := map[string]bool{}
	for _, e := range j.Entries {
		if e.State == journal.StateUndone || e.Application == nil || seen[e.Application.String()] || !writesTracking(j, e.Inverse()) {
			continue
		}
		seen[e.Application.String()] = true
		apps = append(apps, *e.Application)
	}
	out := undoApps{refusals: appChecks{}, live: map[string]argocd.Application{}}
	if len(apps) == 0 && creates == nil {
		return out
	}
	if j.ArgoCD == nil {
		for _, a := range apps {
			out.refusals[a.String()] = &plan.Refusal{Code: RefuseAppUnverified, Message: fmt.Sprintf(
				"the journal names no Argo CD installation to find Application %s in, so its tracking is not restored; the journal was edited or written by another tool", a)}
		}
		return out
	}
	out.argoErr = fmt.Errorf("this undo was given no way to reach Argo CD")
	if argoOf != nil {
		out.argo, out.argoErr = argoOf(ctx, j)
	}
	found := make([]*plan.Refusal, len(apps))
	live := make([]argocd.Application, len(apps))
	parallel.ForEach(len(apps), 8, func(i int) {
		if out.argoErr != nil {
			found[i] = unverified(j, apps[i], out.argoErr, how)
			return
		}
		var readErr error
		live[i], readErr = out.argo.GetApplication(ctx, apps[i].Namespace, apps[i].Name)
		if cluster.IsNotFound(readErr) && creates != nil && apps[i] == *creates {
			live[i], readErr = argocd.Application{Namespace: creates.Namespace, Name: creates.Name}, nil
		}
		found[i] = checkApp(j, apps[i], live[i], readErr, how)
	})
	for i, a := range apps {
		if found[i] != nil {
			out.refusals[a.String()] = found[i]
		} else {
			out.live[a.String()] = live[i]
		}
	}
	return out
}

// checkApp judges one Application as read from Argo CD against the journal's record of it.
func checkApp(j *journal.Journal, want journal.AppRef, live argocd.Application, err error, how string) *plan.Refusal {
	ns := j.ArgoCD.Namespace
	switch {
	case cluster.IsNotFound(err):
		return &plan.Refusal{Code: RefuseAppNotFound, Message: fmt.Sprintf(
			"Application %s does not exist in the Argo CD installation of namespace %s: restoring its tracking would hand the object to an app that is not there; "+
				"the journal was edited or the app deleted since — recreate the app first, or leave the object untracked", want, ns)}
	case err != nil:
		return unverified(j, want, err, how)
	}
	// Argo CD tracks an app outside its own namespace as <namespace>_<name>
	// (pkg/apis/application/v1alpha1/types.go, Application.InstanceName).
	if instance := live.Instance(ns); instance != want.Instance {
		return &plan.Refusal{Code: RefuseInstanceMismatch, Message: fmt.Sprintf(
			"the journal restores tracking as instance %s for Application %s, but Argo CD (namespace %s) tracks that app as %s: the journal was edited, "+
				"or written for another installation; nothing of this entry is restored", Quote(want.Instance), want, ns, Quote(instance))}
	}
	return nil
}

func unverified(j *journal.Journal, a journal.AppRef, err error, how string) *plan.Refusal {
	if cluster.Classify(err) == cluster.FailureArgoCDDenied {
		// Argo CD's API denies a missing app as it denies a forbidden one, so as not to reveal
		// which apps exist (server/application/application.go, getAppEnforceRBAC).
		err = fmt.Errorf("%w; Argo CD answers so for an app that does not exist, too", err)
	}
	return &plan.Refusal{Code: RefuseAppUnverified, Message: fmt.Sprintf(
		"cannot check that Application %s exists in the Argo CD installation of namespace %s before restoring its tracking, so nothing of this entry is restored "+
			"(reading it needs `get applications` there: %s): %v",
		a, j.ArgoCD.Namespace, how, err)}
}
