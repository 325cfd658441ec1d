// Package deletion is unprune's one answer to "does Argo CD delete this object, and what stops it?",
// for a live object and an event that may delete it: a prune by a sync (the object left git), or
// the cascade of its Application's deletion (a resources finalizer). audit, check and watch all ask
// it, so that the three say the same thing about the same object.
//
// The rules are read from Argo CD's source, per release line where they changed, and cited where
// they are encoded: gitops-engine pkg/sync/sync_context.go for prunes, controller/appcontroller.go
// (finalizeApplicationDeletion, shouldBeDeleted) and controller/state.go for cascades. The package
// is pure: callers read the object, the app's options, unprune's admission policy and, when asked,
// the API server's answer to a dry-run DELETE, and pass them in.
package deletion

import (
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

// Event is what would delete the object.
type Event string

const (
	// Prune: a sync with prune deletes an object of the app that is no longer in git (an automated
	// sync with prune, or any sync with PRUNE ticked).
	Prune Event = "Prune"
	// Cascade: the app is deleted with a resources finalizer, and Argo CD deletes what it tracks.
	Cascade Event = "Cascade"
	// Replace: a forced sync of an app that syncs the object with Replace=true: gitops-engine runs
	// `kubectl replace --force`, a DELETE and then a CREATE (argocd.Recreated).
	Replace Event = "Replace"
)

// Outcome is what Argo CD does to the object at the event.
type Outcome string

const (
	// Deleted: Argo CD sends the DELETE (soft guards aside: see Verdict.Soft).
	Deleted Outcome = "Deleted"
	// Waits: the deletion waits for argocd.argoproj.io/deletion-approved on the Application.
	Waits Outcome = "WaitsForApproval"
	// Kept: a guard stops the deletion.
	Kept Outcome = "Kept"
	// NotTopLevel: the object has ownerReferences; Argo CD never manages it as a resource of its
	// own, and the garbage collector deletes it with its owner.
	NotTopLevel Outcome = "NotTopLevel"
	// NotPruned: a hook; no sync prunes it (its delete policy handles it).
	NotPruned Outcome = "NotPruned"
	// NotManaged: Argo CD does not delete it with this app (the app's own Application object, or an
	// object its project does not permit).
	NotManaged Outcome = "NotManaged"
	// Gone: the API server says the object no longer exists.
	Gone Outcome = "Gone"
	// Updated: a Namespace or CRD synced with Replace=true is updated, never replaced.
	Updated Outcome = "Updated"
)

// Guards beyond risk's and guard's, read from a probe.
const (
	GuardProbeDenied risk.Guard = "ProbeDenied"         // a dry-run DELETE was refused by admission or the API server
	GuardController  risk.Guard = "ControllerForbidden" // Argo CD's controller may not delete it (RBAC)
)

// ProbeResult is the API server's answer to a dry-run DELETE of the object.
type ProbeResult string

const (
	ProbeAllowed ProbeResult = "Allowed" // the deletion would go through
	ProbeDenied  ProbeResult = "Denied"  // admission or the API server refused it
	// ProbeControllerForbidden: RBAC refuses Argo CD's controller (probed as it).
	ProbeControllerForbidden ProbeResult = "ControllerForbidden"
	// ProbeInconclusive: the answer says nothing about Argo CD's controller.
	ProbeInconclusive ProbeResult = "Inconclusive"
	ProbeGone         ProbeResult = "Gone"
)

// Object is the object in question.
type Object struct {
	Group, Kind, Namespace, Name string
	Labels, Annotations          map[string]string
	// Owners are its ownerReferences.
	Owners []string
	// Read is true when the object was read live; false when only its identity (and row) are
	// known, so that guards it may carry are unknown and count for nothing.
	Read bool
	// Row is the app's status row for the object; nil when the app does not list it (an object
	// whose tracking-id was copied from another one, which Argo CD's cascade still deletes).
	Row *argocd.Resource
}

// Resource is the object as a status row names it.
func (o Object) Resource() argocd.Resource {
	if o.Row != nil {
		return *o.Row
	}
	return argocd.Resource{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// Context is what the verdict depends on beyond the object.
type Context struct {
	// Version is the Argo CD release; nil when unknown (a guard then counts only when every
	// release line reads it so).
	Version *argocd.Version
	// AppSyncOptions are the deleting app's spec.syncPolicy.syncOptions.
	AppSyncOptions []string
	// Policy is unprune's admission policy in the object's cluster (nil: none, or not readable).
	Policy *guard.Installed
	// Probe is the API server's answer to a dry-run DELETE, when one was sent.
	Probe ProbeResult
	// SelfApp: the object is the deleting app's own Application object, which Argo CD never
	// deletes with it (isSelfReferencedApp).
	SelfApp bool
	// NotPermitted: the app's project does not permit the object; Argo CD's cascade leaves it
	// (getPermittedAppLiveObjects).
	NotPermitted bool
}

// Verdict is the answer.
type Verdict struct {
	Event   Event
	Outcome Outcome
	// Guards are what holds, hard and soft, in the order Argo CD reads them.
	Guards []risk.Guard
	// Guarded: the object is not deleted whatever the sync request says — Kept by a hard guard,
	// or Waits for a human's approval. Soft guards do not count.
	Guarded bool
	// Soft: only app-level sync options keep it, which a sync request carrying its own option list
	// replaces (v3.4+ for prunes).
	Soft  bool
	Notes []string
	// WithNamespace names the Namespace the same event deletes and that takes the object with it
	// (Together): the object is deleted, whatever guard of its own Guards lists.
	WithNamespace string
}

// Deletes reports whether Argo CD deletes the object at the event without anyone's approval.
func (v Verdict) Deletes() bool { return v.Outcome == Deleted }

// Judge answers for one object and event.
func Judge(o Object, e Event, c Context) Verdict {
	v := Verdict{Event: e, Outcome: Deleted}
	if !o.Read {
		// What an unread object carries is unknown: nothing on it counts.
		o.Labels, o.Annotations = nil, nil
	}
	switch e {
	case Prune:
		judgePrune(o, c, &v)
	case Cascade:
		judgeCascade(o, c, &v)
	case Replace:
		judgeReplace(o, &v)
	}
	if v.Outcome == Deleted || v.Outcome == Waits || v.Outcome == Kept {
		judgeServer(o, c, &v)
	}
	v.Guarded = v.Outcome == Kept || v.Outcome == Waits
	if v.Outcome == Deleted && !o.Read {
		v.Notes = append(v.Notes, "not read live: guards it may carry are unknown")
	}
	return v
}

func isHook(o Object) bool {
	if o.Row != nil && o.Row.Hook {
		return true
	}
	return o.Read && argocd.IsHook(o.Annotations)
}

func isCRD(o Object) bool {
	return o.Group == "apiextensions.k8s.io" && o.Kind == "CustomResourceDefinition"
}

func immortal(o Object) bool {
	return o.Group == "" && o.Kind == "Namespace" && risk.ImmortalNamespaces[o.Name]
}

// judgePrune reads a prune as gitops-engine's sync does: hooks and owned objects are never pruned
// (they are not resources of the app), then the Prune option (isPruningDisabled,
// objRequiresPruneConfirmation) — the object's first, else the app's from v3.4.
func judgePrune(o Object, c Context, v *Verdict) {
	switch {
	case isHook(o):
		v.Outcome = NotPruned
		v.Notes = append(v.Notes, "a hook: no sync prunes it; its delete policy deletes and re-creates it when the hook runs")
		return
	case len(o.Owners) > 0:
		v.Outcome = NotTopLevel
		v.Notes = append(v.Notes, fmt.Sprintf("owned by %s: not a resource of its own, never pruned (the garbage collector deletes it with its owner)", strings.Join(o.Owners, ", ")))
		return
	}
	if immortal(o) {
		v.Outcome = Kept
		v.Guards = append(v.Guards, risk.GuardImmortalNamespace)
	}
	p := argocd.EffectivePrune(c.Version, o.Annotations[argocd.AnnotationSyncOptions], c.AppSyncOptions)
	v.Notes = append(v.Notes, p.Notes...)
	switch {
	case p.Value == argocd.PruneDisabled && p.Source == argocd.PruneSourceApp:
		v.Guards, v.Soft = append(v.Guards, risk.GuardAppPruneDisabled), true
	case p.Value == argocd.PruneConfirm && p.Source == argocd.PruneSourceApp:
		v.Guards, v.Soft = append(v.Guards, risk.GuardAppPruneConfirm), true
	case p.Value == argocd.PruneDisabled:
		v.Guards, v.Outcome = append(v.Guards, risk.GuardPruneDisabled), Kept
	case p.Value == argocd.PruneConfirm:
		v.Guards = append(v.Guards, risk.GuardPruneConfirm)
		if v.Outcome != Kept {
			v.Outcome = Waits
			v.Notes = append(v.Notes, "Prune=confirm: the sync prunes nothing of this wave until argocd.argoproj.io/deletion-approved is set on the Application; "+
				"one approval (a timestamp at or after the sync's start) releases every confirm-gated prune of that operation at once")
		}
	}
	if o.Read {
		if argocd.HasOption(o.Annotations[argocd.AnnotationCompareOptions], argocd.OptionIgnoreExtraneous) && v.Outcome == Deleted {
			v.Notes = append(v.Notes, "compare-options IgnoreExtraneous keeps the app Synced but does not stop a prune")
		}
		if len(cascadeKeeps(o, c)) > 0 && v.Outcome == Deleted {
			v.Notes = append(v.Notes, "Delete=false and helm.sh/resource-policy: keep guard only the cascade deletion of the app, never a prune")
		}
	}
}

// judgeReplace reads a forced sync with Replace=true as gitops-engine's applyObject does
// (pkg/sync/sync_context.go; the same in gitops-engine v0.7.1 for v2.14 and in the in-tree
// gitops-engine of v3.6.1): a Namespace or CRD is updated, since replacing it would delete all it
// holds; anything else goes to `kubectl replace --force`. No sync option of the object stops that:
// Prune= and Delete= guard prunes and cascades, helm's keep the uninstall. Only the API server can
// (an admission policy that denies the DELETE: unprune's covers the kinds guard.Kinds names, judgeServer).
func judgeReplace(o Object, v *Verdict) {
	switch {
	case len(o.Owners) > 0:
		v.Outcome = NotTopLevel
		v.Notes = append(v.Notes, fmt.Sprintf("owned by %s: not a resource of its own, never synced by an app", strings.Join(o.Owners, ", ")))
		return
	case o.Group == "" && o.Kind == "Namespace" || isCRD(o):
		v.Outcome = Updated
		v.Notes = append(v.Notes, "a sync with Replace=true updates a "+o.Kind+", never replaces it")
		return
	}
	if o.Read && (len(cascadeKeeps(o, Context{})) > 0 || argocd.HasOption(o.Annotations[argocd.AnnotationSyncOptions], argocd.OptionPrune+"=false")) {
		v.Notes = append(v.Notes, "Prune=false, Delete=false and helm.sh/resource-policy: keep do not stop a forced replace")
	}
}

// judgeCascade reads a cascade as finalizeApplicationDeletion does: the live objects whose tracking
// names the app (copies included: GetManagedLiveObjs has no self-reference check) and top-level
// (no owners), permitted by the project, that shouldBeDeleted keeps (CRDs, the app itself,
// Delete=false, helm's keep); hooks have no exception. A resource whose status row requires
// deletion confirmation makes the whole cascade wait (nothing is deleted until approval).
func judgeCascade(o Object, c Context, v *Verdict) {
	switch {
	case len(o.Owners) > 0:
		v.Outcome = NotTopLevel
		v.Notes = append(v.Notes, fmt.Sprintf("owned by %s: not a resource of its own (the garbage collector deletes it with its owner)", strings.Join(o.Owners, ", ")))
		return
	case c.SelfApp:
		v.Outcome = NotManaged
		v.Notes = append(v.Notes, "the app's own Application object: Argo CD never deletes it with the app")
		return
	case c.NotPermitted:
		v.Outcome = NotManaged
		v.Notes = append(v.Notes, "the app's project does not permit it: Argo CD's cascade leaves it")
		return
	}
	if immortal(o) {
		v.Outcome = Kept
		v.Guards = append(v.Guards, risk.GuardImmortalNamespace)
	}
	if isCRD(o) {
		v.Outcome = Kept
		v.Guards = append(v.Guards, risk.GuardCRDNotCascaded)
	}
	keeps := cascadeKeeps(o, c)
	if len(keeps) > 0 {
		v.Outcome = Kept
		v.Guards = append(v.Guards, keeps...)
	}
	waits, why := requiresConfirmation(o, c)
	v.Notes = append(v.Notes, why...)
	if waits {
		v.Guards = append(v.Guards, risk.GuardDeleteConfirm)
		if v.Outcome == Deleted {
			v.Outcome = Waits
		}
	}
	if isHook(o) && v.Outcome == Deleted {
		v.Notes = append(v.Notes, "a hook: a cascade deletes hooks like any resource")
	}
	if o.Read && v.Outcome == Deleted {
		if p, ok := argocd.OptionValue(o.Annotations[argocd.AnnotationSyncOptions], argocd.OptionPrune); ok && p == "false" {
			v.Notes = append(v.Notes, "Prune=false does nothing against the cascade deletion of its app")
		}
	}
}

// From v3.4.0 (argocd.RuleAppLevelDelete) shouldBeDeleted reads the first Delete= entry of the
// object, else the app's syncOptions; isObjRequiresDeletionConfirmation adds Prune=confirm and the
// app-level options. Before, Delete=false and Delete=confirm count only as exact entries of the object.

// ruleSets are the release lines whose rules apply: the known one, or both when unknown.
func ruleSets(v *argocd.Version) []bool {
	if v != nil {
		return []bool{argocd.RuleAppLevelDelete.Applies(*v)}
	}
	return []bool{false, true}
}

// deleteOption is the Delete= value that counts: the object's, else (v3.4+) the app's.
func deleteOption(o Object, c Context, appLevel bool) (string, bool) {
	objectOptions := o.Annotations[argocd.AnnotationSyncOptions]
	if !appLevel {
		switch {
		case argocd.HasOption(objectOptions, argocd.OptionDelete+"=false"):
			return "false", true
		case argocd.HasOption(objectOptions, argocd.OptionDelete+"=confirm"):
			return "confirm", true
		}
		return "", false
	}
	if v, ok := argocd.OptionValue(objectOptions, argocd.OptionDelete); ok {
		return v, true
	}
	return appOptionValue(c.AppSyncOptions, argocd.OptionDelete)
}

// appOptionValue is SyncOptions.GetOptionValue: the first entry with the prefix, not trimmed.
func appOptionValue(options []string, key string) (string, bool) {
	for _, o := range options {
		if v, ok := strings.CutPrefix(o, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// cascadeKeeps are the object's own guards against a cascade: Delete=false and helm's keep. A
// guard that depends on the unknown version counts only when every release line reads it.
func cascadeKeeps(o Object, c Context) []risk.Guard {
	if !o.Read {
		return nil
	}
	var gs []risk.Guard
	disabled := true
	for _, appLevel := range ruleSets(c.Version) {
		if v, _ := deleteOption(o, c, appLevel); v != "false" {
			disabled = false
		}
	}
	if disabled {
		gs = append(gs, risk.GuardDeleteDisabled)
	}
	if argocd.HasOption(o.Annotations[argocd.AnnotationHelmResourcePolicy], "keep") {
		gs = append(gs, risk.GuardHelmKeep)
	}
	return gs
}

// requiresConfirmation reads the status row's requiresDeletionConfirmation (computed by Argo CD
// from the manifest and the live object) and the live object's own options: an object the app does
// not list is deleted without waiting.
func requiresConfirmation(o Object, c Context) (bool, []string) {
	if o.Row == nil {
		return false, []string{"not listed by its app (its tracking names another object): the cascade deletes it without waiting for any approval"}
	}
	if o.Row.RequiresDeletionConfirmation {
		return true, nil
	}
	if !o.Read {
		return false, nil
	}
	confirm := true
	for _, appLevel := range ruleSets(c.Version) {
		if !confirmedBy(o, c, appLevel) {
			confirm = false
		}
	}
	return confirm, nil
}

func confirmedBy(o Object, c Context, appLevel bool) bool {
	if v, _ := deleteOption(o, c, appLevel); v == "confirm" {
		return true
	}
	if !appLevel {
		return false
	}
	if v, ok := argocd.OptionValue(o.Annotations[argocd.AnnotationSyncOptions], argocd.OptionPrune); ok {
		return v == "confirm"
	}
	v, _ := appOptionValue(c.AppSyncOptions, argocd.OptionPrune)
	return v == "confirm"
}

// judgeServer adds what the API server does: unprune's admission policy counts unless a probe
// shows the deletion allowed; a probe's denial counts whatever unprune recognises.
func judgeServer(o Object, c Context, v *Verdict) {
	covered := c.Policy.Covers(o.Resource(), o.Labels)
	if covered {
		v.Guards = append(v.Guards, guard.PolicyGuard)
	}
	switch c.Probe {
	case ProbeDenied:
		v.Guards, v.Outcome = append(v.Guards, GuardProbeDenied), Kept
	case ProbeControllerForbidden:
		v.Guards, v.Outcome = append(v.Guards, GuardController), Kept
	case ProbeGone:
		v.Outcome = Gone
	case ProbeAllowed:
		if covered {
			v.Notes = append(v.Notes, "the dry-run DELETE went through: the admission policy does not stop it (not enforced yet, or not matching)")
		}
	default:
		if covered {
			v.Outcome = Kept
		}
	}
}
