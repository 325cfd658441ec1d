package risk

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
