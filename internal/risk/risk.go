// Package risk says how bad the deletion of an object would be, and what — if anything — would stop
// Argo CD's prune from deleting it. It is pure — callers pass in what they read from the cluster —
// except ContentsOf, which counts through the backend what a deletion would take with it.
package risk

import (
	"fmt"
)

// Class orders deletions by damage.
type Class string

const (
	High   Class = "High"
	Normal Class = "Normal"
)

// Object is what classification needs to know about an object.
type Object struct {
	Group, Kind, Namespace, Name string
	Annotations                  map[string]string
	Labels                       map[string]string
}

// ImmortalNamespaces are the namespaces the API server itself refuses to delete.
var ImmortalNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// Classify returns the risk class of deleting o and why. argocdNamespace marks Argo CD's own objects.
func Classify(o Object, argocdNamespace string) (Class, string) {
	gk := o.Kind
	if o.Group != "" {
		gk = o.Kind + "." + o.Group
	}
	switch gk {
	case "Namespace":
		if o.Name == argocdNamespace {
			return High, "Argo CD's own namespace: deleting it deletes Argo CD"
		}
		return High, "deleting a namespace deletes everything in it"
	case "CustomResourceDefinition.apiextensions.k8s.io":
		return High, "deleting a CRD deletes every custom resource of its kind, cluster-wide"
	case "PersistentVolume", "PersistentVolumeClaim":
		return High, "data: the volume may be deleted with it (reclaim policy Delete)"
	case "StorageClass.storage.k8s.io":
		return High, "storage: new volumes of this class can no longer be provisioned"
	case "ClusterRole.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io":
		return High, "cluster-wide access control"
	case "ValidatingWebhookConfiguration.admissionregistration.k8s.io", "MutatingWebhookConfiguration.admissionregistration.k8s.io",
		"ValidatingAdmissionPolicy.admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io",
		"MutatingAdmissionPolicy.admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding.admissionregistration.k8s.io":
		return High, "admission control: policies stop being enforced"
	case "APIService.apiregistration.k8s.io":
		return High, "an aggregated API disappears"
	}
	if o.Group == "argoproj.io" {
		return High, "an Argo CD object"
	}
	if argocdNamespace != "" && o.Namespace == argocdNamespace {
		return High, "an object in Argo CD's own namespace"
	}
	return Normal, ""
}

// Guard is something that stops a prune from deleting an object.
type Guard string

const (
	GuardImmortalNamespace Guard = "ImmortalNamespace" // the API server refuses
	GuardPruneDisabled     Guard = "PruneDisabled"     // the object's Prune=false: Argo CD skips the prune, app stays OutOfSync
	GuardPruneConfirm      Guard = "PruneConfirm"      // the object's Prune=confirm: Argo CD waits for approval on the app
	GuardAppPruneDisabled  Guard = "AppPruneDisabled"  // the app's syncOptions Prune=false (v3.4+); a sync request with its own options replaces it
	GuardAppPruneConfirm   Guard = "AppPruneConfirm"   // the app's syncOptions Prune=confirm (v3.4+)
)

// Hard reports guards that hold whatever the sync request says: the object's own options and the
// API server's refusal. App-level options are soft: a sync request carrying its own option list
// replaces them.
func (g Guard) Hard() bool {
	return g != GuardAppPruneDisabled && g != GuardAppPruneConfirm
}

// Describe is a short human explanation of a guard.
func (g Guard) Describe() string {
	switch g {
	case GuardImmortalNamespace:
		return "the API server refuses to delete this namespace"
	case GuardPruneDisabled:
		return "sync-options Prune=false: Argo CD never prunes it"
	case GuardPruneConfirm:
		return "sync-options Prune=confirm: a prune waits for approval on the Application"
	case GuardAppPruneDisabled:
		return "the app's syncOptions Prune=false (Argo CD v3.4+): soft, a sync request with its own options replaces it"
	case GuardAppPruneConfirm:
		return "the app's syncOptions Prune=confirm (Argo CD v3.4+): soft, a sync request with its own options replaces it"
	case GuardCRDNotCascaded:
		return "a CRD: Argo CD never deletes it with its app"
	case GuardDeleteDisabled:
		return "sync-options Delete=false: kept when its app is deleted"
	case GuardHelmKeep:
		return "helm.sh/resource-policy: keep: kept when its app is deleted"
	case GuardDeleteConfirm:
		return "Delete=confirm or Prune=confirm: the app's cascade deletion waits for argocd.argoproj.io/deletion-approved"
	}
	return fmt.Sprint(string(g))
}
