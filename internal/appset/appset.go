// Package appset evaluates an ApplicationSet the way Argo CD's ApplicationSet controller does, for the
// generators that need no remote call (list, clusters, git read from a local checkout, matrix and
// merge of those), and renders its template into the Applications it generates. A generator it
// cannot evaluate (SCM provider, pull request, plugin, …) or a template function it does not
// implement makes the answer "not evaluated", never a guess. It reads only; it does not import
// Argo CD's module: the rules are re-read from Argo CD's source, cited where they are encoded.
package appset

import (
	"fmt"
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/fields"
)

// Policies of syncPolicy.applicationsSync (pkg/apis/application/v1alpha1/applicationset_types.go).
const (
	PolicyCreateOnly   = "create-only"
	PolicyCreateUpdate = "create-update"
	PolicyCreateDelete = "create-delete"
	PolicySync         = "sync"
)

// ApplicationSet is the part of an ApplicationSet the evaluation needs, read from its content.
type ApplicationSet struct {
	Namespace, Name, UID string
	GoTemplate           bool
	GoTemplateOptions    []string
	Generators           []map[string]any
	Template             map[string]any
	// TemplatePatch is not applied: its presence makes the evaluation partial (noted).
	TemplatePatch string
	// PreserveResourcesOnDeletion keeps the resources finalizer off the apps it generates.
	PreserveResourcesOnDeletion bool
	// ApplicationsSync is the set's policy; empty means the controller's default.
	ApplicationsSync string
}

// Parse reads an ApplicationSet's content (a live object or a manifest).
func Parse(content map[string]any) (ApplicationSet, error) {
	meta := fields.Map(content, "metadata")
	spec := fields.Map(content, "spec")
	s := ApplicationSet{Namespace: fields.String(meta["namespace"]), Name: fields.String(meta["name"]), UID: fields.String(meta["uid"]), Template: fields.Map(spec, "template")}
	if s.Name == "" {
		return s, fmt.Errorf("the ApplicationSet has no metadata.name")
	}
	s.GoTemplate, _ = spec["goTemplate"].(bool)
	s.GoTemplateOptions = fields.Strings(spec["goTemplateOptions"])
	s.TemplatePatch = fields.String(spec["templatePatch"])
	for _, g := range fields.List(spec["generators"]) {
		m, _ := g.(map[string]any)
		s.Generators = append(s.Generators, m)
	}
	policy := fields.Map(spec, "syncPolicy")
	s.PreserveResourcesOnDeletion, _ = policy["preserveResourcesOnDeletion"].(bool)
	s.ApplicationsSync = fields.String(policy["applicationsSync"])
	return s, nil
}

// Policy is the applicationsSync policy in force. The controller's default (no --policy flag) is
// sync and lets a set override it (cmd/argocd-applicationset-controller/commands,
// applicationset/utils/policy.go DefaultPolicy); a controller started with --policy and without
// --enable-policy-override ignores the set's value, which unprune cannot see from here.
func (s ApplicationSet) Policy() string {
	if s.ApplicationsSync == "" {
		return PolicySync
	}
	return s.ApplicationsSync
}

// DeletesApps reports whether the policy deletes apps the generators no longer produce
// (ApplicationsSyncPolicy.AllowDelete).
func (s ApplicationSet) DeletesApps() bool {
	p := s.Policy()
	return p == PolicySync || p == PolicyCreateDelete
}

// UpdatesApps reports whether the policy updates existing apps, finalizers included
// (ApplicationsSyncPolicy.AllowUpdate).
func (s ApplicationSet) UpdatesApps() bool {
	p := s.Policy()
	return p == PolicySync || p == PolicyCreateUpdate
}

// Generated is one Application the set generates.
type Generated struct {
	Namespace, Name string
	Content         map[string]any
	Whole           argocd.Whole
}

// Result is an evaluation: the apps, and why it is incomplete when it is.
type Result struct {
	Apps []Generated
	// NotEvaluated says which generators or templates could not be evaluated, and why. When it is
	// not empty, Apps may miss apps the set generates.
	NotEvaluated []string
}

// Complete reports whether every generator and template was evaluated.
func (r Result) Complete() bool { return len(r.NotEvaluated) == 0 }

// Names are the generated apps' names, sorted.
func (r Result) Names() []string {
	out := make([]string, 0, len(r.Apps))
	for _, a := range r.Apps {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// Sources are what generators read besides the set itself.
type Sources struct {
	// RepoDir is a local checkout of the repository git generators name; empty: they are not evaluated.
	RepoDir string
	// Clusters are Argo CD's cluster Secrets' contents; nil: cluster generators are not evaluated.
	Clusters []Cluster
}

// Evaluate runs every generator and renders the template for each parameter set, as
// applicationset/controllers/template/template.go GenerateApplications does.
func Evaluate(s ApplicationSet, src Sources) Result {
	var r Result
	if s.TemplatePatch != "" {
		r.NotEvaluated = append(r.NotEvaluated, "spec.templatePatch: not implemented by unprune")
	}
	seen := map[string]bool{}
	for i, g := range s.Generators {
		where := fmt.Sprintf("generators[%d]", i)
		params, tmpl, err := generate(s, src, g, nil)
		if err != nil {
			r.NotEvaluated = append(r.NotEvaluated, where+": "+err.Error())
			continue
		}
		template := mergeTemplate(tmpl, s.Template)
		for _, p := range params {
			app, err := Render(template, p, s)
			if err != nil {
				r.NotEvaluated = append(r.NotEvaluated, where+": "+err.Error())
				continue
			}
			if !seen[app.Name] {
				seen[app.Name] = true
				r.Apps = append(r.Apps, app)
			}
		}
	}
	sort.Slice(r.Apps, func(i, j int) bool { return r.Apps[i].Name < r.Apps[j].Name })
	return r
}
