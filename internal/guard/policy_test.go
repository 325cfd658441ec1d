package guard

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

const (
	defaultExpression = `!(has(oldObject.metadata.labels) && "unprune.dev/protected" in oldObject.metadata.labels && oldObject.metadata.labels["unprune.dev/protected"] == "true")`
	messageNobody     = `request.resource.resource + "/" + oldObject.metadata.name + " is protected from deletion by ValidatingAdmissionPolicy unprune-protect-deletion (label unprune.dev/protected=true, or named in the policy); nobody may delete it. If Argo CD tried to prune it, release it instead: unprune detach APP. If it really must go, remove the protection first."`
	messageBreakGlass = `request.resource.resource + "/" + oldObject.metadata.name + " is protected from deletion by ValidatingAdmissionPolicy unprune-protect-deletion (label unprune.dev/protected=true, or named in the policy); only members of group platform-admins may delete it. If Argo CD tried to prune it, release it instead: unprune detach APP. If it really must go, remove the protection first."`
)

// lookup is a cluster's discovery for the tests: kubectl's names of ConfigMaps and StatefulSets.
func lookup(name string) (Kind, error) {
	switch name {
	case "configmaps", "cm", "ConfigMap":
		return Kind{Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, nil
	case "statefulsets.apps", "sts":
		return Kind{Group: "apps", Resource: "statefulsets", Kind: "StatefulSet", Namespaced: true}, nil
	case "ns":
		return Kind{Resource: "namespaces", Kind: "Namespace"}, nil
	}
	return Kind{}, fmt.Errorf("cluster in-cluster serves no kind %s", name)
}

func mustPolicy(t *testing.T, o PolicyOptions) (policy, binding map[string]any) {
	t.Helper()
	objs, err := Policy(o)
	if err != nil {
		t.Fatalf("Policy(%+v): %v", o, err)
	}
	if len(objs) != 2 {
		t.Fatalf("Policy(%+v) returned %d objects, want 2", o, len(objs))
	}
	return objs[0], objs[1]
}

// dig walks nested maps; it fails the test when a step is missing or not a map.
func dig(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	var cur any = obj
	for i, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, not a map", strings.Join(path[:i], "."), cur)
		}
		cur, ok = m[p]
		if !ok {
			t.Fatalf("%s is missing", strings.Join(path[:i+1], "."))
		}
	}
	return cur
}

func validation(t *testing.T, policy map[string]any) map[string]any {
	t.Helper()
	vs, ok := dig(t, policy, "spec", "validations").([]any)
	if !ok || len(vs) != 1 {
		t.Fatalf("spec.validations = %#v, want one validation", dig(t, policy, "spec", "validations"))
	}
	v, ok := vs[0].(map[string]any)
	if !ok {
		t.Fatalf("spec.validations[0] is %T", vs[0])
	}
	return v
}

func rule(group string, resources ...string) any {
	rs := make([]any, 0, len(resources))
	for _, r := range resources {
		rs = append(rs, r)
	}
	return map[string]any{"apiGroups": []any{group}, "apiVersions": []any{"*"}, "operations": []any{"DELETE"}, "resources": rs}
}

func TestPolicyDefaultExact(t *testing.T) {
	objs, err := Policy(PolicyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]any{"app.kubernetes.io/managed-by": "unprune"}
	want := []map[string]any{
		{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "ValidatingAdmissionPolicy",
			"metadata": map[string]any{
				"name":        "unprune-protect-deletion",
				"labels":      labels,
				"annotations": map[string]any{"unprune.dev/protected-names": ""},
			},
			"spec": map[string]any{
				"failurePolicy":    "Fail",
				"matchConstraints": map[string]any{"resourceRules": []any{rule("", "namespaces")}},
				"validations": []any{map[string]any{
					"expression":        defaultExpression,
					"reason":            "Forbidden",
					"messageExpression": messageNobody,
				}},
			},
		},
		{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       "ValidatingAdmissionPolicyBinding",
			"metadata":   map[string]any{"name": "unprune-protect-deletion", "labels": labels},
			"spec":       map[string]any{"policyName": "unprune-protect-deletion", "validationActions": []any{"Deny"}},
		},
	}
	if !reflect.DeepEqual(objs, want) {
		t.Errorf("Policy(default) =\n%#v\nwant\n%#v", objs, want)
	}
}

