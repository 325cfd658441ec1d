package argocd

import "testing"

func TestProjectPermits(t *testing.T) {
	none := []GroupKind{}
	p, err := ParseProject([]byte(`{"metadata":{"name":"team"},"spec":{
		"clusterResourceWhitelist":[{"group":"","kind":"Namespace"},{"group":"rbac.authorization.k8s.io","kind":"Cluster*","name":"team-*"}],
		"clusterResourceBlacklist":[{"group":"","kind":"Namespace","name":"kube-*"}],
		"namespaceResourceBlacklist":[{"group":"","kind":"ResourceQuota"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		project                 Project
		group, kind, name       string
		namespaced, wantPermits bool
	}{
		{p, "", "Namespace", "team-a", false, true},
		{p, "", "Namespace", "kube-system", false, false},
		{p, "rbac.authorization.k8s.io", "ClusterRole", "team-reader", false, true},
		{p, "rbac.authorization.k8s.io", "ClusterRole", "admin", false, false},
		{p, "apiextensions.k8s.io", "CustomResourceDefinition", "x.example.com", false, false},
		{p, "", "ConfigMap", "c", true, true},
		{p, "", "ResourceQuota", "q", true, false},
		// An empty cluster whitelist allows no cluster-scoped kind; a nil namespace whitelist allows all.
		{Project{}, "", "Namespace", "x", false, false},
		{Project{NamespaceWhitelist: &none}, "", "ConfigMap", "c", true, false},
		// AppProject lists are filepath.Match patterns, not Argo CD's glob: no `{a,b}` alternation.
		{Project{NamespaceBlacklist: []GroupKind{{Group: "{apps,batch}", Kind: "*"}}}, "apps", "Deployment", "d", true, true},
		{Project{NamespaceBlacklist: []GroupKind{{Group: "[^a]pps", Kind: "*"}}}, "opps", "Deployment", "d", true, false},
	}
	for _, tt := range tests {
		if got := tt.project.Permits(tt.group, tt.kind, tt.name, tt.namespaced); got != tt.wantPermits {
			t.Errorf("%+v.Permits(%s/%s %s) = %v, want %v", tt.project.Name, tt.group, tt.kind, tt.name, got, tt.wantPermits)
		}
	}
}

func TestResourceFilterExcluded(t *testing.T) {
	f := ResourceFilter{Exclusions: []FilteredResource{{APIGroups: []string{"cilium.io"}, Kinds: []string{"*"}}}}
	for _, tt := range []struct {
		group, kind, cluster string
		want                 bool
	}{
		{"", "Event", "https://x", true},
		{"events.k8s.io", "Event", "https://x", true},
		{"coordination.k8s.io", "Lease", "https://x", true},
		{"cilium.io", "CiliumIdentity", "https://x", true},
		{"", "ConfigMap", "https://x", false},
	} {
		if got := f.Excluded(tt.group, tt.kind, tt.cluster); got != tt.want {
			t.Errorf("Excluded(%s/%s) = %v, want %v", tt.group, tt.kind, got, tt.want)
		}
	}
	inclusions := ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{""}, Kinds: []string{"ConfigMap"}, Clusters: []string{"https://prod"}}}}
	if inclusions.Excluded("", "ConfigMap", "https://prod") || !inclusions.Excluded("", "Secret", "https://prod") || inclusions.Excluded("", "Secret", "https://dev") {
		t.Error("inclusions: only listed kinds in the listed cluster")
	}
}

// TestResourceFilterHidden: resource.selectors (v3.6+) leave out the objects of a kind whose labels
// do not match every selector naming the kind, as gitops-engine's LIST/WATCH with the ANDed
// selectors does; exclusions still hide whole kinds.
func TestResourceFilterHidden(t *testing.T) {
	selectors, err := SelectorsOf(`
- apiGroups: [""]
  kinds: [ConfigMap]
  selector: team=payments
- apiGroups: [""]
  kinds: [ConfigMap]
  clusters: ["https://prod*"]
  selector: "!scratch"
- apiGroups: ["apps"]
  kinds: ["*"]
  selector: ""
`)
	if err != nil {
		t.Fatal(err)
	}
	f := ResourceFilter{Selectors: selectors, Exclusions: []FilteredResource{{APIGroups: []string{"cilium.io"}}}}
	for _, tc := range []struct {
		group, kind, cluster string
		labels               map[string]string
		hidden               bool
	}{
		{"", "ConfigMap", "https://dev", map[string]string{"team": "payments"}, false},
		{"", "ConfigMap", "https://dev", map[string]string{"team": "shop"}, true},
		{"", "ConfigMap", "https://dev", nil, true},
		{"", "ConfigMap", "https://prod-eu", map[string]string{"team": "payments", "scratch": "yes"}, true},
		{"", "ConfigMap", "https://prod-eu", map[string]string{"team": "payments"}, false},
		{"", "Secret", "https://dev", nil, false},
		{"apps", "Deployment", "https://dev", nil, false}, // an empty selector matches everything
		{"cilium.io", "CiliumNetworkPolicy", "https://dev", map[string]string{"team": "payments"}, true},
	} {
		if got := f.Hidden(tc.group, tc.kind, tc.cluster, tc.labels); got != tc.hidden {
			t.Errorf("Hidden(%s/%s in %s, %v) = %t, want %t", tc.group, tc.kind, tc.cluster, tc.labels, got, tc.hidden)
		}
	}
	if _, err := SelectorsOf("- kinds: [ConfigMap]\n  selector: 'team in (a'\n"); err == nil {
		t.Error("an unparsable selector was accepted; Argo CD refuses the settings")
	}
}

// TestParseProjectAnnotations: the deletion budget reads a project's budget from its annotations,
// through either backend's Project.
func TestParseProjectAnnotations(t *testing.T) {
	p, err := ParseProject([]byte(`{"metadata":{"name":"team","annotations":{"unprune.dev/deletion-budget":"10"}},"spec":{}}`))
	if err != nil || p.Name != "team" || p.Annotations["unprune.dev/deletion-budget"] != "10" {
		t.Fatalf("%+v %v", p, err)
	}
}
