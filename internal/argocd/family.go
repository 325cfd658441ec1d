package argocd

import (
	"slices"
	"strconv"
	"strings"

	"github.com/unprune/unprune/internal/fields"
)

// Finalizers on an Application that make its deletion delete its resources
// (pkg/apis/application/v1alpha1/application_defaults.go; types.go isPropagationPolicyFinalizer).
const (
	FinalizerResources           = "resources-finalizer.argocd.argoproj.io"
	FinalizerResourcesForeground = "resources-finalizer.argocd.argoproj.io/foreground"
	FinalizerResourcesBackground = "resources-finalizer.argocd.argoproj.io/background"
	// FinalizerPreDelete and FinalizerPostDelete make Argo CD run the app's PreDelete hooks (v3.3+)
	// before its cascade, and its PostDelete hooks after it; the controller adds them when the app's
	// manifests hold such hooks.
	FinalizerPreDelete  = "pre-delete-finalizer.argocd.argoproj.io"
	FinalizerPostDelete = "post-delete-finalizer.argocd.argoproj.io"
)

// IsDeleteHookFinalizer reports a finalizer with which Argo CD runs an app's PreDelete or PostDelete
// hooks when the app is deleted: pre-delete-finalizer.argocd.argoproj.io and
// post-delete-finalizer.argocd.argoproj.io, plain or with a stage ("/cleanup"), as
// UnSetPostDeleteFinalizerAll matches them (pkg/apis/application/v1alpha1/types.go).
func IsDeleteHookFinalizer(f string) bool {
	return strings.HasPrefix(f, FinalizerPreDelete) || strings.HasPrefix(f, FinalizerPostDelete)
}

// AnnotationSkipReconcile on an Application makes the application controller leave it alone: its
// informer handlers and the refreshes that resource changes request skip an app whose value parses
// as true (controller/appcontroller.go canProcessApp; v2.14 and v3.x alike).
const AnnotationSkipReconcile = "argocd.argoproj.io/skip-reconcile"

// SkipsReconcile reports whether an annotation value makes the controller skip the app: it parses
// the value with strconv.ParseBool, as canProcessApp does.
func SkipsReconcile(value string, set bool) bool {
	skip, err := strconv.ParseBool(value)
	return set && err == nil && skip
}

// Sync options and annotations that guard a resource against the cascade deletion of its app
// (controller/appcontroller.go shouldBeDeleted, controller/state.go
// isObjRequiresDeletionConfirmation).
const (
	OptionDelete = "Delete"
	// AnnotationHelmResourcePolicy with value "keep" keeps an object when its app is deleted.
	AnnotationHelmResourcePolicy = "helm.sh/resource-policy"
)

// CascadeFinalizer returns the finalizer that makes deleting the app delete its resources, or ""
// when there is none: the app's deletion then leaves every resource in place, still carrying its
// tracking (Application.CascadedDeletion in types.go).
func CascadeFinalizer(finalizers []string) string {
	for _, f := range finalizers {
		switch f {
		case FinalizerResources, FinalizerResourcesForeground, FinalizerResourcesBackground:
			return f
		}
	}
	return ""
}

