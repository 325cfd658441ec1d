package guard

import (
	"reflect"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
)

func TestInstalledCovers(t *testing.T) {
	namespacesOnly := &Installed{
		resources: map[string]bool{"/namespaces": true},
		names:     map[string]bool{"namespaces/team-a": true},
	}
	all := &Installed{
		resources: map[string]bool{
			"/namespaces": true, "/persistentvolumes": true, "apiextensions.k8s.io/customresourcedefinitions": true,
		},
		names: map[string]bool{"customresourcedefinitions/widgets.example.com": true, "persistentvolumes/data": true},
	}
	ns := func(name string) argocd.Resource {
		return argocd.Resource{Version: "v1", Kind: "Namespace", Name: name}
	}
	crd := argocd.Resource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	pv := argocd.Resource{Version: "v1", Kind: "PersistentVolume", Name: "data"}
	protected := map[string]string{"unprune.dev/protected": "true"}

	tests := []struct {
		name   string
		policy *Installed
		res    argocd.Resource
		labels map[string]string
		want   bool
	}{
		{name: "labelled namespace", policy: namespacesOnly, res: ns("team-b"), labels: protected, want: true},
		{name: "named namespace", policy: namespacesOnly, res: ns("team-a"), want: true},
		{name: "named namespace with other labels", policy: namespacesOnly, res: ns("team-a"), labels: map[string]string{"x": "y"}, want: true},
		{name: "unlabelled, unnamed namespace", policy: namespacesOnly, res: ns("team-b"), want: false},
		{name: "label false", policy: namespacesOnly, res: ns("team-b"), labels: map[string]string{"unprune.dev/protected": "false"}, want: false},
		{name: "label True", policy: namespacesOnly, res: ns("team-b"), labels: map[string]string{"unprune.dev/protected": "True"}, want: false},
		{name: "label yes", policy: namespacesOnly, res: ns("team-b"), labels: map[string]string{"unprune.dev/protected": "yes"}, want: false},
		{name: "labelled CRD, only namespaces covered", policy: namespacesOnly, res: crd, labels: protected, want: false},
		{name: "labelled PV, only namespaces covered", policy: namespacesOnly, res: pv, labels: protected, want: false},
		{name: "labelled CRD", policy: all, res: crd, labels: protected, want: true},
		{name: "named CRD", policy: all, res: crd, want: true},
		{name: "named PV", policy: all, res: pv, want: true},
		{name: "CRD kind in the wrong group", policy: all, res: argocd.Resource{Group: "example.com", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, labels: protected, want: false},
		{name: "namespace-named ConfigMap", policy: namespacesOnly, res: argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "team-a"}, labels: protected, want: false},
		{name: "nil policy, labelled", policy: nil, res: ns("team-b"), labels: protected, want: false},
		{name: "nil policy, named", policy: nil, res: ns("team-a"), want: false},
		{name: "empty policy", policy: &Installed{}, res: ns("team-a"), labels: protected, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Covers(tt.res, tt.labels); got != tt.want {
				t.Errorf("covers(%s, %v) = %v, want %v", tt.res, tt.labels, got, tt.want)
			}
		})
	}
}

func TestHasVerb(t *testing.T) {
	tests := []struct {
		verbs []string
		v     string
		want  bool
	}{
		{nil, "list", false},
		{[]string{}, "list", false},
		{[]string{"get", "list", "watch"}, "list", true},
		{[]string{"get", "watch"}, "list", false},
		{[]string{"List"}, "list", false},
		{[]string{"Audit", "Deny"}, "Deny", true},
		{[]string{"Warn"}, "Deny", false},
	}
	for _, tt := range tests {
		if got := hasVerb(tt.verbs, tt.v); got != tt.want {
			t.Errorf("hasVerb(%q, %q) = %v, want %v", tt.verbs, tt.v, got, tt.want)
		}
	}
}

