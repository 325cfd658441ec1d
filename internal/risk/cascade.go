package risk

import (
	"github.com/unprune/unprune/internal/argocd"
)

// Guards against the cascade deletion of an app (its resources finalizer), which are not the
// guards against a prune: Prune=false does nothing here, Delete=false and helm's keep policy do,
// and CRDs are never cascade-deleted (controller/appcontroller.go shouldBeDeleted).
const (
	GuardCRDNotCascaded Guard = "CRDNotCascaded" // Argo CD never deletes a CRD with its app
	GuardDeleteDisabled Guard = "DeleteDisabled" // sync-options Delete=false (object, else the app's syncOptions)
	GuardHelmKeep       Guard = "HelmKeep"       // helm.sh/resource-policy: keep
	// GuardDeleteConfirm: Delete=confirm or Prune=confirm (object, else the app's syncOptions) make
	// the whole cascade wait for argocd.argoproj.io/deletion-approved on the Application
	// (controller/state.go isObjRequiresDeletionConfirmation).
	GuardDeleteConfirm Guard = "DeleteConfirm"
)

// CascadeGuards lists what keeps o when its app is deleted with a resources finalizer, read as
// Argo CD v3.6.1 reads it: the object's sync-options first, else the app's syncOptions.
// Admission policies are the caller's to add.
func CascadeGuards(o Object, appSyncOptions []string) []Guard {
	var gs []Guard
	if o.Kind == "Namespace" && o.Group == "" && ImmortalNamespaces[o.Name] {
		gs = append(gs, GuardImmortalNamespace)
	}
	if o.Kind == "CustomResourceDefinition" && o.Group == "apiextensions.k8s.io" {
		gs = append(gs, GuardCRDNotCascaded)
	}
	option := func(key string) string {
		if v, ok := argocd.OptionValue(o.Annotations[argocd.AnnotationSyncOptions], key); ok {
			return v
		}
		v, _ := argocd.AppOptionValue(appSyncOptions, key)
		return v
	}
	switch {
	case option(argocd.OptionDelete) == "false":
		gs = append(gs, GuardDeleteDisabled)
	case option(argocd.OptionDelete) == "confirm", option("Prune") == "confirm":
		gs = append(gs, GuardDeleteConfirm)
	}
	if argocd.HasOption(o.Annotations[argocd.AnnotationHelmResourcePolicy], "keep") {
		gs = append(gs, GuardHelmKeep)
	}
	return gs
}