func TestPolicyResourceRules(t *testing.T) {
	tests := []struct {
		name  string
		kinds []string
		want  []any
	}{
		{name: "default", kinds: nil, want: []any{rule("", "namespaces")}},
		{name: "empty list", kinds: []string{}, want: []any{rule("", "namespaces")}},
		{name: "namespaces", kinds: []string{"namespaces"}, want: []any{rule("", "namespaces")}},
		{
			name:  "all kinds grouped and sorted by group",
			kinds: []string{"namespaces", "crds", "pvs"},
			want:  []any{rule("", "namespaces", "persistentvolumes"), rule("apiextensions.k8s.io", "customresourcedefinitions")},
		},
		{
			name:  "crds first still sorts the core group first",
			kinds: []string{"crds", "namespaces"},
			want:  []any{rule("", "namespaces"), rule("apiextensions.k8s.io", "customresourcedefinitions")},
		},
		{name: "crds only", kinds: []string{"crds"}, want: []any{rule("apiextensions.k8s.io", "customresourcedefinitions")}},
		{name: "pvs only", kinds: []string{"pvs"}, want: []any{rule("", "persistentvolumes")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, _ := mustPolicy(t, PolicyOptions{Kinds: tt.kinds})
			got := dig(t, policy, "spec", "matchConstraints", "resourceRules")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("resourceRules =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestPolicyNames(t *testing.T) {
	const protected = `has(oldObject.metadata.labels) && "unprune.dev/protected" in oldObject.metadata.labels && oldObject.metadata.labels["unprune.dev/protected"] == "true"`
	tests := []struct {
		name           string
		opts           PolicyOptions
		wantExpression string
		wantNames      string
	}{
		{
			name:           "no names",
			opts:           PolicyOptions{},
			wantExpression: "!(" + protected + ")",
			wantNames:      "",
		},
		{
			name:           "one namespace",
			opts:           PolicyOptions{Names: []string{"namespaces/team-a"}},
			wantExpression: "!(" + protected + ` || (request.resource.resource == "namespaces" && oldObject.metadata.name in ["team-a"]))`,
			wantNames:      "namespaces/team-a",
		},
		{
			name:           "two namespaces keep their order",
			opts:           PolicyOptions{Names: []string{"namespaces/team-b", "namespaces/team-a"}},
			wantExpression: "!(" + protected + ` || (request.resource.resource == "namespaces" && oldObject.metadata.name in ["team-b", "team-a"]))`,
			wantNames:      "namespaces/team-b,namespaces/team-a",
		},
		{
			name: "several kinds, sorted by resource",
			opts: PolicyOptions{Kinds: []string{"namespaces", "crds", "pvs"},
				Names: []string{"pvs/data", "namespaces/team-a", "crds/widgets.example.com"}},
			wantExpression: "!(" + protected +
				` || (request.resource.group == "apiextensions.k8s.io" && request.resource.resource == "customresourcedefinitions" && oldObject.metadata.name in ["widgets.example.com"])` +
				` || (request.resource.resource == "namespaces" && oldObject.metadata.name in ["team-a"])` +
				` || (request.resource.resource == "persistentvolumes" && oldObject.metadata.name in ["data"]))`,
			wantNames: "customresourcedefinitions/widgets.example.com,namespaces/team-a,persistentvolumes/data",
		},
		{
			name: "namespaced kinds are named with their namespace, other groups with their group",
			opts: PolicyOptions{Kinds: []string{"cm", "sts"}, Resolve: lookup,
				Names: []string{"configmaps/shop/settings", "cm/shop/prices", "sts/db/postgres"}},
			wantExpression: "!(" + protected +
				` || (request.resource.resource == "configmaps" && oldObject.metadata.namespace + "/" + oldObject.metadata.name in ["shop/settings", "shop/prices"])` +
				` || (request.resource.group == "apps" && request.resource.resource == "statefulsets" && oldObject.metadata.namespace + "/" + oldObject.metadata.name in ["db/postgres"]))`,
			wantNames: "configmaps/shop/settings,configmaps/shop/prices,statefulsets/db/postgres",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, _ := mustPolicy(t, tt.opts)
			if got := validation(t, policy)["expression"]; got != tt.wantExpression {
				t.Errorf("expression =\n%v\nwant\n%v", got, tt.wantExpression)
			}
			if got := dig(t, policy, "metadata", "annotations", NamesAnnotation); got != tt.wantNames {
				t.Errorf("annotation %s = %q, want %q", NamesAnnotation, got, tt.wantNames)
			}
		})
	}
}

func TestPolicyErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    PolicyOptions
		wantErr string
	}{
		{
			name:    "unknown kind",
			opts:    PolicyOptions{Kinds: []string{"secrets"}},
			wantErr: `unknown kind "secrets" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`,
		},
		{
			name:    "unknown kind after a known one",
			opts:    PolicyOptions{Kinds: []string{"namespaces", "Namespaces"}},
			wantErr: `unknown kind "Namespaces" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`,
		},
		{
			name:    "a kind the cluster does not serve",
			opts:    PolicyOptions{Kinds: []string{"widgets"}, Resolve: lookup},
			wantErr: `kind "widgets" for the policy: cluster in-cluster serves no kind widgets`,
		},
		{
			name:    "a namespaced kind named without its namespace",
			opts:    PolicyOptions{Kinds: []string{"cm"}, Resolve: lookup, Names: []string{"configmaps/settings"}},
			wantErr: `<GuardName> "configmaps/settings": configmaps are namespaced: use configmaps/NAMESPACE/NAME`,
		},
		{
			name:    "a cluster-scoped kind named with a namespace",
			opts:    PolicyOptions{Names: []string{"namespaces/shop/team-a"}},
			wantErr: `<GuardName> "namespaces/shop/team-a": namespaces are cluster-scoped: use namespaces/NAME`,
		},
		{
			name:    "a namespaced name with an empty namespace",
			opts:    PolicyOptions{Kinds: []string{"cm"}, Resolve: lookup, Names: []string{"cm//settings"}},
			wantErr: `<GuardName> "cm//settings": configmaps are namespaced: use cm/NAMESPACE/NAME`,
		},
		{
			name:    "a name of a resolved kind not in --kinds",
			opts:    PolicyOptions{Kinds: []string{"cm"}, Resolve: lookup, Names: []string{"secrets/shop/token"}},
			wantErr: `<GuardName> "secrets/shop/token": add secrets to <GuardKinds> too`,
		},
		{
			name:    "name without a slash",
			opts:    PolicyOptions{Names: []string{"team-a"}},
			wantErr: `<GuardName> "team-a": use RESOURCE/NAME, or RESOURCE/NAMESPACE/NAME for a namespaced kind, e.g. namespaces/team-a`,
		},
		{
			name:    "name with an empty name",
			opts:    PolicyOptions{Names: []string{"namespaces/"}},
			wantErr: `<GuardName> "namespaces/": use RESOURCE/NAME, or RESOURCE/NAMESPACE/NAME for a namespaced kind, e.g. namespaces/team-a`,
		},
		{
			name:    "name with an unknown kind",
			opts:    PolicyOptions{Names: []string{"secrets/token"}},
			wantErr: `<GuardName> "secrets/token": add secrets to <GuardKinds> too`,
		},
		{
			name:    "name of a kind not in --kinds (default)",
			opts:    PolicyOptions{Names: []string{"pvs/data"}},
			wantErr: `<GuardName> "pvs/data": add pvs to <GuardKinds> too`,
		},
		{
			name:    "name of a kind not in --kinds (explicit)",
			opts:    PolicyOptions{Kinds: []string{"pvs"}, Names: []string{"namespaces/team-a"}},
			wantErr: `<GuardName> "namespaces/team-a": add namespaces to <GuardKinds> too`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Policy(tt.opts)
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Policy(%+v) error = %v, want %q", tt.opts, err, tt.wantErr)
			}
			if objs != nil {
				t.Errorf("Policy(%+v) returned objects with an error: %#v", tt.opts, objs)
			}
		})
	}
}

