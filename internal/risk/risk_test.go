package risk

import (
	"slices"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
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

func TestGuards(t *testing.T) {
	sync := func(v string) map[string]string {
		return map[string]string{"argocd.argoproj.io/sync-options": v}
	}
	tests := []struct {
		name   string
		object Object
		want   []Guard
	}{
		{name: "default namespace", object: Object{Kind: "Namespace", Name: "default"}, want: []Guard{GuardImmortalNamespace}},
		{name: "kube-system", object: Object{Kind: "Namespace", Name: "kube-system"}, want: []Guard{GuardImmortalNamespace}},
		{name: "kube-public", object: Object{Kind: "Namespace", Name: "kube-public"}, want: []Guard{GuardImmortalNamespace}},
		{name: "ordinary namespace", object: Object{Kind: "Namespace", Name: "team-a"}},
		{name: "a ConfigMap named default", object: Object{Kind: "ConfigMap", Namespace: "x", Name: "default"}},
		{name: "a Namespace kind in another group", object: Object{Group: "example.com", Kind: "Namespace", Name: "default"}},
		{name: "Prune=false", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("Prune=false")}, want: []Guard{GuardPruneDisabled}},
		{name: "Prune=false in a list", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("ServerSideApply=true, Prune=false")}, want: []Guard{GuardPruneDisabled}},
		{name: "Prune=confirm", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("Prune=confirm")}, want: []Guard{GuardPruneConfirm}},
		{name: "Prune=confirm in a list", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("ServerSideApply=true,Prune=confirm")}, want: []Guard{GuardPruneConfirm}},
		{name: "other options only", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("ServerSideApply=true,PruneLast=true")}},
		{name: "options are case-sensitive like Argo CD", object: Object{Kind: "ConfigMap", Name: "c", Annotations: sync("prune=false")}},
		{name: "Prune=false in compare-options does nothing", object: Object{Kind: "ConfigMap", Name: "c",
			Annotations: map[string]string{"argocd.argoproj.io/compare-options": "Prune=false"}}},
		{name: "immortal namespace with Prune=false", object: Object{Kind: "Namespace", Name: "kube-system", Annotations: sync("Prune=false")},
			want: []Guard{GuardImmortalNamespace, GuardPruneDisabled}},
		{name: "no annotations", object: Object{Kind: "ConfigMap", Name: "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
			if got, _ := Guards(tt.object, &v, nil); !slices.Equal(got, tt.want) {
				t.Errorf("Guards = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAppLevelGuards: app-level Prune= options count only from v3.4.0, are soft, and an object's
// own Prune= entry overrides them.
func TestAppLevelGuards(t *testing.T) {
	ns := Object{Kind: "Namespace", Name: "team-a"}
	v2, v33, v34 := argocd.Version{Major: 2, Minor: 14, Patch: 11}, argocd.Version{Major: 3, Minor: 3, Patch: 9}, argocd.Version{Major: 3, Minor: 4}
	for _, tt := range []struct {
		name    string
		version *argocd.Version
		object  Object
		app     []string
		want    []Guard
		note    bool
	}{
		{name: "v2.14.11 ignores app Prune=false", version: &v2, object: ns, app: []string{"Prune=false"}, note: true},
		{name: "v3.3.9 ignores app Prune=confirm", version: &v33, object: ns, app: []string{"Prune=confirm"}, note: true},
		{name: "v3.4.0 app Prune=false", version: &v34, object: ns, app: []string{"Prune=false"}, want: []Guard{GuardAppPruneDisabled}},
		{name: "unknown version: not counted", object: ns, app: []string{"Prune=false"}, note: true},
		{name: "object overrides app", version: &v34, app: []string{"Prune=false"},
			object: Object{Kind: "Namespace", Name: "x", Annotations: map[string]string{"argocd.argoproj.io/sync-options": "Prune=true"}}, note: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := Guards(tt.object, tt.version, tt.app)
			if !slices.Equal(got, tt.want) || (len(notes) > 0) != tt.note {
				t.Errorf("Guards = %q (notes %q), want %q (notes %v)", got, notes, tt.want, tt.note)
			}
			for _, g := range got {
				if g.Hard() {
					t.Errorf("app-level guard %s counted as hard", g)
				}
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
