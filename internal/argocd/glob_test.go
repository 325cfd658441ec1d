package argocd

import "testing"

// TestGlobMatch pins the pattern language of resource.exclusions and resource.inclusions to Argo
// CD's util/glob (gobwas/glob without separators), which path.Match does not speak: `*` crossing
// `/`, `{a,b}`, `[!a]`. Cases come from the issue and from Argo CD's util/glob and util/settings tests.
func TestGlobMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, text string
		want          bool
	}{
		// What operators write in argocd-cm.
		{"*", "https://kubernetes.default.svc", true},
		{"https://*", "https://host:6443/k8s/clusters/c-1", true},
		{"https://*.example.com", "https://api.eu.example.com", true},
		{"*.local", "https://cluster.local", true},
		{"*.local", "https://cluster.local/path", false},
		{"{apps,batch}", "apps", true},
		{"{apps,batch}", "batch", true},
		{"{apps,batch}", "extensions", false},
		{"**", "https://host/k8s/clusters/c-1", true},
		{"**", "", true},
		{"[!a]pps", "opps", true},
		{"[!a]pps", "apps", false},
		{"*.k8s.io", "apps.k8s.io", true},
		{"*.k8s.io", "k8s.io", false},
		{"?", "/", true},
		// `^` is no negation here, unlike path.Match.
		{"[^a]pps", "opps", false},
		{"[^a]pps", "^pps", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		// Argo CD's util/glob Test_Match.
		{"hello", "hello", true},
		{"hell", "hello", false},
		{"hell*", "hello", true},
		{"h*", "hello", true},
		{"e*", "hello", false},
		// Argo CD's util/settings TestExcludeResource.
		{"*.com", "foo.com", true},
		{"*.com", "baz.com", true},
		{"", "foo.com", false},
		{"", "", true},
		// A pattern that does not compile matches nothing, not even itself.
		{"e[[a*", "e[[a*", false},
		{"[", "", false},
		{"[", "[", false},
		{"{apps", "{apps", false},
	} {
		if got := globMatch(tt.pattern, tt.text); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.text, got, tt.want)
		}
	}
}

// TestFilteredResourceMatch rewrites Argo CD's TestExcludeResource and its resources_filter tests
// (util/settings) against our FilteredResource and ResourceFilter.
func TestFilteredResourceMatch(t *testing.T) {
	const group, kind, cluster = "foo.com", "bar", "baz.com"
	for _, tt := range []struct {
		name string
		r    FilteredResource
		want bool
	}{
		{"missing groups", FilteredResource{Kinds: []string{kind}, Clusters: []string{cluster}}, true},
		{"missing kinds", FilteredResource{APIGroups: []string{group}, Clusters: []string{cluster}}, true},
		{"missing clusters", FilteredResource{APIGroups: []string{group}, Kinds: []string{"*"}}, true},
		{"exact", FilteredResource{APIGroups: []string{group}, Kinds: []string{kind}, Clusters: []string{cluster}}, true},
		{"group glob", FilteredResource{APIGroups: []string{"*.com"}, Kinds: []string{kind}, Clusters: []string{cluster}}, true},
		{"kind star", FilteredResource{APIGroups: []string{group}, Kinds: []string{"*"}, Clusters: []string{cluster}}, true},
		{"cluster glob", FilteredResource{APIGroups: []string{group}, Kinds: []string{kind}, Clusters: []string{"*.com"}}, true},
		{"empty group", FilteredResource{APIGroups: []string{""}, Kinds: []string{kind}, Clusters: []string{cluster}}, false},
		{"empty kind", FilteredResource{APIGroups: []string{group}, Kinds: []string{""}, Clusters: []string{cluster}}, false},
		{"empty cluster", FilteredResource{APIGroups: []string{group}, Kinds: []string{kind}, Clusters: []string{""}}, false},
		{"repeated group", FilteredResource{APIGroups: []string{group, group}, Kinds: []string{kind}, Clusters: []string{cluster}}, true},
		{"repeated kind", FilteredResource{APIGroups: []string{group}, Kinds: []string{kind, kind}, Clusters: []string{cluster}}, true},
		{"repeated cluster", FilteredResource{APIGroups: []string{group}, Kinds: []string{kind}, Clusters: []string{cluster, cluster}}, true},
		// Kinds are no glob: exact and case-sensitive, or `*`.
		{"kind prefix glob", FilteredResource{APIGroups: []string{group}, Kinds: []string{"b*"}}, false},
		{"kind other case", FilteredResource{APIGroups: []string{group}, Kinds: []string{"Bar"}}, false},
		{"group alternation", FilteredResource{APIGroups: []string{"{foo,qux}.com"}, Kinds: []string{kind}}, true},
	} {
		if got := tt.r.match(group, kind, cluster); got != tt.want {
			t.Errorf("%s: %+v.match(%s, %s, %s) = %v, want %v", tt.name, tt.r, group, kind, cluster, got, tt.want)
		}
	}
	// Rubbish patterns match nothing, even the empty strings an empty pattern would.
	for _, r := range []FilteredResource{
		{APIGroups: []string{"["}, Kinds: []string{""}, Clusters: []string{""}},
		{APIGroups: []string{""}, Kinds: []string{"["}, Clusters: []string{""}},
		{APIGroups: []string{""}, Kinds: []string{""}, Clusters: []string{"["}},
	} {
		if r.match("", "", "") {
			t.Errorf("%+v matched empty group, kind and cluster", r)
		}
	}
}

