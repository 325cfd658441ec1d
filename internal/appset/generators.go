package appset

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"dario.cat/mergo"
	"github.com/jeremywohl/flatten"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/fields"
)

// Cluster is one of Argo CD's cluster Secrets, as the clusters generator reads it
// (applicationset/generators/cluster.go getClusterParameters).
type Cluster struct {
	Name, Server, Project string
	// HasProject tells a Secret without a project key from one with an empty project.
	Labels, Annotations map[string]string
}

// excludedClusterAnnotation tells the annotations of a cluster Secret the generator does not pass
// on (cluster.go excludedClusterAnnotations, v3.6).
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
// matched Secret names it and the generator has no selector.
const (
	InClusterName   = "in-cluster"
	InClusterServer = "https://kubernetes.default.svc"
)

// generatorKinds are ApplicationSetGenerator's generator fields in their declaration order, the
// order GetRelevantGenerators walks them in.
var generatorKinds = []string{"list", "clusters", "git", "scmProvider", "clusterDecisionResource", "pullRequest", "matrix", "merge", "plugin", "oci"}

// transformed is one generator kind's parameter sets and its template merged over the base.
type transformed struct {
	params   []map[string]any
	template map[string]any
}

// evaluation is one run over a set.
type evaluation struct {
	s     ApplicationSet
	src   Sources
	rules rules
}

// transform is generators.Transform: every generator kind the entry sets, each with its
// parameters filtered by the entry's selector and its template merged over base. outer, for the
// second generator of a matrix, interpolates the entry first (InterpolateGenerator).
func (e *evaluation) transform(g map[string]any, base map[string]any, outer map[string]any) ([]transformed, error) {
	var out []transformed
	found := false
	for _, kind := range generatorKinds {
		if g[kind] == nil {
			continue
		}
		found = true
		spec, _ := g[kind].(map[string]any)
		tmpl, err := mergeTemplate(fields.Map(spec, "template"), base)
		if err != nil {
			return nil, err
		}
		entry := g
		if len(outer) > 0 {
			if entry, err = e.interpolate(g, outer); err != nil {
				return nil, err
			}
			spec, _ = entry[kind].(map[string]any)
		}
		params, err := e.generate(kind, spec)
		if err != nil {
			return nil, err
		}
		// The selector is the entry's as written: Transform parses it before interpolating.
		if sel, ok := g["selector"].(map[string]any); ok {
			if params, err = e.selectParams(params, sel); err != nil {
				return nil, err
			}
		}
		out = append(out, transformed{params: params, template: tmpl})
	}
	if !found {
		var keys []string
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, notEvaluated{fmt.Sprintf("a generator with none that unprune knows (%s)", strings.Join(keys, ", "))}
	}
	return out, nil
}

func (e *evaluation) generate(kind string, spec map[string]any) ([]map[string]any, error) {
	switch kind {
	case "list":
		return e.listParams(spec)
	case "clusters":
		return e.clusterParams(spec)
	case "git":
		return e.gitParams(spec)
	case "matrix":
		return e.matrixParams(spec)
	case "merge":
		return e.mergeParams(spec)
	}
	// scmProvider, pullRequest, plugin, clusterDecisionResource, oci ask a service or a resource
	// unprune does not read: Argo CD's own generation (argocd-server) answers them.
	return nil, notEvaluated{fmt.Sprintf("the %s generator (it calls out to a service or reads a resource: ask Argo CD, with argocd-server reachable)", kind)}
}

