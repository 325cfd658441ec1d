package appset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"

	"dario.cat/mergo"
	"github.com/Masterminds/sprig/v3"
	"github.com/valyala/fasttemplate"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/fields"
)

// Templates are rendered with the libraries Argo CD renders them with (applicationset/utils/utils.go
// Render): Go's text/template with sprig's functions when goTemplate is set, valyala/fasttemplate's
// {{param}} tags otherwise, and dario.cat/mergo to merge a generator's template over the set's.
// What the code around them reproduces is the walk over Argo CD's typed Application (every string,
// and every key of a map, replaced) and the parameters each generator makes.

// notEvaluated marks an error that is unprune's, not Argo CD's: the construct is not reproduced,
// so the answer is "not evaluated", never a guess.
type notEvaluated struct{ what string }

func (e notEvaluated) Error() string { return e.what + ": not reproduced by unprune" }

// Render renders the template with one parameter set into the Application it generates
// (RenderTemplateParams): every string of the template, map keys included, is replaced; the app
// lives in the set's namespace; the resources finalizer is added when the template has no
// finalizers, unless the set preserves resources on deletion. An empty parameter set returns the
// template untouched, before the finalizer is added.
func Render(tmpl map[string]any, params map[string]any, s ApplicationSet) (Generated, error) {
	app := tmpl
	if len(params) > 0 {
		out, err := replaceDeep(tmpl, params, s.GoTemplate, s.GoTemplateOptions, s.funcs())
		if err != nil {
			return Generated{}, err
		}
		app, _ = out.(map[string]any)
		if app == nil {
			app = map[string]any{}
		}
	}
	meta := map[string]any{}
	for k, v := range fields.Map(app, "metadata") {
		meta[k] = v
	}
	meta["namespace"] = s.Namespace
	if len(params) > 0 && len(fields.List(meta["finalizers"])) == 0 && !s.PreserveResourcesOnDeletion {
		meta["finalizers"] = []any{argocd.FinalizerResources}
	}
	content := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": app["spec"]}
	name := fields.String(meta["name"])
	return Generated{Namespace: s.Namespace, Name: name, Content: content, Whole: argocd.ParseWhole(content)}, nil
}

// mergeTemplate puts a generator's own template over the set's as mergeGeneratorTemplate does:
// mergo.Merge without override, so the generator's fields win and empty ones (false, 0, "", empty
// lists and maps) take the set's. On Argo CD's typed template that is the same walk, except inside
// helm.valuesObject, a raw JSON field merged as a whole there: both sides setting it is not
// reproduced.
func mergeTemplate(own, base map[string]any) (map[string]any, error) {
	if len(own) == 0 {
		return base, nil
	}
	if hasValuesObject(own) && hasValuesObject(base) {
		return nil, notEvaluated{"a generator's template and the set's both setting helm.valuesObject"}
	}
	dest := deepCopy(own).(map[string]any)
	if err := mergo.Merge(&dest, deepCopy(base).(map[string]any)); err != nil {
		return nil, fmt.Errorf("merge the generator's template: %w", err)
	}
	return dest, nil
}

func hasValuesObject(tmpl map[string]any) bool {
	spec := fields.Map(tmpl, "spec")
	sources := []any{spec["source"]}
	sources = append(sources, fields.List(spec["sources"])...)
	for _, s := range sources {
		m, _ := s.(map[string]any)
		if fields.Map(m, "helm")["valuesObject"] != nil {
			return true
		}
	}
	return false
}

// replaceDeep replaces every string of a JSON value and every key of its objects, and drops null
// members of objects, as deeplyReplace does over the typed Application (nil map values are skipped,
// nil pointers stay nil and are omitted).
func replaceDeep(v any, params map[string]any, goTemplate bool, options []string, funcs template.FuncMap) (any, error) {
	switch t := v.(type) {
	case string:
		return replace(t, params, goTemplate, options, funcs)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := replaceDeep(x, params, goTemplate, options, funcs)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			x := t[k]
			if x == nil {
				continue
			}
			r, err := replaceDeep(x, params, goTemplate, options, funcs)
			if err != nil {
				return nil, err
			}
			key, err := replace(k, params, goTemplate, options, funcs)
			if err != nil {
				return nil, err
			}
			out[key] = r
		}
		return out, nil
	}
	return v, nil
}