func TestResourceFilterExcludedGlobs(t *testing.T) {
	const rancher = "https://host:6443/k8s/clusters/c-1"
	for _, tt := range []struct {
		name                 string
		f                    ResourceFilter
		group, kind, cluster string
		want                 bool
	}{
		{"every cluster", ResourceFilter{Exclusions: []FilteredResource{{Kinds: []string{"ConfigMap"}, Clusters: []string{"*"}}}},
			"", "ConfigMap", InClusterServer, true},
		{"star across slashes", ResourceFilter{Exclusions: []FilteredResource{{APIGroups: []string{"*"}, Kinds: []string{"*"}, Clusters: []string{"https://*"}}}},
			"apps", "Deployment", rancher, true},
		{"alternation", ResourceFilter{Exclusions: []FilteredResource{{APIGroups: []string{"{apps,batch}"}, Kinds: []string{"*"}}}},
			"batch", "Job", rancher, true},
		{"negated class", ResourceFilter{Exclusions: []FilteredResource{{APIGroups: []string{"[!a]pps"}}}},
			"apps", "Deployment", rancher, false},
		{"inclusion by alternation", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"{,apps}"}, Clusters: []string{"https://*"}}}},
			"apps", "Deployment", rancher, false},
		{"inclusion leaves out the rest", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"{,apps}"}, Clusters: []string{"https://*"}}}},
			"batch", "Job", rancher, true},
		// Argo CD's resources_filter tests.
		{"core exclusions", ResourceFilter{}, "metrics.k8s.io", "", "", true},
		{"unknown group", ResourceFilter{}, "rubbish.io", "", "", false},
		{"not included", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"whitelisted-resource"}}}},
			"non-whitelisted-resource", "", "", true},
		{"included", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"whitelisted-resource"}}}},
			"whitelisted-resource", "", "", false},
		{"excluded wins", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"w"}}}, Exclusions: []FilteredResource{{APIGroups: []string{"w"}, Kinds: []string{"k"}}}},
			"w", "k", "", true},
		{"included in its cluster", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-one"}}}, Exclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-two"}}}},
			"w", "", "cluster-one", false},
		{"excluded in its cluster", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-one"}}}, Exclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-two"}}}},
			"w", "", "cluster-two", true},
		{"no rule for the cluster", ResourceFilter{Inclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-one"}}}, Exclusions: []FilteredResource{{APIGroups: []string{"w"}, Clusters: []string{"cluster-two"}}}},
			"w", "", "cluster-three", false},
	} {
		if got := tt.f.Excluded(tt.group, tt.kind, tt.cluster); got != tt.want {
			t.Errorf("%s: Excluded(%q, %q, %q) = %v, want %v", tt.name, tt.group, tt.kind, tt.cluster, got, tt.want)
		}
	}
}
