// Package appset evaluates an ApplicationSet the way Argo CD's ApplicationSet controller does, for the
// generators that need no remote call (list, clusters, git read from a local checkout, matrix and
// merge of those), and renders its template into the Applications it generates. A generator it
// cannot evaluate (SCM provider, pull request, plugin, …) or a template function it does not
// implement makes the answer "not evaluated", never a guess. It reads only; it does not import
// Argo CD's module: the rules are re-read from Argo CD's source, cited where they are encoded.
package appset

import (
	"errors"
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	if c, ok := normalizeJSON(content).(map[string]any); ok {
		content = c
	}
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

// Policy is the set's own applicationsSync, sync when unset: what a controller without --policy
// applies. EffectivePolicy says what a given controller applies.
func (s ApplicationSet) Policy() string {
	if s.ApplicationsSync == "" {
		return PolicySync
	}
	return s.ApplicationsSync
}

// DeletesApps reports whether the set's own policy deletes apps the generators no longer produce.
func (s ApplicationSet) DeletesApps() bool { return PolicyDeletes(s.Policy()) }

// UpdatesApps reports whether the set's own policy updates existing apps, finalizers included.
func (s ApplicationSet) UpdatesApps() bool { return PolicyUpdates(s.Policy()) }

// Generated is one Application the set generates.
type Generated struct {
	Namespace, Name string
	Content         map[string]any
	Whole           argocd.Whole
}

// Result is an evaluation: the apps, and why it is incomplete when it is.
type Result struct {
	Apps []Generated
	// NotEvaluated says which generators or templates unprune could not evaluate, and why. When it
	// is not empty, Apps may miss apps the set generates.
	NotEvaluated []string
	// Failed is the error Argo CD's own generation meets: the controller then creates, updates and
	// deletes nothing for the set until it is fixed (applicationset_controller.go Reconcile returns
	// before any change when GenerateApplications fails).
	Failed string
	// By says who generated the apps: Offline (unprune) or ArgoCD (argocd-server's generation).
	By string
}

// Who generated a Result.
const (
	ByOffline = "Offline"
	ByArgoCD  = "ArgoCD"
)

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
	// Repo is the repository git generators read, at their revisions; nil: they are not evaluated.
	Repo *Repo
	// Clusters are Argo CD's cluster Secrets' contents; nil: cluster generators are not evaluated.
	Clusters []Cluster
	// Controller is how the controller and repo-server were configured (DefaultController when
	// argocd-cmd-params-cm sets nothing).
	Controller Controller
	// Version is Argo CD's, which decides the rules that changed between releases; nil: where the
	// rules differ, the answer is not evaluated.
	Version *argocd.Version
}

// Evaluate runs every generator and renders the template for each parameter set, as
// applicationset/controllers/template/template.go GenerateApplications does. An error Argo CD's
// own generation would meet ends it as Failed; a construct unprune does not reproduce is listed in
// NotEvaluated and the rest goes on.
func Evaluate(s ApplicationSet, src Sources) Result {
	r := Result{By: ByOffline}
	if s.TemplatePatch != "" {
		r.NotEvaluated = append(r.NotEvaluated, "spec.templatePatch: not reproduced by unprune")
	}
	e := &evaluation{s: s, src: src, rules: rulesOf(src.Version)}
	seen := map[string]bool{}
	fail := func(where string, err error) {
		var ne notEvaluated
		if errors.As(err, &ne) {
			r.NotEvaluated = append(r.NotEvaluated, where+": "+ne.Error())
			return
		}
		if r.Failed == "" {
			r.Failed = where + ": " + err.Error()
		}
	}
	for i, g := range s.Generators {
		where := fmt.Sprintf("generators[%d]", i)
		results, err := e.transform(g, s.Template, nil)
		if err != nil {
			fail(where, err)
			continue
		}
		for _, t := range results {
			for _, p := range t.params {
				app, err := Render(t.template, p, s)
				if err != nil {
					fail(where, err)
					continue
				}
				if !seen[app.Name] {
					seen[app.Name] = true
					r.Apps = append(r.Apps, app)
				}
			}
		}
	}
	sort.Slice(r.Apps, func(i, j int) bool { return r.Apps[i].Name < r.Apps[j].Name })
	if r.Failed == "" {
		r.Failed = uncreatable(r.Apps)
	}
	return r
}

// uncreatable says which generated app the API server refuses to create or update (a name that is
// no DNS subdomain, an invalid label or annotation key): the controller's createOrUpdateInCluster
// then returns an error, and Reconcile stops before deleting anything. An empty name is a validation
// error instead, which does not stop the deletion.
func uncreatable(apps []Generated) string {
	for _, a := range apps {
		if a.Name == "" {
			continue
		}
		var problems []string
		problems = append(problems, validation.IsDNS1123Subdomain(a.Name)...)
		meta := fields.Map(a.Content, "metadata")
		labels := map[string]string{}
		for k, v := range fields.Map(meta, "labels") {
			labels[k] = fields.String(v)
		}
		for _, e := range metav1validation.ValidateLabels(labels, field.NewPath("metadata", "labels")) {
			problems = append(problems, e.Error())
		}
		annotations := map[string]string{}
		for k, v := range fields.Map(meta, "annotations") {
			annotations[k] = fields.String(v)
		}
		for _, e := range apivalidation.ValidateAnnotations(annotations, field.NewPath("metadata", "annotations")) {
			problems = append(problems, e.Error())
		}
		if len(problems) > 0 {
			return fmt.Sprintf("the API server refuses Application %q (%s): the controller stops before deleting anything", a.Name, strings.Join(problems, "; "))
		}
	}
	return ""
}

// GenerationFailed is Argo CD's own generation refusing a set: argocd-server answered, with the
// error its generators met, which the controller meets too (it then changes nothing for the set).
type GenerationFailed struct{ Message string }

func (e *GenerationFailed) Error() string { return e.Message }