func TestPolicyBreakGlass(t *testing.T) {
	tests := []struct {
		name        string
		group       string
		wantConds   any // nil: no matchConditions key
		wantMessage string
	}{
		{name: "none", group: "", wantConds: nil, wantMessage: messageNobody},
		{
			name:  "group",
			group: "platform-admins",
			wantConds: []any{map[string]any{
				"name":       "not-break-glass",
				"expression": `!("platform-admins" in request.userInfo.groups)`,
			}},
			wantMessage: messageBreakGlass,
		},
		{
			name:  "group with a colon",
			group: "system:masters",
			wantConds: []any{map[string]any{
				"name":       "not-break-glass",
				"expression": `!("system:masters" in request.userInfo.groups)`,
			}},
			wantMessage: strings.Replace(messageBreakGlass, "platform-admins", "system:masters", 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, _ := mustPolicy(t, PolicyOptions{BreakGlassGroup: tt.group})
			spec := dig(t, policy, "spec").(map[string]any)
			got, ok := spec["matchConditions"]
			switch {
			case tt.wantConds == nil && ok:
				t.Errorf("matchConditions = %#v, want none", got)
			case tt.wantConds != nil && !reflect.DeepEqual(got, tt.wantConds):
				t.Errorf("matchConditions = %#v, want %#v", got, tt.wantConds)
			}
			v := validation(t, policy)
			if v["messageExpression"] != tt.wantMessage {
				t.Errorf("messageExpression =\n%v\nwant\n%v", v["messageExpression"], tt.wantMessage)
			}
			// The break-glass group exempts by matchConditions, never by the validation itself.
			if v["expression"] != defaultExpression {
				t.Errorf("expression = %v, want %v", v["expression"], defaultExpression)
			}
		})
	}
}