// listParams: elements as they are with goTemplate; without, every value must be a string and
// "values" is flattened to values.KEY (list.go); elementsYaml appended as parsed.
func (e *evaluation) listParams(spec map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, raw := range fields.List(spec["elements"]) {
		element, ok := normalizeJSON(raw).(map[string]any)
		if !ok {
			return nil, errors.New("error unmarshling list element")
		}
		if e.s.GoTemplate {
			out = append(out, element)
			continue
		}
		// An element without keys leaves its parameter set nil (list.go assigns it in the loop).
		var params map[string]any
		for k, v := range element {
			if params == nil {
				params = map[string]any{}
			}
			if k == "values" {
				values, ok := v.(map[string]any)
				if !ok {
					return nil, errors.New("error parsing values map")
				}
				for vk, vv := range values {
					sv, ok := vv.(string)
					if !ok {
						return nil, errors.New("error parsing value as string")
					}
					params["values."+vk] = sv
				}
				continue
			}
			sv, ok := v.(string)
			if !ok {
				return nil, errors.New("error parsing value as string")
			}
			params[k] = sv
		}
		out = append(out, params)
	}
	if y := fields.String(spec["elementsYaml"]); y != "" {
		var more []map[string]any
		if err := yaml.Unmarshal([]byte(y), &more); err != nil {
			return nil, fmt.Errorf("error unmarshling decoded ElementsYaml %w", err)
		}
		out = append(out, more...)
	}
	return out, nil
}

