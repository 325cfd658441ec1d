package risk

import (
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		object    Object
		argocdNS  string
		wantClass Class
		wantWhy   string
	}{
		{name: "namespace", object: Object{Kind: "Namespace", Name: "team-a"}, argocdNS: "argocd",
			wantClass: High, wantWhy: "deleting a namespace deletes everything in it"},
		{name: "Argo CD's own namespace", object: Object{Kind: "Namespace", Name: "argocd"}, argocdNS: "argocd",
			wantClass: High, wantWhy: "Argo CD's own namespace: deleting it deletes Argo CD"},
		{name: "Argo CD's namespace elsewhere", object: Object{Kind: "Namespace", Name: "gitops"}, argocdNS: "gitops",
			wantClass: High, wantWhy: "Argo CD's own namespace: deleting it deletes Argo CD"},
		{name: "CRD", object: Object{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
			wantClass: High, wantWhy: "deleting a CRD deletes every custom resource of its kind, cluster-wide"},
		{name: "PersistentVolume", object: Object{Kind: "PersistentVolume", Name: "pv-1"},
			wantClass: High, wantWhy: "data: the volume may be deleted with it (reclaim policy Delete)"},
		{name: "PersistentVolumeClaim", object: Object{Kind: "PersistentVolumeClaim", Namespace: "db", Name: "data"},
			wantClass: High, wantWhy: "data: the volume may be deleted with it (reclaim policy Delete)"},
		{name: "StorageClass", object: Object{Group: "storage.k8s.io", Kind: "StorageClass", Name: "fast"},
			wantClass: High, wantWhy: "storage: new volumes of this class can no longer be provisioned"},
		{name: "ClusterRole", object: Object{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
			wantClass: High, wantWhy: "cluster-wide access control"},
		{name: "ClusterRoleBinding", object: Object{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: "admin"},
			wantClass: High, wantWhy: "cluster-wide access control"},
		{name: "ValidatingWebhookConfiguration", object: Object{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Name: "w"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "MutatingWebhookConfiguration", object: Object{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", Name: "w"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "ValidatingAdmissionPolicy", object: Object{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy", Name: "p"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "ValidatingAdmissionPolicyBinding", object: Object{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding", Name: "p"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "MutatingAdmissionPolicy", object: Object{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy", Name: "p"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "MutatingAdmissionPolicyBinding", object: Object{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding", Name: "p"},
			wantClass: High, wantWhy: "admission control: policies stop being enforced"},
		{name: "APIService", object: Object{Group: "apiregistration.k8s.io", Kind: "APIService", Name: "v1beta1.metrics.k8s.io"},
			wantClass: High, wantWhy: "an aggregated API disappears"},
		{name: "Argo CD Application", object: Object{Group: "argoproj.io", Kind: "Application", Namespace: "team-a", Name: "child"}, argocdNS: "argocd",
			wantClass: High, wantWhy: "an Argo CD object"},
		{name: "Argo CD AppProject", object: Object{Group: "argoproj.io", Kind: "AppProject", Namespace: "argocd", Name: "default"}, argocdNS: "argocd",
			wantClass: High, wantWhy: "an Argo CD object"},
		{name: "ConfigMap in Argo CD's namespace", object: Object{Kind: "ConfigMap", Namespace: "argocd", Name: "argocd-cm"}, argocdNS: "argocd",
			wantClass: High, wantWhy: "an object in Argo CD's own namespace"},
		{name: "ConfigMap", object: Object{Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}, argocdNS: "argocd",
			wantClass: Normal},
		{name: "Deployment", object: Object{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}, argocdNS: "argocd",
			wantClass: Normal},
		{name: "Role is namespaced, normal", object: Object{Group: "rbac.authorization.k8s.io", Kind: "Role", Namespace: "guestbook", Name: "r"}, argocdNS: "argocd",
			wantClass: Normal},
		{name: "cluster-scoped object with no Argo CD namespace known", object: Object{Group: "example.com", Kind: "Widget", Name: "w"},
			wantClass: Normal},
		{name: "kind in another group is not the core kind", object: Object{Group: "example.com", Kind: "Namespace", Name: "n"}, argocdNS: "argocd",
			wantClass: Normal},
		{name: "CRD kind in another group", object: Object{Group: "example.com", Kind: "CustomResourceDefinition", Name: "c"},
			wantClass: Normal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, why := Classify(tt.object, tt.argocdNS)
			if class != tt.wantClass || why != tt.wantWhy {
				t.Errorf("Classify = %s, %q; want %s, %q", class, why, tt.wantClass, tt.wantWhy)
			}
		})
	}
}

func TestGuardDescribe(t *testing.T) {
	tests := map[Guard]string{
		GuardImmortalNamespace:   "the API server refuses to delete this namespace",
		GuardPruneDisabled:       "sync-options Prune=false: Argo CD never prunes it",
		GuardPruneConfirm:        "sync-options Prune=confirm: a prune waits for approval on the Application",
		Guard("AdmissionPolicy"): "AdmissionPolicy",
	}
	for g, want := range tests {
		if got := g.Describe(); got != want {
			t.Errorf("%s.Describe() = %q, want %q", g, got, want)
		}
	}
}
