package appset

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/fields"
)

// Cluster is one of Argo CD's cluster Secrets, as the clusters generator reads it
// (applicationset/generators/cluster.go getClusterParameters).
type Cluster struct {
	Name, Server, Project string
	Labels, Annotations   map[string]string
}

// excludedClusterAnnotation tells the annotations of a cluster Secret the generator does not pass
// on (cluster.go excludedClusterAnnotations).
func excludedClusterAnnotation(key string) bool {
	switch key {
	case "argocd.argoproj.io/refresh", "argocd.argoproj.io/refresh-timestamp", "argocd.argoproj.io/hydrate",
		"argocd.argoproj.io/hydrate-timestamp", "argocd.argoproj.io/tracking-id", "argocd.argoproj.io/installation-id",
		"kubectl.kubernetes.io/last-applied-configuration":
		return true
	}
	return false
}

// InClusterName and InClusterServer are the local cluster the clusters generator adds when no
// Secret names it and the generator has no selector.
const (
	InClusterName   = "in-cluster"
	InClusterServer = "https://kubernetes.default.svc"
)

// generate returns one generator's parameter sets and its own template (merged over the set's by
// the caller). outer, for the second generator of a matrix, is the first one's parameter set that
// its spec is interpolated with (generator_spec_processor.go InterpolateGenerator).
func generate(s ApplicationSet, src Sources, g map[string]any, outer map[string]any) ([]map[string]any, map[string]any, error) {
	if len(outer) > 0 {
		rendered, err := replaceDeep(g, outer, s)
		if err != nil {
			return nil, nil, err
		}
		g, _ = rendered.(map[string]any)
	}
	var kinds []string
	for k := range g {
		if k != "selector" {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	if len(kinds) != 1 {
		return nil, nil, fmt.Errorf("a generator must have exactly one kind, found %v", kinds)
	}
	spec, _ := g[kinds[0]].(map[string]any)
	var params []map[string]any
	var err error
	switch kinds[0] {
	case "list":
		params, err = listParams(s, spec)
	case "clusters":
		params, err = clusterParams(s, src, spec)
	case "git":
		params, err = gitParams(s, src, spec)
	case "matrix":
		params, err = matrixParams(s, src, spec)
	case "merge":
		params, err = mergeParams(s, src, spec)
	default:
		// scmProvider, pullRequest, plugin, clusterDecisionResource, oci: they ask a remote service
		// or a cluster resource unprune does not read.
		return nil, nil, fmt.Errorf("the %s generator calls out to a service: not evaluated", kinds[0])
	}
	if err != nil {
		return nil, nil, err
	}
	if sel, ok := g["selector"].(map[string]any); ok {
		if params, err = selectParams(params, sel); err != nil {
			return nil, nil, err
		}
	}
	return params, fields.Map(spec, "template"), nil
}

// listParams: elements as they are with goTemplate, else every value a string and "values" flattened
// to values.KEY (applicationset/generators/list.go); elementsYaml appended.
func listParams(s ApplicationSet, spec map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, e := range fields.List(spec["elements"]) {
		element, _ := e.(map[string]any)
		if s.GoTemplate {
			out = append(out, element)
			continue
		}
		params := map[string]any{}
		for k, v := range element {
			if k == "values" {
				values, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("list element: values is not a map")
				}
				for vk, vv := range values {
					sv, ok := vv.(string)
					if !ok {
						return nil, fmt.Errorf("list element: values.%s is not a string (Argo CD refuses it without goTemplate)", vk)
					}
					params["values."+vk] = sv
				}
				continue
			}
			sv, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("list element: %s is not a string (Argo CD refuses it without goTemplate)", k)
			}
			params[k] = sv
		}
		out = append(out, params)
	}
	if y := fields.String(spec["elementsYaml"]); y != "" {
		var more []map[string]any
		if err := yaml.Unmarshal([]byte(y), &more); err != nil {
			return nil, fmt.Errorf("list elementsYaml: %w", err)
		}
		out = append(out, more...)
	}
	return out, nil
}

// clusterParams: one parameter set per cluster Secret matching the selector, plus the local
// cluster when no selector is given and no Secret names it (cluster.go GenerateParams).
func clusterParams(s ApplicationSet, src Sources, spec map[string]any) ([]map[string]any, error) {
	if src.Clusters == nil {
		return nil, fmt.Errorf("the clusters generator needs Argo CD's cluster Secrets, which were not read")
	}
	if spec["flatList"] == true {
		return nil, fmt.Errorf("clusters flatList: not implemented by unprune")
	}
	sel, _ := spec["selector"].(map[string]any)
	var out []map[string]any
	inCluster := false
	for _, c := range src.Clusters {
		ok, err := matches(sel, c.Labels)
		if err != nil {
			return nil, err
		}
		inCluster = inCluster || c.Server == InClusterServer
		if !ok {
			continue
		}
		p := map[string]any{"name": c.Name, "nameNormalized": SanitizeName(c.Name), "server": c.Server, "project": c.Project}
		annotations := map[string]string{}
		for k, v := range c.Annotations {
			if !excludedClusterAnnotation(k) {
				annotations[k] = v
			}
		}
		if s.GoTemplate {
			meta := map[string]any{}
			if len(c.Annotations) > 0 {
				meta["annotations"] = stringMap(annotations)
			}
			if len(c.Labels) > 0 {
				meta["labels"] = stringMap(c.Labels)
			}
			p["metadata"] = meta
		} else {
			for k, v := range annotations {
				p["metadata.annotations."+k] = v
			}
			for k, v := range c.Labels {
				p["metadata.labels."+k] = v
			}
		}
		out = append(out, p)
	}
	if len(sel) == 0 && !inCluster {
		out = append(out, map[string]any{"name": InClusterName, "nameNormalized": InClusterName, "server": InClusterServer, "project": ""})
	}
	return withValues(s, out, fields.Map(spec, "values"))
}