// clusterParams: one parameter set per cluster Secret the selector matches (one per name), and the
// local cluster last when no matched Secret is the local one and the selector is empty
// (cluster.go GenerateParams).
func (e *evaluation) clusterParams(spec map[string]any) ([]map[string]any, error) {
	if e.src.Clusters == nil {
		return nil, notEvaluated{"the clusters generator without Argo CD's cluster Secrets (they could not be read)"}
	}
	if spec["flatList"] == true {
		return nil, notEvaluated{"the clusters generator's flatList"}
	}
	sel := fields.Map(spec, "selector")
	ignoreLocal := len(fields.Map(sel, "matchLabels")) > 0 || len(fields.List(sel["matchExpressions"])) > 0
	byName := map[string]Cluster{}
	var names []string
	for _, c := range e.src.Clusters {
		ok, err := matchesSecret(sel, c.Labels)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if _, seen := byName[c.Name]; !seen {
			names = append(names, c.Name)
		}
		byName[c.Name] = c
	}
	values := stringValues(spec["values"])
	var out []map[string]any
	local := false
	for _, n := range names {
		c := byName[n]
		local = local || c.Server == InClusterServer
		p := map[string]any{"name": c.Name, "nameNormalized": SanitizeName(c.Name), "server": c.Server, "project": c.Project}
		annotations := map[string]string{}
		for k, v := range c.Annotations {
			if !excludedClusterAnnotation(k) {
				annotations[k] = v
			}
		}
		if e.s.GoTemplate {
			meta := map[string]any{}
			if len(c.Annotations) > 0 {
				meta["annotations"] = annotations
			}
			if len(c.Labels) > 0 {
				meta["labels"] = maps.Clone(c.Labels)
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
		if err := e.appendValues(values, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if !ignoreLocal && !local {
		p := map[string]any{"name": InClusterName, "nameNormalized": InClusterName, "server": InClusterServer, "project": ""}
		if err := e.appendValues(values, p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// matchesSecret is the cluster Secrets' selector: apimachinery's LabelSelectorAsSelector with the
// cluster secret-type label added (getSecretsByClusterName), read as label selection reads it.
func matchesSecret(sel map[string]any, labels map[string]string) (bool, error) {
	return matchSelector(sel, labels)
}

// stringValues reads a generator's values (map[string]string in Argo CD's types).
func stringValues(v any) map[string]string {
	m, _ := v.(map[string]any)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		out[k] = fields.String(x)
	}
	return out
}

// appendValues adds a generator's values, templated with the parameter set itself
// (value_interpolation.go appendTemplatedValues): values.KEY, or a values map[string]string with
// goTemplate.
func (e *evaluation) appendValues(values map[string]string, params map[string]any) error {
	if len(values) == 0 {
		return nil
	}
	tmp := map[string]any{}
	for k, v := range values {
		out, err := replace(v, params, e.s.GoTemplate, e.s.GoTemplateOptions, e.s.funcs())
		if err != nil {
			return fmt.Errorf("failed to replace templated string: %w", err)
		}
		if e.s.GoTemplate {
			if tmp["values"] == nil {
				tmp["values"] = map[string]string{}
			}
			tmp["values"].(map[string]string)[k] = out
		} else {
			tmp["values."+k] = out
		}
	}
	maps.Copy(params, tmp)
	return nil
}

// matrixParams: the product of two generators, the second interpolated with each parameter set of
// the first (matrix.go GenerateParams): with goTemplate the two merged by mergo (the first wins,
// deeply), else combined as strings (a key both set differently is an error).
func (e *evaluation) matrixParams(spec map[string]any) ([]map[string]any, error) {
	gens := fields.List(spec["generators"])
	switch {
	case len(gens) < 2:
		return nil, errors.New("found less than two generators, Matrix support only two")
	case len(gens) > 2:
		return nil, errors.New("found more than two generators, Matrix support only two")
	}
	first, _ := gens[0].(map[string]any)
	second, _ := gens[1].(map[string]any)
	g0, err := e.childParams(first, nil)
	if err != nil {
		return nil, fmt.Errorf("error failed to get params for first generator in matrix generator: %w", err)
	}
	res := []map[string]any{}
	for _, a := range g0 {
		g1, err := e.childParams(second, a)
		if err != nil {
			return nil, fmt.Errorf("failed to get params for second generator in the matrix generator: %w", err)
		}
		for _, b := range g1 {
			if e.s.GoTemplate {
				tmp := map[string]any{}
				if err := mergo.Merge(&tmp, deepCopy(b).(map[string]any), mergo.WithOverride); err != nil {
					return nil, err
				}
				if err := mergo.Merge(&tmp, deepCopy(a).(map[string]any), mergo.WithOverride); err != nil {
					return nil, err
				}
				res = append(res, tmp)
				continue
			}
			// CombineStringMaps: both sides as strings (%v), a key set differently is an error.
			combined := map[string]any{}
			for k, v := range a {
				combined[k] = fmt.Sprintf("%v", v)
			}
			for k, v := range b {
				sv := fmt.Sprintf("%v", v)
				if old, ok := combined[k]; ok && old != sv {
					return nil, fmt.Errorf("found duplicate key %s with different value, a: %s ,b: %s", k, old, sv)
				}
				combined[k] = sv
			}
			res = append(res, combined)
		}
	}
	return res, nil
}

// childParams are a nested generator's parameters (matrix.go and merge.go getParams): Transform
// with an empty base template; exactly one kind.
func (e *evaluation) childParams(g map[string]any, outer map[string]any) ([]map[string]any, error) {
	t, err := e.transform(g, map[string]any{}, outer)
	if err != nil {
		return nil, fmt.Errorf("child generator returned an error on parameter generation: %w", err)
	}
	switch {
	case len(t) == 0:
		return nil, errors.New("child generator generated no parameters")
	case len(t) > 1:
		return nil, errors.New("found more than one generator in matrix.Generators")
	}
	return t[0].params, nil
}

// interpolate renders the second matrix generator's entry with a parameter set of the first
// (RenderGeneratorParams). Its values follow the release's rule: before v3.4.0 they are rendered
// like the rest; v3.4.0–v3.4.3 keep them as written; from v3.4.4 (3.4 line) and v3.5.0 each is
// rendered when it can be, and kept as written when it names a parameter the first generator lacks.
func (e *evaluation) interpolate(g map[string]any, outer map[string]any) (map[string]any, error) {
	var values []struct {
		kind string
		v    map[string]any
	}
	for _, kind := range []string{"clusters", "git", "scmProvider", "clusterDecisionResource", "pullRequest", "plugin"} {
		spec, _ := g[kind].(map[string]any)
		if v, ok := spec["values"].(map[string]any); ok && templated(v) {
			values = append(values, struct {
				kind string
				v    map[string]any
			}{kind, v})
		}
	}
	if len(values) > 0 && e.rules.values == valuesUnknown {
		return nil, notEvaluated{"a matrix whose second generator's values are templated (how they are rendered depends on the Argo CD version, which is unknown)"}
	}
	out, err := replaceDeep(g, outer, e.s.GoTemplate, e.s.GoTemplateOptions, e.s.funcs())
	if err != nil {
		return nil, err
	}
	entry := out.(map[string]any)
	for _, v := range values {
		spec := entry[v.kind].(map[string]any)
		switch e.rules.values {
		case valuesVerbatim:
			spec["values"] = v.v
		case valuesPreResolve:
			resolved := map[string]any{}
			for k, x := range v.v {
				s := fields.String(x)
				r, err := e.preResolve(s, outer)
				if err != nil {
					return nil, fmt.Errorf("failed to pre-resolve Values key %q: %w", k, err)
				}
				resolved[k] = r
			}
			spec["values"] = resolved
		}
	}
	return entry, nil
}

// preResolve renders one value with missingkey=error, keeping it as written when it names a
// parameter the outer set lacks (isMissingKeyError).
func (e *evaluation) preResolve(s string, outer map[string]any) (string, error) {
	options := e.s.GoTemplateOptions
	if e.s.GoTemplate {
		var stripped []string
		for _, o := range options {
			if !strings.HasPrefix(o, "missingkey=") {
				stripped = append(stripped, o)
			}
		}
		options = append(stripped, "missingkey=error")
	}
	r, err := replace(s, outer, e.s.GoTemplate, options, e.s.funcs())
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "map has no entry for key") || strings.Contains(msg, "can't evaluate field") {
			return s, nil
		}
		return "", err
	}
	return r, nil
}

func templated(v map[string]any) bool {
	for _, x := range v {
		if strings.Contains(fields.String(x), "{{") {
			return true
		}
	}
	return false
}

// mergeParams: the first generator's sets, each overridden by the sets of the others that have the
// same values of mergeKeys (merge.go GenerateParams): mergo with override under goTemplate, a
// plain copy otherwise.
func (e *evaluation) mergeParams(spec map[string]any) ([]map[string]any, error) {
	gens := fields.List(spec["generators"])
	keys := fields.Strings(spec["mergeKeys"])
	if len(gens) < 2 {
		return nil, errors.New("found less than two generators, Merge requires two or more")
	}
	var sets [][]map[string]any
	for i, g := range gens {
		gm, _ := g.(map[string]any)
		ps, err := e.childParams(gm, nil)
		if err != nil {
			return nil, fmt.Errorf("error getting params from generator %d of %d: %w", i+1, len(gens), err)
		}
		sets = append(sets, ps)
	}
	base, err := byMergeKey(keys, sets[0])
	if err != nil {
		return nil, err
	}
	for _, ps := range sets[1:] {
		other, err := byMergeKey(keys, ps)
		if err != nil {
			return nil, err
		}
		for k, b := range base {
			o, ok := other[k]
			if !ok {
				continue
			}
			if e.s.GoTemplate {
				if err := mergo.Merge(&b, deepCopy(o).(map[string]any), mergo.WithOverride); err != nil {
					return nil, err
				}
				base[k] = b
			} else {
				maps.Copy(b, o)
			}
		}
	}
	out := make([]map[string]any, 0, len(base))
	ordered := make([]string, 0, len(base))
	for k := range base {
		ordered = append(ordered, k)
	}
	sort.Strings(ordered)
	for _, k := range ordered {
		out = append(out, base[k])
	}
	return out, nil
}

// byMergeKey indexes sets by the JSON of their merge keys' values (getParamSetsByMergeKey).
func byMergeKey(keys []string, sets []map[string]any) (map[string]map[string]any, error) {
	if len(keys) < 1 {
		return nil, errors.New("no merge keys were specified")
	}
	dedup := map[string]bool{}
	for _, k := range keys {
		dedup[k] = true
	}
	out := make(map[string]map[string]any, len(sets))
	for _, p := range sets {
		key := map[string]any{}
		for k := range dedup {
			key[k] = p[k]
		}
		b, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		if _, dup := out[string(b)]; dup {
			return nil, fmt.Errorf("found duplicate param set key. Duplicate key was %s", b)
		}
		out[string(b)] = deepCopy(p).(map[string]any)
	}
	return out, nil
}

// selectParams keeps the sets whose flattened parameters match the entry's selector (Transform,
// flattenParameters with jeremywohl/flatten; from v3.4.0 maps of strings are flattened too).
func (e *evaluation) selectParams(params []map[string]any, sel map[string]any) ([]map[string]any, error) {
	if e.rules.flattenStringMaps == unknownRule && hasStringMaps(params) {
		return nil, notEvaluated{"a selector over parameters holding maps of strings (how Argo CD flattens them depends on its version, which is unknown)"}
	}
	var out []map[string]any
	for _, p := range params {
		in := p
		if e.rules.flattenStringMaps == ruleOn {
			in = normalizeForFlatten(p)
		}
		flat, err := flatten.Flatten(in, "", flatten.DotStyle)
		if err != nil {
			return nil, fmt.Errorf("error flatenning parameters: %w", err)
		}
		labels := make(map[string]string, len(flat))
		for k, v := range flat {
			labels[k] = fmt.Sprintf("%v", v)
		}
		ok, err := matchSelector(sel, labels)
		if err != nil {
			return nil, fmt.Errorf("error parsing label selector: %w", err)
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func hasStringMaps(params []map[string]any) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case map[string]string:
			return true
		case map[string]any:
			for _, x := range t {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range params {
		if walk(p) {
			return true
		}
	}
	return false
}

// normalizeForFlatten turns maps of strings into maps of values, recursively through maps
// (normalizeMapForFlatten, v3.4+).
func normalizeForFlatten(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		switch t := v.(type) {
		case map[string]string:
			inner := make(map[string]any, len(t))
			for ik, iv := range t {
				inner[ik] = iv
			}
			out[k] = inner
		case map[string]any:
			out[k] = normalizeForFlatten(t)
		default:
			out[k] = v
		}
	}
	return out
}

// matchSelector evaluates a label selector as Argo CD's LabelSelectorAsSelector does
// (applicationset/utils/selector.go, and apimachinery's for cluster Secrets): no selector or an
// empty one matches everything, keys must be qualified names, values are not restricted, and every
// requirement must hold.
func matchSelector(sel map[string]any, labels map[string]string) (bool, error) {
	for k, v := range fields.Map(sel, "matchLabels") {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return false, fmt.Errorf("key %q: %s", k, strings.Join(errs, "; "))
		}
		got, has := labels[k]
		if !has || got != fields.String(v) {
			return false, nil
		}
	}
	for _, x := range fields.List(sel["matchExpressions"]) {
		expr, _ := x.(map[string]any)
		key, op, values := fields.String(expr["key"]), fields.String(expr["operator"]), fields.Strings(expr["values"])
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return false, fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
		}
		got, has := labels[key]
		in := false
		for _, v := range values {
			in = in || v == got
		}
		var ok bool
		switch op {
		case "In":
			if len(values) == 0 {
				return false, fmt.Errorf("for 'in', 'notin' operators, values set can't be empty")
			}
			ok = has && in
		case "NotIn":
			if len(values) == 0 {
				return false, fmt.Errorf("for 'in', 'notin' operators, values set can't be empty")
			}
			ok = !has || !in
		case "Exists":
			ok = has
		case "DoesNotExist":
			ok = !has
		default:
			return false, fmt.Errorf("%q is not a valid pod selector operator", op)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// rule is a behaviour that changed between releases.
type rule int

const (
	unknownRule rule = iota
	ruleOff
	ruleOn
)

// valuesRule is how the second matrix generator's values are interpolated.
type valuesRule int

const (
	valuesUnknown valuesRule = iota
	valuesInterpolate
	valuesVerbatim
	valuesPreResolve
)

// rules are the release-dependent behaviours of the version evaluated.
type rules struct {
	flattenStringMaps rule
	values            valuesRule
	// filesExclude: the files generator honours exclude: true (argocd.RuleAppSetFilesExclude).
	filesExclude rule
}

func rulesOf(v *argocd.Version) rules {
	if v == nil {
		return rules{}
	}
	r := rules{flattenStringMaps: ruleOff, values: valuesInterpolate, filesExclude: ruleOff}
	if argocd.RuleAppSetFilesExclude.Applies(*v) {
		r.filesExclude = ruleOn
	}
	if argocd.RuleAppSetFlattenStringMaps.Applies(*v) {
		r.flattenStringMaps, r.values = ruleOn, valuesVerbatim
	}
	if argocd.RuleAppSetMatrixValuesPreResolved.Applies(*v) {
		r.values = valuesPreResolve
	}
	return r
}

// flattenObject flattens a file's object with jeremywohl/flatten's dot style, as the files
// generator does without goTemplate.
func flattenObject(o map[string]any) (map[string]any, error) {
	return flatten.Flatten(o, "", flatten.DotStyle)
}
