package argocd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// GroupKind is an entry of an AppProject's resource lists.
type GroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	// Name narrows cluster-scoped entries to matching names (clusterResourceWhitelist/Blacklist).
	Name string `json:"name,omitempty"`
}

// Project is the part of an AppProject that decides which resources an app may manage.
type Project struct {
	Name string
	// NamespaceWhitelist is nil when unset (every namespaced kind allowed) and empty when set to
	// nothing (none allowed): Argo CD tells the two apart.
	NamespaceWhitelist *[]GroupKind
	NamespaceBlacklist []GroupKind
	ClusterWhitelist   []GroupKind
	ClusterBlacklist   []GroupKind
}

// ParseProject reads an AppProject's JSON, from the Kubernetes API or Argo CD's.
func ParseProject(data []byte) (Project, error) {
	var doc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			NamespaceResourceWhitelist *[]GroupKind `json:"namespaceResourceWhitelist"`
			NamespaceResourceBlacklist []GroupKind  `json:"namespaceResourceBlacklist"`
			ClusterResourceWhitelist   []GroupKind  `json:"clusterResourceWhitelist"`
			ClusterResourceBlacklist   []GroupKind  `json:"clusterResourceBlacklist"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Project{}, fmt.Errorf("read AppProject: %w", err)
	}
	s := doc.Spec
	return Project{Name: doc.Metadata.Name, NamespaceWhitelist: s.NamespaceResourceWhitelist, NamespaceBlacklist: s.NamespaceResourceBlacklist,
		ClusterWhitelist: s.ClusterResourceWhitelist, ClusterBlacklist: s.ClusterResourceBlacklist}, nil
}

// Permits reports whether the project lets an app manage a resource, as AppProject
// IsGroupKindNamePermitted does (pkg/apis/application/v1alpha1/app_project_types.go): namespaced
// kinds unless blacklisted (and, with a whitelist, only listed ones); cluster-scoped kinds only
// when whitelisted — an empty cluster whitelist allows none. Entries are filepath.Match patterns, not
// Argo CD's glob: isResourceInList and isNamedResourceInList (pkg/apis/application/v1alpha1/types.go)
// call filepath.Match in every release from v2.14.11 to v3.6.1, so `{a,b}` matches nothing here.
func (p Project) Permits(group, kind, name string, namespaced bool) bool {
	if namespaced {
		white := p.NamespaceWhitelist == nil || (len(*p.NamespaceWhitelist) != 0 && inList(group, kind, "", *p.NamespaceWhitelist))
		return white && !inList(group, kind, "", p.NamespaceBlacklist)
	}
	return inList(group, kind, name, p.ClusterWhitelist) && !inList(group, kind, name, p.ClusterBlacklist)
}

func inList(group, kind, name string, list []GroupKind) bool {
	for _, item := range list {
		if ok, err := filepath.Match(item.Kind, kind); !ok || err != nil {
			continue
		}
		if ok, err := filepath.Match(item.Group, group); !ok || err != nil {
			continue
		}
		if item.Name == "" || name == "" {
			return true
		}
		if ok, err := filepath.Match(item.Name, name); ok && err == nil {
			return true
		}
	}
	return false
}

// FilteredResource is an entry of argocd-cm's resource.exclusions or resource.inclusions.
type FilteredResource struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Clusters  []string `json:"clusters,omitempty"`
}

// ResourceFilter is which kinds Argo CD watches at all (util/settings/resources_filter.go): objects
// of an excluded kind are never an app's, so never adopted nor pruned.
type ResourceFilter struct {
	Exclusions []FilteredResource
	Inclusions []FilteredResource
}

// coreExclusions are excluded whatever argocd-cm says.
var coreExclusions = []FilteredResource{
	{APIGroups: []string{"events.k8s.io", "metrics.k8s.io"}},
	{APIGroups: []string{""}, Kinds: []string{"Event"}},
	{APIGroups: []string{"coordination.k8s.io"}, Kinds: []string{"Lease"}},
}

// Excluded reports whether Argo CD ignores a kind in a cluster (its server URL), following
// IsExcludedResource: excluded wins; otherwise included, or allowed when no inclusion rule names
// the cluster. Groups and clusters are Argo CD glob patterns (see globMatch); kinds are exact,
// case-sensitive names or `*` (matchKind in util/settings/filtered_resource.go, v2.14.11–v3.6.1).
func (f ResourceFilter) Excluded(group, kind, clusterURL string) bool {
	for _, r := range append(append([]FilteredResource{}, coreExclusions...), f.Exclusions...) {
		if r.match(group, kind, clusterURL) {
			return true
		}
	}
	for _, r := range f.Inclusions {
		if r.match(group, kind, clusterURL) {
			return false
		}
	}
	for _, r := range f.Inclusions {
		if r.matchCluster(clusterURL) {
			return true
		}
	}
	return false
}

func (r FilteredResource) match(group, kind, clusterURL string) bool {
	return r.matchGroup(group) && r.matchKind(kind) && r.matchCluster(clusterURL)
}

func (r FilteredResource) matchGroup(group string) bool {
	for _, g := range r.APIGroups {
		if globMatch(g, group) {
			return true
		}
	}
	return len(r.APIGroups) == 0
}

func (r FilteredResource) matchKind(kind string) bool {
	for _, k := range r.Kinds {
		if k == "*" || k == kind {
			return true
		}
	}
	return len(r.Kinds) == 0
}

func (r FilteredResource) matchCluster(clusterURL string) bool {
	for _, c := range r.Clusters {
		if globMatch(c, clusterURL) {
			return true
		}
	}
	return len(r.Clusters) == 0
}
