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
	Flag     string // how --kinds named it
	Group    string
	Resource string
	Kind     string
	// Namespaced kinds are named RESOURCE/NAMESPACE/NAME by --name; cluster-scoped ones RESOURCE/NAME.
	Namespaced bool
}

// String is the kind as --kinds and the policy's annotation spell it: RESOURCE[.GROUP].
func (k Kind) String() string {
	if k.Group == "" {
		return k.Resource
	}
	return k.Resource + "." + k.Group
}

// Kinds the policy knows without asking a cluster, by --kinds value. Any other kind is resolved
// through the cluster's discovery, as kubectl resolves a resource name (PolicyOptions.Resolve).
var Kinds = []Kind{
	{Flag: "namespaces", Resource: "namespaces", Kind: "Namespace"},
	{Flag: "crds", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"},
	{Flag: "pvs", Resource: "persistentvolumes", Kind: "PersistentVolume"},
}

// KindsAnnotation on the policy lists the kinds it protects as RESOURCE[.GROUP]=KIND, when one of them
// is not among Kinds: audit matches a status row (which names a kind) to the policy's rules (which
// name resources) without asking discovery.
const KindsAnnotation = "unprune.dev/protected-kinds"

// PolicyOptions configure the policy.
type PolicyOptions struct {
	// Kinds to protect, as --kinds names them; default namespaces.
	Kinds []string
	// Names protects these objects by name as well as by label: RESOURCE/NAME, or
	// RESOURCE/NAMESPACE/NAME for a namespaced kind (e.g. namespaces/team-a, configmaps/shop/settings).
	Names []string
	// BreakGlassGroup may still delete protected objects; empty means nobody may.
	BreakGlassGroup string
	// Resolve finds a kind that is not among Kinds (a resource name, short name or kind, with an
	// optional .GROUP) in the cluster's discovery; nil when no cluster is at hand.
	Resolve func(name string) (Kind, error)
}

// Builtin reports whether every kind the options name is among Kinds, so that the policy can be
// built without a cluster.
func (o PolicyOptions) Builtin() bool {
	for _, f := range o.Kinds {
		if _, ok := builtin(f); !ok {
			return false
		}
	}
	return true
}

func builtin(flag string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Flag == flag {
			return k, true
		}
	}
	return Kind{}, false
}

// ParseKinds resolves --kinds: the kinds of Kinds by their names, any other through resolve (nil:
// none can be). A kind named twice (namespaces,ns) counts once.
func ParseKinds(flags []string, resolve func(string) (Kind, error)) ([]Kind, error) {
	if len(flags) == 0 {
		flags = []string{"namespaces"}
	}
	var out []Kind
	seen := map[string]bool{}
	for _, f := range flags {
		k, ok := builtin(f)
		if !ok {
			if resolve == nil || f == "" {
				var known []string
				for _, k := range Kinds {
					known = append(known, k.Flag)
				}
				return nil, fmt.Errorf("unknown kind %q for the policy: use %s, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in", f, strings.Join(known, ", "))
			}
			var err error
			if k, err = resolve(f); err != nil {
				return nil, fmt.Errorf("kind %q for the policy: %w", f, err)
			}
			k.Flag = f
		}
		if seen[k.String()] {
			continue
		}
		seen[k.String()] = true
		out = append(out, k)
	}
	return out, nil
}

// kindOf finds the kind a --name names by its --kinds name or its resource.
func kindOf(kinds []Kind, resource string) (Kind, bool) {
	for _, k := range kinds {
		if k.Flag == resource || k.Resource == resource || k.String() == resource {
			return k, true
		}
	}
	return Kind{}, false
}

