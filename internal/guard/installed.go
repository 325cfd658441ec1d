package guard

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/risk"
)

// PolicyGuard is the guard of a resource the installed policy covers (recognised, not probed).
const PolicyGuard risk.Guard = "AdmissionPolicy"

// Installed is what unprune knows of its own admission policy (Policy) in a cluster, when it is
// installed, bound and denies: audit and check count what it covers as guarded.
type Installed struct {
	resources map[string]bool   // group/resource
	names     map[string]bool   // resource/name, resource/namespace/name
	kinds     map[string]string // group/Kind → resource, from KindsAnnotation
}

// Covers reports whether the installed policy protects the resource, given its live labels.
func (p *Installed) Covers(r argocd.Resource, labels map[string]string) bool {
	if p == nil {
		return false
	}
	resource, ok := p.kinds[r.Group+"/"+r.Kind]
	if !ok {
		for _, k := range Kinds {
			if k.Group == r.Group && k.Kind == r.Kind {
				resource, ok = k.Resource, true
			}
		}
	}
	if !ok || !p.resources[r.Group+"/"+resource] {
		return false
	}
	name := resource + "/" + r.Name
	if r.Namespace != "" {
		name = resource + "/" + r.Namespace + "/" + r.Name
	}
	return labels[ProtectLabel] == "true" || p.names[name]
}

// ReadInstalled recognises the policy `unprune guard policy` installs. Other admission policies are not
// evaluated here: --probe asks the API server, which evaluates them all.
func ReadInstalled(ctx context.Context, objects cluster.Objects) (*Installed, string) {
	reader, ok := objects.(cluster.PolicyReader)
	if !ok {
		return nil, ""
	}
	pol, err := reader.GetClusterObject(ctx, PolicyGroup, PolicyVersion, PolicyResource, PolicyName)
	if cluster.IsNotFound(err) {
		return nil, ""
	}
	where := objects.Info().Name
	if err != nil {
		return nil, fmt.Sprintf("cluster %s: cannot read ValidatingAdmissionPolicy %s (%v): guards by admission are not shown; %v asks the API server instead", where, PolicyName, err, option.Probe)
	}
	bind, err := reader.GetClusterObject(ctx, PolicyGroup, PolicyVersion, BindingResource, PolicyName)
	if err != nil {
		return nil, fmt.Sprintf("cluster %s: ValidatingAdmissionPolicy %s has no binding %s: it enforces nothing", where, PolicyName, PolicyName)
	}
	actions := stringSlice(bind, "spec", "validationActions")
	if !hasVerb(actions, "Deny") {
		return nil, fmt.Sprintf("cluster %s: binding %s does not Deny (actions %v): it enforces nothing", where, PolicyName, actions)
	}
	return installedFrom(pol), ""
}

// installedFrom reads what the policy protects from its rules and annotations.
func installedFrom(pol map[string]any) *Installed {
	info := &Installed{resources: map[string]bool{}, names: map[string]bool{}, kinds: map[string]string{}}
	spec, _ := pol["spec"].(map[string]any)
	constraints, _ := spec["matchConstraints"].(map[string]any)
	rules, _ := constraints["resourceRules"].([]any)
	for _, rule := range rules {
		m, _ := rule.(map[string]any)
		for _, g := range stringSlice(m, "apiGroups") {
			for _, res := range stringSlice(m, "resources") {
				info.resources[g+"/"+res] = true
			}
		}
	}
	for _, n := range annotationList(pol, NamesAnnotation) {
		info.names[n] = true
	}
	info.kinds = parseKindsAnnotation(annotationList(pol, KindsAnnotation))
	return info
}

// Protected is what a policy Policy built protects, as guard policy's options name it: the kinds (a
// built-in name, or RESOURCE[.GROUP]), the objects by name, and the break-glass group.
type Protected struct {
	Kinds, Names    []string
	BreakGlassGroup string
}

// breakGlass reads the group Policy's matchCondition exempts.
var breakGlass = regexp.MustCompile(`^!\((".*") in request\.userInfo\.groups\)$`)

// ProtectedBy reads a policy object back into the options that build it, so that another can add to
// it (guard policy --merge).
func ProtectedBy(pol map[string]any) Protected {
	info := installedFrom(pol)
	var p Protected
	for _, rule := range slices.Sorted(maps.Keys(info.resources)) {
		group, resource, _ := strings.Cut(rule, "/")
		kind := resource
		if group != "" {
			kind += "." + group
		}
		for _, k := range Kinds {
			if k.Group == group && k.Resource == resource {
				kind = k.Flag
			}
		}
		p.Kinds = append(p.Kinds, kind)
	}
	p.Names = annotationList(pol, NamesAnnotation)
	spec, _ := pol["spec"].(map[string]any)
	conds, _ := spec["matchConditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		expr, _ := m["expression"].(string)
		if g := breakGlass.FindStringSubmatch(expr); m["name"] == "not-break-glass" && g != nil {
			p.BreakGlassGroup, _ = strconv.Unquote(g[1])
		}
	}
	return p
}

// Merge adds what an installed policy protects to the options: its kinds and names come first, the
// options' own after them (each once); its break-glass group stays unless the options name one.
func (o PolicyOptions) Merge(p Protected) PolicyOptions {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = []string{"namespaces"}
	}
	o.Kinds = union(p.Kinds, kinds)
	o.Names = union(p.Names, o.Names)
	if o.BreakGlassGroup == "" {
		o.BreakGlassGroup = p.BreakGlassGroup
	}
	return o
}

func union(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// annotationList reads one of the policy's comma-separated annotations, in its order.
func annotationList(pol map[string]any, key string) []string {
	meta, _ := pol["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	v, _ := annotations[key].(string)
	var out []string
	for _, entry := range strings.Split(v, ",") {
		if entry = strings.TrimSpace(entry); entry != "" {
			out = append(out, entry)
		}
	}
	return out
}

// parseKindsAnnotation reads KindsAnnotation's entries: RESOURCE[.GROUP]=KIND.
func parseKindsAnnotation(entries []string) map[string]string {
	out := map[string]string{}
	for _, entry := range entries {
		rg, kind, ok := strings.Cut(entry, "=")
		if !ok || rg == "" || kind == "" {
			continue
		}
		resource, group, _ := strings.Cut(rg, ".")
		out[group+"/"+kind] = resource
	}
	return out
}

func stringSlice(m map[string]any, path ...string) []string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	raw, _ := cur.([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}
