// Package guard builds the guards that stop a prune from deleting what must never be deleted: a
// ValidatingAdmissionPolicy that denies DELETE of protected objects (for every user, Argo CD's
// controller included, except a named break-glass group), the protection label it keys on, and
// Argo CD's own `Prune=confirm` sync option. It is pure: the CLI applies what it returns.
package guard

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/plan"
)

// Names and keys of what guard installs; audit recognises them.
const (
	PolicyName = "unprune-protect-deletion"
	// The API resources of the policy and its binding.
	PolicyGroup     = "admissionregistration.k8s.io"
	PolicyVersion   = "v1"
	PolicyResource  = "validatingadmissionpolicies"
	BindingResource = "validatingadmissionpolicybindings"

	ProtectLabel   = "unprune.dev/protected"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "unprune"
	// NamesAnnotation on the policy lists the objects it protects by name, as resource/name.
	NamesAnnotation = "unprune.dev/protected-names"
)

// Kind is a kind the policy can protect.
type Kind struct {
	Flag     string // value of --kinds
	Group    string
	Resource string
	Kind     string
}

// Kinds the policy knows, by --kinds value.
var Kinds = []Kind{
	{Flag: "namespaces", Resource: "namespaces", Kind: "Namespace"},
	{Flag: "crds", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"},
	{Flag: "pvs", Resource: "persistentvolumes", Kind: "PersistentVolume"},
}

// PolicyOptions configure the policy.
type PolicyOptions struct {
	// Kinds to protect (Flag values); default namespaces.
	Kinds []string
	// Names protects these objects by name as well as by label, as KIND/NAME (e.g. namespaces/team-a).
	Names []string
	// BreakGlassGroup may still delete protected objects; empty means nobody may.
	BreakGlassGroup string
}

// ParseKinds validates --kinds.
func ParseKinds(flags []string) ([]Kind, error) {
	if len(flags) == 0 {
		flags = []string{"namespaces"}
	}
	var out []Kind
	for _, f := range flags {
		found := false
		for _, k := range Kinds {
			if k.Flag == f {
				out = append(out, k)
				found = true
			}
		}
		if !found {
			var known []string
			for _, k := range Kinds {
				known = append(known, k.Flag)
			}
			return nil, fmt.Errorf("unknown kind %q for the policy: use %s", f, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// Policy returns the ValidatingAdmissionPolicy and its binding as objects ready to print or apply.
func Policy(o PolicyOptions) ([]map[string]any, error) {
	kinds, err := ParseKinds(o.Kinds)
	if err != nil {
		return nil, err
	}
	byGroup := map[string][]string{}
	for _, k := range kinds {
		byGroup[k.Group] = append(byGroup[k.Group], k.Resource)
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rules []any
	for _, g := range groups {
		resources := make([]any, 0, len(byGroup[g]))
		for _, r := range byGroup[g] {
			resources = append(resources, r)
		}
		rules = append(rules, map[string]any{
			"apiGroups": []any{g}, "apiVersions": []any{"*"}, "operations": []any{"DELETE"}, "resources": resources,
		})
	}

	// For DELETE the object being deleted is oldObject.
	protected := fmt.Sprintf(`has(oldObject.metadata.labels) && %q in oldObject.metadata.labels && oldObject.metadata.labels[%q] == "true"`,
		ProtectLabel, ProtectLabel)
	named := map[string][]string{}
	for _, n := range o.Names {
		resource, name, ok := strings.Cut(n, "/")
		if !ok || name == "" {
			return nil, fmt.Errorf("%v %q: use KIND/NAME, e.g. namespaces/team-a", option.GuardName, n)
		}
		k, err := ParseKinds([]string{resource})
		if err != nil {
			return nil, fmt.Errorf("%v %q: %w", option.GuardName, n, err)
		}
		if !containsKind(kinds, k[0]) {
			return nil, fmt.Errorf("%v %q: add %s to %v too", option.GuardName, n, k[0].Flag, option.GuardKinds)
		}
		named[k[0].Resource] = append(named[k[0].Resource], name)
	}
	conds := []string{protected}
	for _, r := range slices.Sorted(maps.Keys(named)) {
		quoted := make([]string, 0, len(named[r]))
		for _, n := range named[r] {
			quoted = append(quoted, fmt.Sprintf("%q", n))
		}
		conds = append(conds, fmt.Sprintf("(request.resource.resource == %q && oldObject.metadata.name in [%s])", r, strings.Join(quoted, ", ")))
	}
	breakGlass := "nobody may delete it"
	if o.BreakGlassGroup != "" {
		breakGlass = fmt.Sprintf("only members of group %s may delete it", o.BreakGlassGroup)
	}
	// The constant part is one double-quoted CEL literal; Go's %q escapes are valid in CEL, so any
	// group name (quotes, backslashes) stays a string.
	message := `request.resource.resource + "/" + oldObject.metadata.name + ` + fmt.Sprintf("%q",
		fmt.Sprintf(" is protected from deletion by ValidatingAdmissionPolicy %s (label %s=true, or named in the policy); %s. If Argo CD tried to prune it, release it instead: unprune detach APP. If it really must go, remove the protection first.",
			PolicyName, ProtectLabel, breakGlass))
	spec := map[string]any{
		"failurePolicy":    "Fail",
		"matchConstraints": map[string]any{"resourceRules": rules},
		"validations": []any{map[string]any{
			"expression":        "!(" + strings.Join(conds, " || ") + ")",
			"reason":            "Forbidden",
			"messageExpression": message,
		}},
	}
	if o.BreakGlassGroup != "" {
		spec["matchConditions"] = []any{map[string]any{
			"name":       "not-break-glass",
			"expression": fmt.Sprintf("!(%q in request.userInfo.groups)", o.BreakGlassGroup),
		}}
	}
	labels := map[string]any{ManagedByLabel: ManagedBy}
	// The names are recorded where audit can read them without evaluating CEL.
	var names []string
	for _, r := range slices.Sorted(maps.Keys(named)) {
		for _, n := range named[r] {
			names = append(names, r+"/"+n)
		}
	}
	policy := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": PolicyName, "labels": labels,
			"annotations": map[string]any{NamesAnnotation: strings.Join(names, ",")}},
		"spec": spec,
	}
	binding := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": PolicyName, "labels": labels},
		"spec":     map[string]any{"policyName": PolicyName, "validationActions": []any{"Deny"}},
	}
	return []map[string]any{policy, binding}, nil
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x.Flag == k.Flag {
			return true
		}
	}
	return false
}

// refuseDeleting is the plan for an object that is going already: no guard can keep it.
func refuseDeleting(t plan.Target) plan.Plan {
	return plan.Plan{Target: t, Refusal: &plan.Refusal{Code: plan.RefuseDeleting,
		Message: fmt.Sprintf("%s is being deleted already; nothing can keep it now", t.Ref)}}
}

// ProtectPlan labels an object for the policy; nothing changes when it carries the label already.
func ProtectPlan(t plan.Target) plan.Plan {
	p := plan.Plan{Target: t}
	if t.Deleting {
		return refuseDeleting(t)
	}
	switch v, ok := t.Labels[ProtectLabel]; {
	case !ok:
		p.Changes = []journal.Change{journal.Addition(journal.FieldLabel, ProtectLabel, "true")}
	case v != "true":
		p.Changes = []journal.Change{journal.Rewrite(journal.FieldLabel, ProtectLabel, v, "true")}
	}
	return p
}

// ConfirmPlan merges Prune=confirm into the object's sync options, so that Argo CD (v2.14+) prunes
// it only after someone approves the deletion on the Application. An object already carrying
// Prune=false is left alone: that guard is stronger.
func ConfirmPlan(t plan.Target) plan.Plan {
	p := plan.Plan{Target: t}
	if t.Deleting {
		return refuseDeleting(t)
	}
	before, had := t.Annotations[argocd.AnnotationSyncOptions]
	if argocd.HasOption(before, argocd.OptionPruneDisabled) {
		p.Notes = append(p.Notes, "sync-options already has Prune=false, a stronger guard: left as is")
		return p
	}
	if p = plan.MarkHolds(p, argocd.AnnotationSyncOptions, argocd.OptionPruneConfirm, "Put Prune=confirm into the manifest's sync-options instead; "+
		"or, on Argo CD v3.4+, set its app's syncPolicy.syncOptions to [Prune=confirm]", false); p.Refusal != nil {
		return p
	}
	merged, changed := argocd.SetOption(before, argocd.OptionPruneConfirm)
	switch {
	case !changed:
	case had:
		p.Changes = []journal.Change{journal.Rewrite(journal.FieldAnnotation, argocd.AnnotationSyncOptions, before, merged)}
	default:
		p.Changes = []journal.Change{journal.Addition(journal.FieldAnnotation, argocd.AnnotationSyncOptions, merged)}
	}
	return p
}