// isTemplated is Argo CD's test before fasttemplate runs (`.*{{.*}}.*`: both braces on one line).
var isTemplated = regexp.MustCompile(".*{{.*}}.*")

// Replace renders one string as the set renders it.
func Replace(tmpl string, params map[string]any, s ApplicationSet) (string, error) {
	return replace(tmpl, params, s.GoTemplate, s.GoTemplateOptions, s.funcs())
}

func replace(tmpl string, params map[string]any, goTemplate bool, options []string, funcs template.FuncMap) (string, error) {
	if goTemplate {
		t := template.New("").Funcs(funcs)
		for _, o := range options {
			t = t.Option(o)
		}
		parsed, err := t.Parse(tmpl)
		if err != nil {
			if strings.Contains(err.Error(), "function ") && strings.Contains(err.Error(), "not defined") {
				return "", notEvaluated{fmt.Sprintf("template %q: %v (unprune leaves out sprig's non-deterministic functions, slugify and tpl)", tmpl, err)}
			}
			return "", fmt.Errorf("failed to parse template %s: %w", tmpl, err)
		}
		var b bytes.Buffer
		if err := parsed.Execute(&b, params); err != nil {
			return "", fmt.Errorf("failed to execute go template %s: %w", tmpl, err)
		}
		return b.String(), nil
	}
	if !isTemplated.MatchString(tmpl) {
		return tmpl, nil
	}
	t, err := fasttemplate.NewTemplate(tmpl, "{{", "}}")
	if err != nil {
		return "", fmt.Errorf("invalid template: %w", err)
	}
	return t.ExecuteFuncString(func(w io.Writer, tag string) (int, error) {
		trimmed := strings.TrimSpace(tag)
		if v, ok := params[trimmed].(string); ok && trimmed != "" {
			return w.Write([]byte(v))
		}
		return fmt.Fprintf(w, "{{%s}}", tag)
	}), nil
}

// nondeterministic are sprig's functions whose result depends on the clock, randomness or the
// environment: a template calling one renders differently at every reconcile, so it is not
// evaluated (Argo CD itself drops env, expandenv and getHostByName).
var nondeterministic = []string{
	"env", "expandenv", "getHostByName", "now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt",
	"uuidv4", "shuffle", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert",
	"genSignedCertWithKey", "encryptAES", "htpasswd", "bcrypt",
}

// funcs are Argo CD's template functions (sprig.GenericFuncMap and normalize, toYaml, fromYaml,
// fromYamlArray), without the non-deterministic ones, slugify (gosimple/slug) and tpl (v3.6): a
// template calling those fails to parse here and is reported as not evaluated.
func (s ApplicationSet) funcs() template.FuncMap { return funcMap() }

// funcMap is built once and only read.
var funcMap = sync.OnceValue(func() template.FuncMap {
	m := sprig.GenericFuncMap()
	for _, f := range nondeterministic {
		delete(m, f)
	}
	m["normalize"] = SanitizeName
	m["toYaml"] = func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	m["fromYaml"] = func(str string) (map[string]any, error) {
		out := map[string]any{}
		if err := yaml.Unmarshal([]byte(str), &out); err != nil {
			return nil, err
		}
		return out, nil
	}
	m["fromYamlArray"] = func(str string) ([]any, error) {
		out := []any{}
		if err := yaml.Unmarshal([]byte(str), &out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return template.FuncMap(m)
})

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

// deepCopy copies a JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, x := range t {
			out[k] = x
		}
		return out
	}
	return v
}

// normalizeJSON gives a decoded object the types encoding/json gives it (float64 numbers), as
// Argo CD decodes list elements and files: the API server's client hands out int64.
func normalizeJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}
