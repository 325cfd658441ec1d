package argocd

import "slices"

// Sync options with which a sync replaces an object instead of applying it.
const (
	OptionReplace = "Replace=true"
	OptionForce   = "Force=true"
)

// Recreation is what a sync does to a live object it replaces: nothing of the kind (Never), a
// DELETE and a CREATE when the sync is forced (OnForce: FORCE ticked, `argocd app sync --force`),
// or at every sync (Always: Force=true on the object).
type Recreation int

const (
	Never Recreation = iota
	OnForce
	Always
)

// Recreated reports how a sync of an app recreates a live object of group/kind. With Replace=true
// — in the app's sync options (which argocd-server and automated sync put on the operation), or in
// the object's sync-options annotation, the manifest's or (v3.6) the live one's — gitops-engine
// syncs it with `kubectl replace`, and a forced one with `kubectl replace --force`: the object is
// deleted and created anew, with a new UID, whatever Prune= or Delete= it carries (those guard
// prunes and cascades only). A Namespace or a CustomResourceDefinition is updated instead, never
// replaced, since that would delete everything in it (pkg/sync/sync_context.go, applyObject: the
// same in gitops-engine v0.7.1 for v2.14 and in the in-tree gitops-engine of v3.6.1). The lab's
// TestForceReplaceOfASharedObject shows both on the real controller. Reading the live annotation
// on every line reports an object older lines would not recreate: the safe side.
func Recreated(group, kind string, appSyncOptions []string, manifestOptions, liveOptions string) Recreation {
	if kind == "Namespace" && group == "" || kind == "CustomResourceDefinition" && group == "apiextensions.k8s.io" {
		return Never
	}
	if !slices.Contains(appSyncOptions, OptionReplace) && !HasOption(manifestOptions, OptionReplace) && !HasOption(liveOptions, OptionReplace) {
		return Never
	}
	if HasOption(manifestOptions, OptionForce) || HasOption(liveOptions, OptionForce) {
		return Always
	}
	return OnForce
}