// OptionValue returns the value of a key=value option in an options annotation, as
// gitops-engine's GetAnnotationOptionValue reads it (pkg/sync/resource/annotations.go): the first
// entry with the prefix "key=".
func OptionValue(annotation, key string) (string, bool) {
	for _, o := range ParseOptions(annotation) {
		if v, ok := strings.CutPrefix(o, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// AppOptionValue is the same for an app's syncPolicy.syncOptions list.
func AppOptionValue(options []string, key string) (string, bool) {
	for _, o := range options {
		if v, ok := strings.CutPrefix(strings.TrimSpace(o), key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// OwnerReference is one metadata.ownerReferences entry.
type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller bool   `json:"controller,omitempty"`
}

// Source is an Application's spec.source (or its first spec.sources entry): where its manifests come
// from, which tells a rename (same source, new name) from a removal.
type Source struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	Chart          string `json:"chart,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
}

// Whole is what a whole-app question needs beyond Application: its finalizers, owners and source,
// read from the object's content.
type Whole struct {
	Namespace, Name, UID string
	Finalizers           []string
	Owners               []OwnerReference
	Sources              []Source
	Destination          Destination
	SyncOptions          []string
	AutoPrune            bool
	Annotations          map[string]string
	// Spec is the Application's spec as read, for questions about how its sources render.
	Spec map[string]any
	// SourceTypes are status.sourceType (or sourceTypes, one per source): Helm, Kustomize,
	// Directory, Plugin, as Argo CD detected them; empty for a manifest.
	SourceTypes []string
}

// ParseWhole reads the whole-app view of an Application's content (a live object or a manifest).
func ParseWhole(content map[string]any) Whole {
	meta := fields.Map(content, "metadata")
	spec := fields.Map(content, "spec")
	w := Whole{Namespace: fields.String(meta["namespace"]), Name: fields.String(meta["name"]), UID: fields.String(meta["uid"]), Finalizers: fields.Strings(meta["finalizers"]), Annotations: map[string]string{}, Spec: spec}
	status := fields.Map(content, "status")
	if types := fields.Strings(status["sourceTypes"]); len(types) > 0 {
		w.SourceTypes = types
	} else if t := fields.String(status["sourceType"]); t != "" {
		w.SourceTypes = []string{t}
	}
	for k, v := range fields.Map(meta, "annotations") {
		w.Annotations[k] = fields.String(v)
	}
	for _, o := range fields.List(meta["ownerReferences"]) {
		m, _ := o.(map[string]any)
		ctrl, _ := m["controller"].(bool)
		w.Owners = append(w.Owners, OwnerReference{APIVersion: fields.String(m["apiVersion"]), Kind: fields.String(m["kind"]), Name: fields.String(m["name"]), UID: fields.String(m["uid"]), Controller: ctrl})
	}
	if src := fields.Map(spec, "source"); len(src) > 0 {
		w.Sources = append(w.Sources, sourceOf(src))
	}
	for _, s := range fields.List(spec["sources"]) {
		m, _ := s.(map[string]any)
		w.Sources = append(w.Sources, sourceOf(m))
	}
	// A source-hydrator app renders its dry source and syncs the hydrated branch
	// (SourceHydrator.GetDrySource and GetSyncSource, pkg/apis/application/v1alpha1/types.go): both
	// are its source, so that the removal of one and the addition of another with the same ones
	// is seen as the rename it is.
	if h := HydratorOf(spec); h != nil {
		w.Sources = append(w.Sources, Source{RepoURL: h.DrySource.RepoURL, Path: h.DrySource.Path, TargetRevision: h.DrySource.TargetRevision},
			Source{RepoURL: h.SyncRepoURL(), Path: h.SyncSource.Path, TargetRevision: h.SyncSource.TargetBranch})
	}
	d := fields.Map(spec, "destination")
	w.Destination = Destination{Server: fields.String(d["server"]), Name: fields.String(d["name"]), Namespace: fields.String(d["namespace"])}
	policy := fields.Map(spec, "syncPolicy")
	w.SyncOptions = fields.Strings(policy["syncOptions"])
	if auto, ok := policy["automated"].(map[string]any); ok {
		enabled, set := auto["enabled"].(bool)
		prune, _ := auto["prune"].(bool)
		w.AutoPrune = (!set || enabled) && prune
	}
	return w
}

// SameTarget reports whether two apps deploy the same source to the same destination: a removal of
// one and an addition of the other is a rename.
func (w Whole) SameTarget(o Whole) bool {
	return len(w.Sources) > 0 && slices.Equal(w.Sources, o.Sources) && w.Destination == o.Destination
}

// ControlledBy returns the app's controller reference when it names an Argo CD object of the given
// kind. The ApplicationSet controller finds the apps a set owns the same way: an index on
// metav1.GetControllerOf, matched by apiVersion argoproj.io/v1alpha1, kind and name
// (applicationset/controllers/applicationset_controller.go, SetupWithManager); any other
// ownerReference does not make an app the set's.
func (w Whole) ControlledBy(kind string) (OwnerReference, bool) {
	for _, o := range w.Owners {
		if o.Controller {
			if o.Kind == kind && o.APIVersion == "argoproj.io/v1alpha1" {
				return o, true
			}
			break // an object has at most one controller
		}
	}
	return OwnerReference{}, false
}

func sourceOf(m map[string]any) Source {
	return Source{RepoURL: fields.String(m["repoURL"]), Path: fields.String(m["path"]), Chart: fields.String(m["chart"]), TargetRevision: fields.String(m["targetRevision"])}
}
