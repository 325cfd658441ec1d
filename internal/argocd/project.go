package argocd

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
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
	Name        string
	Annotations map[string]string
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
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
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
	return Project{Name: doc.Metadata.Name, Annotations: doc.Metadata.Annotations, NamespaceWhitelist: s.NamespaceResourceWhitelist, NamespaceBlacklist: s.NamespaceResourceBlacklist,
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

// FilteredResource is an entry of argocd-cm's resource.exclusions, resource.inclusions or (v3.6+)
// resource.selectors.
type FilteredResource struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Clusters  []string `json:"clusters,omitempty"`
	// Selector is a label selector (resource.selectors only).
	Selector string `json:"selector,omitempty"`
}

// ResourceFilter is which objects Argo CD watches at all (util/settings/resources_filter.go): an
// object of an excluded kind, or (v3.6+) one a resource selector leaves out, is not in the
// controller's cache, so it is never an app's, never adopted nor pruned nor cascade-deleted.
type ResourceFilter struct {
	Exclusions []FilteredResource
	Inclusions []FilteredResource
	// Selectors are resource.selectors, set only for releases that read them (RuleResourceSelectors).
	Selectors []FilteredResource
}

// Hidden reports whether Argo CD's cache leaves out an object of a kind with these labels in a
// cluster: its kind is excluded, or it does not match every resource selector naming its kind.
// gitops-engine lists and watches each kind with the selectors of ResourcesFilter.GetLabelSelector
// ANDed (pkg/cache/cluster.go, v3.6.1), so a hidden object has no live state in Argo CD at all.
func (f ResourceFilter) Hidden(group, kind, clusterURL string, objectLabels map[string]string) bool {
	if f.Excluded(group, kind, clusterURL) {
		return true
	}
	for _, r := range f.Selectors {
		if strings.TrimSpace(r.Selector) == "" || !r.match(group, kind, clusterURL) {
			continue
		}
		sel, err := labels.Parse(r.Selector)
		if err != nil || !sel.Matches(labels.Set(objectLabels)) {
			// An unparsable selector makes Argo CD refuse the settings (util/settings, GetResourcesFilter);
			// ParseSelectors keeps it out, so err is for a selector set by hand.
			return true
		}
	}
	return false
}

// ReadFilter reads resource.exclusions, resource.inclusions and — for a release that reads them
// (RuleResourceSelectors) — resource.selectors from argocd-cm's data, with a warning for each value
// Argo CD would refuse. For an unknown release the selectors are not applied: what they may hide is
// then reported too, and unknownSelectors says so.
func ReadFilter(data map[string]string, version *Version) (f ResourceFilter, warnings []string, unknownSelectors bool) {
	for key, into := range map[string]*[]FilteredResource{"resource.exclusions": &f.Exclusions, "resource.inclusions": &f.Inclusions} {
		if raw := data[key]; raw != "" {
			if err := yaml.Unmarshal([]byte(raw), into); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s %s does not parse (%v): Argo CD refuses it too", ConfigMapName, key, err))
			}
		}
	}
	sort.Strings(warnings)
	raw := data[SettingResourceSelectors]
	switch {
	case raw == "":
	case version == nil:
		unknownSelectors = true
	case RuleResourceSelectors.Applies(*version):
		selectors, err := SelectorsOf(raw)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s %s does not parse (%v): Argo CD refuses it too", ConfigMapName, SettingResourceSelectors, err))
		}
		f.Selectors = selectors
	}
	return f, warnings, unknownSelectors
}

// SelectorsOf parses resource.selectors as Argo CD does: YAML entries, each selector a valid label
// selector, else the whole value is refused.
func SelectorsOf(raw string) ([]FilteredResource, error) {
	var out []FilteredResource
	if err := yaml.Unmarshal([]byte(raw), &out); err != nil {
		return nil, err
	}
	for _, r := range out {
		if _, err := labels.Parse(r.Selector); err != nil {
			return nil, fmt.Errorf("selector %q: %w", r.Selector, err)
		}
	}
	return out, nil
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