func TestPolicyInvariants(t *testing.T) {
	for _, o := range []PolicyOptions{
		{},
		{Kinds: []string{"namespaces", "crds", "pvs"}, Names: []string{"namespaces/team-a"}, BreakGlassGroup: "platform-admins"},
	} {
		policy, binding := mustPolicy(t, o)
		if policy["kind"] != "ValidatingAdmissionPolicy" || binding["kind"] != "ValidatingAdmissionPolicyBinding" {
			t.Errorf("kinds = %v, %v", policy["kind"], binding["kind"])
		}
		for _, obj := range []map[string]any{policy, binding} {
			if got := dig(t, obj, "apiVersion"); got != "admissionregistration.k8s.io/v1" {
				t.Errorf("%v apiVersion = %v", obj["kind"], got)
			}
			if got := dig(t, obj, "metadata", "name"); got != PolicyName {
				t.Errorf("%v name = %v, want %s", obj["kind"], got, PolicyName)
			}
			want := map[string]any{"app.kubernetes.io/managed-by": "unprune"}
			if got := dig(t, obj, "metadata", "labels"); !reflect.DeepEqual(got, want) {
				t.Errorf("%v labels = %#v, want %#v", obj["kind"], got, want)
			}
		}
		if got := dig(t, policy, "spec", "failurePolicy"); got != "Fail" {
			t.Errorf("failurePolicy = %v, want Fail", got)
		}
		if got := validation(t, policy)["reason"]; got != "Forbidden" {
			t.Errorf("reason = %v, want Forbidden", got)
		}
		if got := dig(t, binding, "spec", "policyName"); got != "unprune-protect-deletion" {
			t.Errorf("binding policyName = %v", got)
		}
		if got := dig(t, binding, "spec", "validationActions"); !reflect.DeepEqual(got, []any{"Deny"}) {
			t.Errorf("binding validationActions = %#v, want [Deny]", got)
		}
		for _, rr := range dig(t, policy, "spec", "matchConstraints", "resourceRules").([]any) {
			if ops := rr.(map[string]any)["operations"]; !reflect.DeepEqual(ops, []any{"DELETE"}) {
				t.Errorf("operations = %#v, want [DELETE]", ops)
			}
		}
	}
}

