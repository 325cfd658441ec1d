package appset

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/fields"
)

// Render renders the template with one parameter set into the Application it generates
// (applicationset/utils/utils.go RenderTemplateParams): every string, map keys included, is
// replaced; the app lives in the set's namespace; the resources finalizer is added when the
// template has no finalizers, unless the set preserves resources on deletion.
func Render(tmpl map[string]any, params map[string]any, s ApplicationSet) (Generated, error) {
	out, err := replaceDeep(tmpl, params, s)
	if err != nil {
		return Generated{}, err
	}
	app, _ := out.(map[string]any)
	if app == nil {
		app = map[string]any{}
	}
	meta, _ := app["metadata"].(map[string]any)
	if meta == nil {
		// The template's metadata fields sit at its top level in Argo CD's type; a manifest's
		// template carries them under metadata.
		meta = map[string]any{}
	}
	meta["namespace"] = s.Namespace
	// An empty parameter set returns the template untouched, before the finalizer is added.
	if len(params) > 0 && len(fields.List(meta["finalizers"])) == 0 && !s.PreserveResourcesOnDeletion {
		meta["finalizers"] = []any{argocd.FinalizerResources}
	}
	content := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": app["spec"]}
	name := fields.String(meta["name"])
	if name == "" || strings.Contains(name, "{{") {
		return Generated{}, fmt.Errorf("the template renders no usable name (%q)", name)
	}
	return Generated{Namespace: s.Namespace, Name: name, Content: content, Whole: argocd.ParseWhole(content)}, nil
}

// mergeTemplate puts a generator's own template over the set's: its fields win, the set's fill the
// rest (generator_spec_processor.go mergeGeneratorTemplate).
func mergeTemplate(own, base map[string]any) map[string]any {
	if len(own) == 0 {
		return base
	}
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range own {
		ov, _ := v.(map[string]any)
		bv, _ := out[k].(map[string]any)
		switch {
		case ov != nil && bv != nil:
			out[k] = mergeTemplate(ov, bv)
		case v != nil && v != "":
			out[k] = v
		}
	}
	return out
}

// replaceDeep replaces every string of a JSON value, map keys included.
func replaceDeep(v any, params map[string]any, s ApplicationSet) (any, error) {
	switch t := v.(type) {
	case string:
		return Replace(t, params, s)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := replaceDeep(x, params, s)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			r, err := replaceDeep(x, params, s)
			if err != nil {
				return nil, err
			}
			key, err := Replace(k, params, s)
			if err != nil {
				return nil, err
			}
			out[key] = r
		}
		return out, nil
	}
	return v, nil
}

// Replace renders one string (utils.go Render.Replace): with goTemplate, Go's text/template with
// the set's options and the functions unprune implements; else fasttemplate's {{param}} tags,
// trimmed, an unknown or non-string parameter left as written.
func Replace(tmpl string, params map[string]any, s ApplicationSet) (string, error) {
	if s.GoTemplate {
		t := template.New("").Funcs(funcs())
		for _, o := range s.GoTemplateOptions {
			t = t.Option(o)
		}
		parsed, err := t.Parse(tmpl)
		if err != nil {
			return "", fmt.Errorf("template %q: %w (unprune implements only %s)", tmpl, err, strings.Join(FuncNames(), ", "))
		}
		var b bytes.Buffer
		if err := parsed.Execute(&b, params); err != nil {
			return "", fmt.Errorf("template %q: %w", tmpl, err)
		}
		return b.String(), nil
	}
	var b strings.Builder
	rest := tmpl
	for {
		start := strings.Index(rest, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(rest[start+2:], "}}")
		if end < 0 {
			break
		}
		tag := rest[start+2 : start+2+end]
		b.WriteString(rest[:start])
		if v, ok := params[strings.TrimSpace(tag)].(string); ok && strings.TrimSpace(tag) != "" {
			b.WriteString(v)
		} else {
			b.WriteString("{{" + tag + "}}")
		}
		rest = rest[start+2+end+2:]
	}
	b.WriteString(rest)
	return b.String(), nil
}

// funcs are the sprig functions unprune implements, with sprig's argument order, and Argo CD's
// normalize. A template calling any other function fails to parse: the app is reported as not
// evaluated rather than rendered by a guess.
func funcs() template.FuncMap {
	return template.FuncMap{
		"lower": strings.ToLower, "upper": strings.ToUpper, "trim": strings.TrimSpace,
		"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"contains":   func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
		"quote":      func(s any) string { return fmt.Sprintf("%q", fmt.Sprint(s)) },
		"squote":     func(s any) string { return "'" + fmt.Sprint(s) + "'" },
		"toString":   func(s any) string { return fmt.Sprint(s) },
		"default":    sprigDefault,
		"trunc":      trunc,
		"join":       join,
		"splitList":  func(sep, s string) []any { return toAny(strings.Split(s, sep)) },
		"normalize":  SanitizeName,
	}
}

// FuncNames lists the implemented functions.
func FuncNames() []string {
	var out []string
	for k := range funcs() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sprigDefault returns given unless it is empty (nil, "", 0, false, an empty list or map).
func sprigDefault(def any, given ...any) any {
	if len(given) == 0 {
		return def
	}
	switch v := given[0].(type) {
	case nil:
		return def
	case string:
		if v == "" {
			return def
		}
	case bool:
		if !v {
			return def
		}
	case int:
		if v == 0 {
			return def
		}
	case float64:
		if v == 0 {
			return def
		}
	case []any:
		if len(v) == 0 {
			return def
		}
	case map[string]any:
		if len(v) == 0 {
			return def
		}
	}
	return given[0]
}

// trunc keeps the first n characters, or the last -n (sprig's trunc).
func trunc(n int, s string) string {
	switch {
	case n < 0 && len(s)+n > 0:
		return s[len(s)+n:]
	case n >= 0 && len(s) > n:
		return s[:n]
	}
	return s
}

func join(sep string, v any) string {
	var parts []string
	switch t := v.(type) {
	case []string:
		parts = t
	case []any:
		for _, x := range t {
			parts = append(parts, fmt.Sprint(x))
		}
	default:
		parts = []string{fmt.Sprint(v)}
	}
	return strings.Join(parts, sep)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