// TestInstalledCoversWhatPolicyProtects reads back the policy Policy builds, as audit reads the
// installed one: a kind resolved through discovery is matched by its Kind and group, a namespaced
// object by its namespace and name.
func TestInstalledCoversWhatPolicyProtects(t *testing.T) {
	policy, _ := mustPolicy(t, PolicyOptions{Kinds: []string{"namespaces", "cm", "sts"}, Resolve: lookup,
		Names: []string{"namespaces/team-a", "configmaps/shop/settings"}})
	if got, want := dig(t, policy, "metadata", "annotations", KindsAnnotation), "namespaces=Namespace,configmaps=ConfigMap,statefulsets.apps=StatefulSet"; got != want {
		t.Errorf("annotation %s = %q, want %q", KindsAnnotation, got, want)
	}
	installed := installedFrom(policy)
	protected := map[string]string{ProtectLabel: "true"}
	cm := func(ns, name string) argocd.Resource {
		return argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	sts := argocd.Resource{Group: "apps", Version: "v1", Kind: "StatefulSet", Namespace: "db", Name: "postgres"}
	tests := []struct {
		name   string
		res    argocd.Resource
		labels map[string]string
		want   bool
	}{
		{name: "named namespace", res: argocd.Resource{Version: "v1", Kind: "Namespace", Name: "team-a"}, want: true},
		{name: "named ConfigMap", res: cm("shop", "settings"), want: true},
		{name: "same name, other namespace", res: cm("staging", "settings"), want: false},
		{name: "labelled ConfigMap", res: cm("staging", "settings"), labels: protected, want: true},
		{name: "labelled StatefulSet", res: sts, labels: protected, want: true},
		{name: "StatefulSet kind of another group", res: argocd.Resource{Group: "example.com", Kind: "StatefulSet", Namespace: "db", Name: "postgres"}, labels: protected, want: false},
		{name: "labelled Secret, not a kind of the policy", res: argocd.Resource{Version: "v1", Kind: "Secret", Namespace: "shop", Name: "settings"}, labels: protected, want: false},
	}
	for _, tt := range tests {
		if got := installed.Covers(tt.res, tt.labels); got != tt.want {
			t.Errorf("%s: Covers(%s) = %v, want %v", tt.name, tt.res, got, tt.want)
		}
	}
	// A policy of the built-in kinds alone carries no kinds annotation, as before: audit reads its
	// rules by the built-in table.
	builtinOnly, _ := mustPolicy(t, PolicyOptions{Kinds: []string{"namespaces", "pvs"}})
	if _, ok := dig(t, builtinOnly, "metadata", "annotations").(map[string]any)[KindsAnnotation]; ok {
		t.Errorf("a policy of built-in kinds carries %s", KindsAnnotation)
	}
	if !installedFrom(builtinOnly).Covers(argocd.Resource{Version: "v1", Kind: "PersistentVolume", Name: "data"}, protected) {
		t.Error("a policy of built-in kinds does not cover a labelled PersistentVolume")
	}
}

// TestMergeKeepsWhatIsProtected: guard policy --merge reads the installed policy back into options
// and adds the new ones, so that a policy applied for one object does not drop the Namespaces,
// kinds, names and break-glass group protected before.
func TestMergeKeepsWhatIsProtected(t *testing.T) {
	installed, _ := mustPolicy(t, PolicyOptions{Kinds: []string{"namespaces", "crds", "cm"}, Resolve: lookup,
		Names: []string{"namespaces/team-a", "configmaps/shop/settings"}, BreakGlassGroup: `O'Neil "ops"`})
	got := ProtectedBy(installed)
	want := Protected{Kinds: []string{"configmaps", "namespaces", "crds"}, Names: []string{"configmaps/shop/settings", "namespaces/team-a"}, BreakGlassGroup: `O'Neil "ops"`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ProtectedBy = %+v, want %+v", got, want)
	}
	merged := PolicyOptions{Kinds: []string{"namespaces", "sts"}, Names: []string{"statefulsets/db/postgres", "namespaces/team-a"}, Resolve: lookup}.Merge(got)
	if w := []string{"configmaps", "namespaces", "crds", "sts"}; !reflect.DeepEqual(merged.Kinds, w) {
		t.Errorf("merged kinds %q, want %q", merged.Kinds, w)
	}
	if w := []string{"configmaps/shop/settings", "namespaces/team-a", "statefulsets/db/postgres"}; !reflect.DeepEqual(merged.Names, w) {
		t.Errorf("merged names %q, want %q", merged.Names, w)
	}
	policy, _ := mustPolicy(t, merged)
	again := ProtectedBy(policy)
	if w := (Protected{Kinds: []string{"configmaps", "namespaces", "crds", "statefulsets.apps"}, Names: []string{"configmaps/shop/settings", "namespaces/team-a", "statefulsets/db/postgres"},
		BreakGlassGroup: `O'Neil "ops"`}); !reflect.DeepEqual(again, w) {
		t.Errorf("after the merge the policy protects %+v, want %+v", again, w)
	}
	// Options that name a group keep theirs; without --kinds, the default Namespaces join.
	if m := (PolicyOptions{BreakGlassGroup: "admins"}).Merge(got); m.BreakGlassGroup != "admins" || !reflect.DeepEqual(m.Kinds, []string{"configmaps", "namespaces", "crds"}) {
		t.Errorf("merge of defaults: %+v", m)
	}
}