// withValues adds a generator's values, themselves templated with each parameter set
// (appendTemplatedValues): values.KEY, or a values map with goTemplate.
func withValues(s ApplicationSet, params []map[string]any, values map[string]any) ([]map[string]any, error) {
	if len(values) == 0 {
		return params, nil
	}
	for _, p := range params {
		rendered := map[string]any{}
		for k, v := range values {
			out, err := Replace(fields.String(v), p, s)
			if err != nil {
				return nil, err
			}
			rendered[k] = out
		}
		if s.GoTemplate {
			p["values"] = rendered
			continue
		}
		for k, v := range rendered {
			p["values."+k] = v
		}
	}
	return params, nil
}

// matrixParams: the product of two generators, the second interpolated with each set of the first
// (matrix.go GenerateParams). Without goTemplate a key both define differently is an error.
func matrixParams(s ApplicationSet, src Sources, spec map[string]any) ([]map[string]any, error) {
	gens := fields.List(spec["generators"])
	if len(gens) != 2 {
		return nil, fmt.Errorf("a matrix needs exactly two generators, found %d", len(gens))
	}
	first, _ := gens[0].(map[string]any)
	second, _ := gens[1].(map[string]any)
	left, _, err := generate(s, src, first, nil)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var out []map[string]any
	for _, a := range left {
		right, _, err := generate(s, src, second, a)
		if err != nil {
			return nil, fmt.Errorf("matrix: %w", err)
		}
		for _, b := range right {
			combined := map[string]any{}
			maps.Copy(combined, b)
			for k, v := range a {
				if old, ok := combined[k]; ok && !s.GoTemplate && fmt.Sprint(old) != fmt.Sprint(v) {
					return nil, fmt.Errorf("matrix: both generators set %q differently", k)
				}
				combined[k] = v
			}
			out = append(out, combined)
		}
	}
	return out, nil
}

// mergeParams: the first generator's sets, each overridden by the sets of the others that have the
// same values of mergeKeys (merge.go GenerateParams).
func mergeParams(s ApplicationSet, src Sources, spec map[string]any) ([]map[string]any, error) {
	gens := fields.List(spec["generators"])
	keys := fields.Strings(spec["mergeKeys"])
	if len(gens) < 2 || len(keys) == 0 {
		return nil, fmt.Errorf("a merge needs two generators or more and mergeKeys")
	}
	var base map[string]map[string]any
	var order []string
	for i, g := range gens {
		gm, _ := g.(map[string]any)
		sets, _, err := generate(s, src, gm, nil)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		byKey := map[string]map[string]any{}
		for _, p := range sets {
			k := mergeKey(keys, p)
			if _, dup := byKey[k]; dup {
				return nil, fmt.Errorf("merge: two parameter sets have the merge key %s", k)
			}
			byKey[k] = p
			if i == 0 {
				order = append(order, k)
			}
		}
		if i == 0 {
			base = byKey
			continue
		}
		for k, p := range base {
			if o, ok := byKey[k]; ok {
				maps.Copy(p, o)
			}
		}
	}
	out := make([]map[string]any, 0, len(order))
	for _, k := range order {
		out = append(out, base[k])
	}
	return out, nil
}

func mergeKey(keys []string, p map[string]any) string {
	m := map[string]any{}
	for _, k := range keys {
		m[k] = p[k]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// selectParams keeps the sets whose flattened parameters match the generator's selector
// (generator_spec_processor.go Transform).
func selectParams(params []map[string]any, sel map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, p := range params {
		ok, err := matches(sel, flatten(p))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// matches evaluates a label selector's matchLabels; matchExpressions are not implemented.
func matches(sel map[string]any, labels map[string]string) (bool, error) {
	if len(fields.List(sel["matchExpressions"])) > 0 {
		return false, fmt.Errorf("selector matchExpressions: not implemented by unprune")
	}
	for k, v := range fields.Map(sel, "matchLabels") {
		if labels[k] != fields.String(v) {
			return false, nil
		}
	}
	return true, nil
}

func flatten(p map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				walk(joinKey(prefix, k), x)
			}
		case []any:
			for i, x := range t {
				walk(joinKey(prefix, fmt.Sprint(i)), x)
			}
		default:
			out[prefix] = fmt.Sprint(v)
		}
	}
	walk("", p)
	return out
}

func joinKey(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SanitizeName is Argo CD's normalize (applicationset/utils/template_functions.go): lower case,
// anything but [-a-z0-9.] turned into '-', at most 253 characters, '-' and '.' trimmed.
func SanitizeName(name string) string {
	name = strings.Map(func(c rune) rune {
		if c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			return c
		}
		return '-'
	}, strings.ToLower(name))
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}