func TestParseKinds(t *testing.T) {
	ns := Kind{Flag: "namespaces", Resource: "namespaces", Kind: "Namespace"}
	crd := Kind{Flag: "crds", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
	pv := Kind{Flag: "pvs", Resource: "persistentvolumes", Kind: "PersistentVolume"}
	tests := []struct {
		in      []string
		resolve func(string) (Kind, error)
		want    []Kind
		wantErr string
	}{
		{in: nil, want: []Kind{ns}},
		{in: []string{}, want: []Kind{ns}},
		{in: []string{"crds"}, want: []Kind{crd}},
		{in: []string{"pvs", "namespaces", "crds"}, want: []Kind{pv, ns, crd}},
		{in: []string{"pv"}, wantErr: `unknown kind "pv" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`},
		{in: []string{""}, wantErr: `unknown kind "" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`},
		{in: []string{"customresourcedefinitions"}, wantErr: `unknown kind "customresourcedefinitions" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`},
		// With a cluster to ask: any kind, named as kubectl names it; one named twice counts once.
		{in: []string{"namespaces", "cm", "ns", "ConfigMap"}, resolve: lookup, want: []Kind{ns,
			{Flag: "cm", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}}},
		{in: []string{"sts"}, resolve: lookup, want: []Kind{{Flag: "sts", Group: "apps", Resource: "statefulsets", Kind: "StatefulSet", Namespaced: true}}},
		{in: []string{""}, resolve: lookup, wantErr: `unknown kind "" for the policy: use namespaces, crds, pvs, or name any other kind as kubectl does (secrets, pvc, statefulsets.apps) with a cluster to look it up in`},
		{in: []string{"widgets"}, resolve: lookup, wantErr: `kind "widgets" for the policy: cluster in-cluster serves no kind widgets`},
	}
	for _, tt := range tests {
		got, err := ParseKinds(tt.in, tt.resolve)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseKinds(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			if got != nil {
				t.Errorf("ParseKinds(%q) = %v with an error", tt.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

var teamA = argocd.ObjectRef{Kind: "Namespace", Name: "team-a", ClusterScoped: true}

func changeStrings(cs []journal.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

type planWant struct {
	changes     []journal.Change
	notes       []string
	refusalCode plan.RefusalCode // "" for none
}

func checkPlan(t *testing.T, got plan.Plan, target plan.Target, want planWant) {
	t.Helper()
	if !reflect.DeepEqual(got.Target, target) {
		t.Errorf("Target = %#v, want %#v", got.Target, target)
	}
	if !reflect.DeepEqual(changeStrings(got.Changes), changeStrings(want.changes)) || !reflect.DeepEqual(got.Changes, want.changes) {
		t.Errorf("Changes = %q, want %q", changeStrings(got.Changes), changeStrings(want.changes))
	}
	if !reflect.DeepEqual(got.Notes, want.notes) {
		t.Errorf("Notes = %q, want %q", got.Notes, want.notes)
	}
	switch {
	case want.refusalCode == "" && got.Refusal != nil:
		t.Errorf("Refusal = %+v, want none", got.Refusal)
	case want.refusalCode != "" && got.Refusal == nil:
		t.Errorf("no refusal, want %s", want.refusalCode)
	case want.refusalCode != "" && got.Refusal.Code != want.refusalCode:
		t.Errorf("Refusal.Code = %s, want %s", got.Refusal.Code, want.refusalCode)
	}
	wantDone := want.refusalCode == "" && len(want.changes) == 0
	if (got.Refusal == nil && len(got.Changes) == 0) != wantDone {
		t.Errorf("Done() = %v, want %v", (got.Refusal == nil && len(got.Changes) == 0), wantDone)
	}
}

func TestProtectPlan(t *testing.T) {
	tests := []struct {
		name   string
		target plan.Target
		want   planWant
	}{
		{
			name:   "no labels at all",
			target: plan.Target{Ref: teamA},
			want:   planWant{changes: []journal.Change{journal.Addition(journal.FieldLabel, "unprune.dev/protected", "true")}},
		},
		{
			name:   "label absent",
			target: plan.Target{Ref: teamA, Labels: map[string]string{"team": "a"}},
			want:   planWant{changes: []journal.Change{journal.Addition(journal.FieldLabel, "unprune.dev/protected", "true")}},
		},
		{
			name:   "label false",
			target: plan.Target{Ref: teamA, Labels: map[string]string{"unprune.dev/protected": "false"}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldLabel, "unprune.dev/protected", "false", "true")}},
		},
		{
			name:   "label empty",
			target: plan.Target{Ref: teamA, Labels: map[string]string{"unprune.dev/protected": ""}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldLabel, "unprune.dev/protected", "", "true")}},
		},
		{
			name:   "label True is not true",
			target: plan.Target{Ref: teamA, Labels: map[string]string{"unprune.dev/protected": "True"}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldLabel, "unprune.dev/protected", "True", "true")}},
		},
		{
			name:   "already protected",
			target: plan.Target{Ref: teamA, Labels: map[string]string{"unprune.dev/protected": "true"}},
			want:   planWant{},
		},
		{
			name:   "being deleted",
			target: plan.Target{Ref: teamA, Deleting: true},
			want:   planWant{refusalCode: plan.RefuseDeleting},
		},
		{
			name:   "being deleted, even when protected",
			target: plan.Target{Ref: teamA, Deleting: true, Labels: map[string]string{"unprune.dev/protected": "true"}},
			want:   planWant{refusalCode: plan.RefuseDeleting},
		},
		// Each sync of an app with Replace=true writes its manifest over the object: the label goes.
		{
			name:   "declared by an app that syncs with Replace=true",
			target: plan.Target{Ref: teamA, Declared: true, Replaced: true},
			want:   planWant{refusalCode: plan.RefuseReplacedBySync},
		},
		{
			name:   "labelled already, by an app that syncs with Replace=true",
			target: plan.Target{Ref: teamA, Declared: true, Replaced: true, Labels: map[string]string{"unprune.dev/protected": "true"}},
			want:   planWant{refusalCode: plan.RefuseReplacedBySync},
		},
		{
			name:   "declared by an app that applies",
			target: plan.Target{Ref: teamA, Declared: true},
			want:   planWant{changes: []journal.Change{journal.Addition(journal.FieldLabel, "unprune.dev/protected", "true")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPlan(t, ProtectPlan(tt.target), tt.target, tt.want)
		})
	}
	p := ProtectPlan(plan.Target{Ref: teamA, Resource: "namespaces", Declared: true, Replaced: true})
	if want := "Protect it by name instead (unprune guard policy <GuardMerge> <GuardKinds> namespaces <GuardName> namespaces/team-a <Apply>)"; p.Refusal == nil || !strings.Contains(p.Refusal.Message, want) {
		t.Errorf("refusal %+v does not say %q", p.Refusal, want)
	}
}

func TestConfirmPlan(t *testing.T) {
	const key = "argocd.argoproj.io/sync-options"
	const stronger = "sync-options already has Prune=false, a stronger guard: left as is"
	tests := []struct {
		name   string
		target plan.Target
		want   planWant
	}{
		{
			name:   "no annotations",
			target: plan.Target{Ref: teamA},
			want:   planWant{changes: []journal.Change{journal.Addition(journal.FieldAnnotation, key, "Prune=confirm")}},
		},
		{
			name:   "sync-options absent",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{"note": "x"}},
			want:   planWant{changes: []journal.Change{journal.Addition(journal.FieldAnnotation, key, "Prune=confirm")}},
		},
		{
			name:   "other option kept",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "ServerSideApply=true"}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldAnnotation, key, "ServerSideApply=true", "ServerSideApply=true,Prune=confirm")}},
		},
		{
			name:   "empty value",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: ""}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldAnnotation, key, "", "Prune=confirm")}},
		},
		{
			name:   "Prune=true replaced in place",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "Prune=true,ServerSideApply=true"}},
			want:   planWant{changes: []journal.Change{journal.Rewrite(journal.FieldAnnotation, key, "Prune=true,ServerSideApply=true", "Prune=confirm,ServerSideApply=true")}},
		},
		{
			name:   "already confirm",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "Prune=confirm"}},
			want:   planWant{},
		},
		{
			name:   "already confirm among others",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "ServerSideApply=true,Prune=confirm"}},
			want:   planWant{},
		},
		{
			name:   "Prune=false is stronger",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "Prune=false"}},
			want:   planWant{notes: []string{stronger}},
		},
		{
			name:   "Prune=false among others",
			target: plan.Target{Ref: teamA, Annotations: map[string]string{key: "ServerSideApply=true, Prune=false"}},
			want:   planWant{notes: []string{stronger}},
		},
		{
			name:   "being deleted",
			target: plan.Target{Ref: teamA, Deleting: true},
			want:   planWant{refusalCode: plan.RefuseDeleting},
		},
		{
			name:   "being deleted with Prune=false",
			target: plan.Target{Ref: teamA, Deleting: true, Annotations: map[string]string{key: "Prune=false"}},
			want:   planWant{refusalCode: plan.RefuseDeleting},
		},
		{
			name:   "declared by an app that syncs with Replace=true",
			target: plan.Target{Ref: teamA, Declared: true, Replaced: true},
			want:   planWant{refusalCode: plan.RefuseReplacedBySync},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPlan(t, ConfirmPlan(tt.target), tt.target, tt.want)
		})
	}
}

func TestRefusalMessages(t *testing.T) {
	target := plan.Target{Ref: teamA, Deleting: true}
	want := teamA.String() + " is being deleted already; nothing can keep it now"
	for name, p := range map[string]plan.Plan{"ProtectPlan": ProtectPlan(target), "ConfirmPlan": ConfirmPlan(target)} {
		if p.Refusal == nil || p.Refusal.Message != want {
			t.Errorf("%s refusal = %+v, want message %q", name, p.Refusal, want)
		}
		if len(p.Changes) != 0 || len(p.Notes) != 0 {
			t.Errorf("%s refused with changes %v, notes %v", name, p.Changes, p.Notes)
		}
	}
}