// Policy returns the ValidatingAdmissionPolicy and its binding as objects ready to print or apply.
func Policy(o PolicyOptions) ([]map[string]any, error) {
	kinds, err := ParseKinds(o.Kinds, o.Resolve)
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
	// named holds, by kind, the names --name gives: NAME, or NAMESPACE/NAME for a namespaced kind.
	named := map[string][]string{}
	byName := map[string]Kind{}
	for _, n := range o.Names {
		resource, name, ok := strings.Cut(n, "/")
		if !ok || name == "" {
			return nil, fmt.Errorf("%v %q: use RESOURCE/NAME, or RESOURCE/NAMESPACE/NAME for a namespaced kind, e.g. namespaces/team-a", option.GuardName, n)
		}
		k, found := kindOf(kinds, resource)
		if !found {
			return nil, fmt.Errorf("%v %q: add %s to %v too", option.GuardName, n, resource, option.GuardKinds)
		}
		switch parts := strings.Split(name, "/"); {
		case k.Namespaced && (len(parts) != 2 || parts[0] == "" || parts[1] == ""):
			return nil, fmt.Errorf("%v %q: %s are namespaced: use %s/NAMESPACE/NAME", option.GuardName, n, k.Resource, resource)
		case !k.Namespaced && len(parts) != 1:
			return nil, fmt.Errorf("%v %q: %s are cluster-scoped: use %s/NAME", option.GuardName, n, k.Resource, resource)
		}
		named[k.String()] = append(named[k.String()], name)
		byName[k.String()] = k
	}
	conds := []string{protected}
	for _, key := range slices.Sorted(maps.Keys(named)) {
		k := byName[key]
		quoted := make([]string, 0, len(named[key]))
		for _, n := range named[key] {
			quoted = append(quoted, fmt.Sprintf("%q", n))
		}
		match := fmt.Sprintf("request.resource.resource == %q", k.Resource)
		if k.Group != "" {
			match = fmt.Sprintf("request.resource.group == %q && ", k.Group) + match
		}
		name := "oldObject.metadata.name"
		if k.Namespaced {
			name = `oldObject.metadata.namespace + "/" + oldObject.metadata.name`
		}
		conds = append(conds, fmt.Sprintf("(%s && %s in [%s])", match, name, strings.Join(quoted, ", ")))
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
	// The names and kinds are recorded where audit can read them without evaluating CEL.
	var names []string
	for _, key := range slices.Sorted(maps.Keys(named)) {
		for _, n := range named[key] {
			names = append(names, byName[key].Resource+"/"+n)
		}
	}
	annotations := map[string]any{NamesAnnotation: strings.Join(names, ",")}
	if !(PolicyOptions{Kinds: o.Kinds}).Builtin() {
		var ks []string
		for _, k := range kinds {
			ks = append(ks, k.String()+"="+k.Kind)
		}
		annotations[KindsAnnotation] = strings.Join(ks, ",")
	}
	policy := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": PolicyName, "labels": labels, "annotations": annotations},
		"spec":     spec,
	}
	binding := map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": PolicyName, "labels": labels},
		"spec":     map[string]any{"policyName": PolicyName, "validationActions": []any{"Deny"}},
	}
	return []map[string]any{policy, binding}, nil
}

// ByNameCommand is the guard policy command that protects one object by name, keeping what the
// installed policy protects (--merge) and the Namespaces it protects by default.
func ByNameCommand(group, resource, namespace, name string) option.Command {
	k := Kind{Group: group, Resource: resource}
	kinds := "namespaces"
	if k.String() != kinds {
		kinds += "," + k.String()
	}
	named := resource + "/" + name
	if namespace != "" {
		named = resource + "/" + namespace + "/" + name
	}
	return option.Command{Path: []string{"guard", "policy"}, Options: []option.Setting{option.Flag(option.GuardMerge),
		{Name: option.GuardKinds, Value: kinds}, {Name: option.GuardName, Value: named}, option.Flag(option.Apply)}}
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
	if t.Declared && t.Replaced {
		// Seen in the lab (TestForceReplaceOfASharedObject): the next ordinary sync of such an app
		// takes the label off, and a forced sync after it deletes the object unguarded.
		resource := t.Resource
		if resource == "" {
			resource = "RESOURCE"
		}
		byName := ByNameCommand(t.Ref.Group, resource, t.Ref.Namespace, t.Ref.Name)
		p.Refusal = &plan.Refusal{Code: plan.RefuseReplacedBySync, Message: fmt.Sprintf(
			"%s: its app syncs with Replace=true, which writes the whole manifest over the object at every sync and takes the label %s off. "+
				"Protect it by name instead (%v), or put the label into its manifest",
			t.Ref, ProtectLabel, byName)}
		return p
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
		"or, on Argo CD v3.4+, set its app's syncPolicy.syncOptions to [Prune=confirm]", t.Replaced); p.Refusal != nil {
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

// AnnotationPlan sets one annotation on a target to value (guard approve's and guard budget's
// change), or plans nothing when it holds value already.
func AnnotationPlan(key, value string) func(plan.Target) plan.Plan {
	return func(t plan.Target) plan.Plan {
		p := plan.Plan{Target: t}
		switch before, had := t.Annotations[key]; {
		case had && before == value:
		case had:
			p.Changes = []journal.Change{journal.Rewrite(journal.FieldAnnotation, key, before, value)}
		default:
			p.Changes = []journal.Change{journal.Addition(journal.FieldAnnotation, key, value)}
		}
		return p
	}
}
