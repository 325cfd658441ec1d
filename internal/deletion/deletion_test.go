package deletion

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

var (
	v2_14 = &argocd.Version{Major: 2, Minor: 14, Patch: 11}
	v3_0  = &argocd.Version{Major: 3, Minor: 0, Patch: 23}
	v3_6  = &argocd.Version{Major: 3, Minor: 6, Patch: 1}
)

func syncOptions(v string) map[string]string {
	return map[string]string{argocd.AnnotationSyncOptions: v}
}

func cm(annotations map[string]string) Object {
	row := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"}
	return Object{Kind: "ConfigMap", Namespace: "team", Name: "settings", Annotations: annotations, Read: true, Row: &row}
}

func TestJudge(t *testing.T) {
	ns := func(name string) Object {
		row := argocd.Resource{Version: "v1", Kind: "Namespace", Name: name}
		return Object{Kind: "Namespace", Name: name, Read: true, Row: &row}
	}
	crd := Object{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com", Read: true,
		Row: &argocd.Resource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}}
	hook := cm(map[string]string{argocd.AnnotationHook: "PreSync"})
	owned := cm(nil)
	owned.Owners = []string{"Deployment/ui"}
	copied := cm(nil)
	copied.Row = nil
	copiedConfirm := cm(syncOptions("Delete=confirm"))
	copiedConfirm.Row = nil
	confirmRow := cm(nil)
	confirmRow.Row.RequiresDeletionConfirmation = true
	unread := Object{Kind: "ConfigMap", Namespace: "team", Name: "settings", Annotations: syncOptions("Prune=false")}

	tests := []struct {
		name    string
		object  Object
		event   Event
		ctx     Context
		outcome Outcome
		guards  []risk.Guard
		soft    bool
		note    string
	}{
		// Prunes (gitops-engine pkg/sync/sync_context.go).
		{name: "prune: nothing guards", object: cm(nil), event: Prune, ctx: Context{Version: v3_6}, outcome: Deleted},
		{name: "prune: hooks are never pruned", object: hook, event: Prune, ctx: Context{Version: v3_6}, outcome: NotPruned},
		{name: "prune: owned objects are not top-level", object: owned, event: Prune, ctx: Context{Version: v3_6}, outcome: NotTopLevel},
		{name: "prune: immortal namespace", object: ns("kube-system"), event: Prune, ctx: Context{Version: v3_6}, outcome: Kept,
			guards: []risk.Guard{risk.GuardImmortalNamespace}},
		{name: "prune: Prune=false", object: cm(syncOptions("Prune=false")), event: Prune, ctx: Context{Version: v3_6}, outcome: Kept,
			guards: []risk.Guard{risk.GuardPruneDisabled}},
		{name: "prune: Prune=confirm waits", object: cm(syncOptions("Prune=confirm")), event: Prune, ctx: Context{Version: v3_6}, outcome: Waits,
			guards: []risk.Guard{risk.GuardPruneConfirm}, note: "one approval"},
		{name: "prune v3.4+: the first Prune= entry decides", object: cm(syncOptions("Prune=true,Prune=false")), event: Prune, ctx: Context{Version: v3_6},
			outcome: Deleted},
		{name: "prune before v3.4: any exact Prune=false entry", object: cm(syncOptions("Prune=true,Prune=false")), event: Prune, ctx: Context{Version: v3_0},
			outcome: Kept, guards: []risk.Guard{risk.GuardPruneDisabled}},
		{name: "prune v3.4+: app-level Prune=false is soft", object: cm(nil), event: Prune, ctx: Context{Version: v3_6, AppSyncOptions: []string{"Prune=false"}},
			outcome: Deleted, guards: []risk.Guard{risk.GuardAppPruneDisabled}, soft: true},
		{name: "prune v3.4+: the object's Prune=true overrides the app's", object: cm(syncOptions("Prune=true")), event: Prune,
			ctx: Context{Version: v3_6, AppSyncOptions: []string{"Prune=false"}}, outcome: Deleted},
		{name: "prune before v3.4: app-level options do nothing", object: cm(nil), event: Prune, ctx: Context{Version: v2_14, AppSyncOptions: []string{"Prune=false"}},
			outcome: Deleted, note: "before Argo CD v3.4"},
		{name: "prune: Delete=false does nothing", object: cm(syncOptions("Delete=false")), event: Prune, ctx: Context{Version: v3_6},
			outcome: Deleted, note: "never a prune"},
		{name: "prune: CRDs have no exception", object: crd, event: Prune, ctx: Context{Version: v3_6}, outcome: Deleted},
		{name: "prune: IgnoreExtraneous does not stop it", object: cm(map[string]string{argocd.AnnotationCompareOptions: "IgnoreExtraneous"}), event: Prune,
			ctx: Context{Version: v3_6}, outcome: Deleted, note: "does not stop a prune"},
		{name: "prune: unread object", object: unread, event: Prune, ctx: Context{Version: v3_6}, outcome: Deleted, note: "not read live"},

		// Cascades (controller/appcontroller.go finalizeApplicationDeletion, shouldBeDeleted).
		{name: "cascade: nothing guards", object: cm(nil), event: Cascade, ctx: Context{Version: v3_6}, outcome: Deleted},
		{name: "cascade: hooks go with it", object: hook, event: Cascade, ctx: Context{Version: v3_6}, outcome: Deleted, note: "deletes hooks"},
		{name: "cascade: copies go with it, without waiting", object: copiedConfirm, event: Cascade, ctx: Context{Version: v3_6}, outcome: Deleted,
			note: "without waiting"},
		{name: "cascade: a copy", object: copied, event: Cascade, ctx: Context{Version: v3_6}, outcome: Deleted},
		{name: "cascade: CRDs never", object: crd, event: Cascade, ctx: Context{Version: v3_6}, outcome: Kept, guards: []risk.Guard{risk.GuardCRDNotCascaded}},
		{name: "cascade: owned objects", object: owned, event: Cascade, ctx: Context{Version: v3_6}, outcome: NotTopLevel},
		{name: "cascade: the app's own Application", object: cm(nil), event: Cascade, ctx: Context{Version: v3_6, SelfApp: true}, outcome: NotManaged},
		{name: "cascade: not permitted by the project", object: cm(nil), event: Cascade, ctx: Context{Version: v3_6, NotPermitted: true}, outcome: NotManaged},
		{name: "cascade: Delete=false", object: cm(syncOptions("Delete=false")), event: Cascade, ctx: Context{Version: v3_6}, outcome: Kept,
			guards: []risk.Guard{risk.GuardDeleteDisabled}},
		{name: "cascade: helm keep", object: cm(map[string]string{argocd.AnnotationHelmResourcePolicy: "keep"}), event: Cascade, ctx: Context{Version: v3_6},
			outcome: Kept, guards: []risk.Guard{risk.GuardHelmKeep}},
		{name: "cascade: Prune=false does nothing", object: cm(syncOptions("Prune=false")), event: Cascade, ctx: Context{Version: v3_6}, outcome: Deleted,
			note: "does nothing against the cascade"},
		{name: "cascade v3.4+: app-level Delete=false", object: cm(nil), event: Cascade, ctx: Context{Version: v3_6, AppSyncOptions: []string{"Delete=false"}},
			outcome: Kept, guards: []risk.Guard{risk.GuardDeleteDisabled}},
		{name: "cascade before v3.4: app-level Delete=false does nothing", object: cm(nil), event: Cascade, ctx: Context{Version: v3_0, AppSyncOptions: []string{"Delete=false"}},
			outcome: Deleted},
		{name: "cascade, version unknown: app-level Delete=false is not relied on", object: cm(nil), event: Cascade, ctx: Context{AppSyncOptions: []string{"Delete=false"}},
			outcome: Deleted},
		{name: "cascade v3.4+: the first Delete= entry decides", object: cm(syncOptions("Delete=true,Delete=false")), event: Cascade, ctx: Context{Version: v3_6},
			outcome: Deleted},
		{name: "cascade before v3.4: any exact Delete=false entry", object: cm(syncOptions("Delete=true,Delete=false")), event: Cascade, ctx: Context{Version: v2_14},
			outcome: Kept, guards: []risk.Guard{risk.GuardDeleteDisabled}},
		{name: "cascade: the row requires confirmation", object: confirmRow, event: Cascade, ctx: Context{Version: v3_6}, outcome: Waits,
			guards: []risk.Guard{risk.GuardDeleteConfirm}},
		{name: "cascade v3.4+: Prune=confirm waits", object: cm(syncOptions("Prune=confirm")), event: Cascade, ctx: Context{Version: v3_6}, outcome: Waits,
			guards: []risk.Guard{risk.GuardDeleteConfirm}},
		{name: "cascade before v3.4: Prune=confirm does not wait", object: cm(syncOptions("Prune=confirm")), event: Cascade, ctx: Context{Version: v3_0},
			outcome: Deleted},
		{name: "cascade: immortal namespace", object: ns("default"), event: Cascade, ctx: Context{Version: v3_6}, outcome: Kept,
			guards: []risk.Guard{risk.GuardImmortalNamespace}},

		// The API server, for both.
		{name: "probe denied", object: cm(nil), event: Cascade, ctx: Context{Version: v3_6, Probe: ProbeDenied}, outcome: Kept,
			guards: []risk.Guard{GuardProbeDenied}},
		{name: "probe: the controller may not", object: cm(nil), event: Prune, ctx: Context{Version: v3_6, Probe: ProbeControllerForbidden}, outcome: Kept,
			guards: []risk.Guard{GuardController}},
		{name: "probe: gone", object: cm(nil), event: Prune, ctx: Context{Version: v3_6, Probe: ProbeGone}, outcome: Gone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.object, tt.event, tt.ctx)
			if v.Outcome != tt.outcome || !slices.Equal(v.Guards, tt.guards) || v.Soft != tt.soft {
				t.Errorf("Judge = %s %v soft=%v; want %s %v soft=%v (notes %q)", v.Outcome, v.Guards, v.Soft, tt.outcome, tt.guards, tt.soft, v.Notes)
			}
			if want := tt.outcome == Kept || tt.outcome == Waits; v.Guarded != want {
				t.Errorf("Guarded = %v, want %v", v.Guarded, want)
			}
			if tt.note != "" && !strings.Contains(strings.Join(v.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", v.Notes, tt.note)
			}
		})
	}
}

// TestPolicyAndProbe: unprune's admission policy guards what it covers until a probe shows the
// deletion allowed; the three commands read the same rule.
func TestPolicyAndProbe(t *testing.T) {
	policy := installedPolicy(t)
	ns := Object{Kind: "Namespace", Name: "payments", Labels: map[string]string{guard.ProtectLabel: "true"}, Read: true}
	for _, tt := range []struct {
		probe   ProbeResult
		outcome Outcome
	}{
		{"", Kept}, {ProbeInconclusive, Kept}, {ProbeAllowed, Deleted}, {ProbeDenied, Kept},
	} {
		for _, e := range []Event{Prune, Cascade} {
			v := Judge(ns, e, Context{Version: v3_6, Policy: policy, Probe: tt.probe})
			if v.Outcome != tt.outcome || !slices.Contains(v.Guards, guard.PolicyGuard) {
				t.Errorf("%s, probe %q: %s %v; want %s with %s", e, tt.probe, v.Outcome, v.Guards, tt.outcome, guard.PolicyGuard)
			}
		}
	}
}

// An object another guard keeps still lists what the API server said of it: every guard there is.
func TestKeptObjectListsTheServersGuards(t *testing.T) {
	ns := Object{Kind: "Namespace", Name: "kube-public", Read: true}
	v := Judge(ns, Prune, Context{Version: v3_6, Probe: ProbeDenied})
	if v.Outcome != Kept || !slices.Contains(v.Guards, risk.GuardImmortalNamespace) || !slices.Contains(v.Guards, GuardProbeDenied) {
		t.Errorf("%s %v; want Kept by ImmortalNamespace and ProbeDenied", v.Outcome, v.Guards)
	}
}

// policyCluster serves unprune's policy and its binding, as `guard policy --apply` installs them
// for its resources (namespaces when none).
type policyCluster struct {
	*clustertest.Cluster
	resources []string
}

func (p policyCluster) GetClusterObject(_ context.Context, _, _, resource, _ string) (map[string]any, error) {
	if resource == guard.BindingResource {
		return map[string]any{"spec": map[string]any{"validationActions": []any{"Deny"}}}, nil
	}
	resources := []any{"namespaces"}
	if len(p.resources) > 0 {
		resources = nil
		for _, r := range p.resources {
			resources = append(resources, r)
		}
	}
	return map[string]any{"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{
		map[string]any{"apiGroups": []any{""}, "resources": resources}}}}}, nil
}

func installedPolicy(t *testing.T, resources ...string) *guard.Installed {
	var objects cluster.Objects = policyCluster{clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer), resources}
	p, warn := guard.ReadInstalled(context.Background(), objects)
	if p == nil {
		t.Fatalf("policy not recognised: %s", warn)
	}
	return p
}

// TestPruneGuards: what keeps a prune from deleting an object, read from the object alone (the
// rules scan, audit and check share).
func TestPruneGuards(t *testing.T) {
	obj := func(group, kind, name string, annotations map[string]string) Object {
		return Object{Group: group, Kind: kind, Name: name, Annotations: annotations, Read: true}
	}
	tests := []struct {
		name   string
		object Object
		want   []risk.Guard
	}{
		{"default namespace", obj("", "Namespace", "default", nil), []risk.Guard{risk.GuardImmortalNamespace}},
		{"kube-public", obj("", "Namespace", "kube-public", nil), []risk.Guard{risk.GuardImmortalNamespace}},
		{"ordinary namespace", obj("", "Namespace", "team-a", nil), nil},
		{"a ConfigMap named default", obj("", "ConfigMap", "default", nil), nil},
		{"a Namespace kind in another group", obj("example.com", "Namespace", "default", nil), nil},
		{"Prune=false in a list", obj("", "ConfigMap", "c", syncOptions("ServerSideApply=true, Prune=false")), []risk.Guard{risk.GuardPruneDisabled}},
		{"Prune=confirm in a list", obj("", "ConfigMap", "c", syncOptions("ServerSideApply=true,Prune=confirm")), []risk.Guard{risk.GuardPruneConfirm}},
		{"other options only", obj("", "ConfigMap", "c", syncOptions("ServerSideApply=true,PruneLast=true")), nil},
		{"options are case-sensitive like Argo CD", obj("", "ConfigMap", "c", syncOptions("prune=false")), nil},
		{"Prune=false in compare-options does nothing", obj("", "ConfigMap", "c", map[string]string{argocd.AnnotationCompareOptions: "Prune=false"}), nil},
		{"immortal namespace with Prune=false", obj("", "Namespace", "kube-system", syncOptions("Prune=false")), []risk.Guard{risk.GuardImmortalNamespace, risk.GuardPruneDisabled}},
	}
	for _, tt := range tests {
		if got := Judge(tt.object, Prune, Context{Version: v3_6}).Guards; !slices.Equal(got, tt.want) {
			t.Errorf("%s: guards %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestAppLevelPruneGuards: app-level Prune= options count only from v3.4.0, are soft, and an
// object's own Prune= entry overrides them.
func TestAppLevelPruneGuards(t *testing.T) {
	ns := Object{Kind: "Namespace", Name: "team-a", Read: true}
	v33, v34 := &argocd.Version{Major: 3, Minor: 3, Patch: 9}, &argocd.Version{Major: 3, Minor: 4}
	for _, tt := range []struct {
		name    string
		version *argocd.Version
		object  Object
		app     []string
		want    []risk.Guard
		note    bool
	}{
		{"v2.14.11 ignores app Prune=false", v2_14, ns, []string{"Prune=false"}, nil, true},
		{"v3.3.9 ignores app Prune=confirm", v33, ns, []string{"Prune=confirm"}, nil, true},
		{"v3.4.0 app Prune=false", v34, ns, []string{"Prune=false"}, []risk.Guard{risk.GuardAppPruneDisabled}, false},
		{"unknown version: not counted", nil, ns, []string{"Prune=false"}, nil, true},
		{"object overrides app", v34, Object{Kind: "Namespace", Name: "x", Read: true, Annotations: syncOptions("Prune=true")}, []string{"Prune=false"}, nil, true},
	} {
		v := Judge(tt.object, Prune, Context{Version: tt.version, AppSyncOptions: tt.app})
		if !slices.Equal(v.Guards, tt.want) || (len(v.Notes) > 0) != tt.note || v.Guarded {
			t.Errorf("%s: guards %q (notes %q, guarded %v), want %q (notes %v), never guarded", tt.name, v.Guards, v.Notes, v.Guarded, tt.want, tt.note)
		}
	}
}

// Deleting an app runs its deletion hooks when, and only when, the controller has put their
// finalizers on it (with or without the /cleanup suffix the controller also writes).
func TestHooks(t *testing.T) {
	for _, c := range []struct {
		finalizers []string
		want       []string
	}{
		{nil, nil},
		{[]string{argocd.FinalizerResources}, nil},
		{[]string{argocd.FinalizerPreDelete, argocd.FinalizerResources}, []string{"PreDelete hooks run first"}},
		{[]string{argocd.FinalizerResources, argocd.FinalizerPostDelete, argocd.FinalizerPostDelete + "/cleanup"},
			[]string{"PostDelete hooks run once its resources are deleted"}},
		{[]string{argocd.FinalizerPostDelete, argocd.FinalizerPreDelete}, []string{"PreDelete hooks run first", "PostDelete hooks"}},
	} {
		got := Hooks(c.finalizers)
		if len(got) != len(c.want) {
			t.Errorf("%v: %q, want %d notes", c.finalizers, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%v: note %q does not say %q", c.finalizers, got[i], w)
			}
		}
	}
}

// TestReplace: a forced sync with Replace=true deletes and recreates an object whatever its own
// Prune= and Delete= say; it updates a Namespace or CRD instead; an owned object is no app's to
// sync; unprune's admission policy keeps what it covers (argocd.Recreated, judgeReplace).
func TestReplace(t *testing.T) {
	guarded := cm(syncOptions("Prune=false,Delete=false"))
	if v := Judge(guarded, Replace, Context{Version: v3_6}); v.Outcome != Deleted || v.Guarded || !strings.Contains(strings.Join(v.Notes, ";"), "do not stop a forced replace") {
		t.Errorf("ConfigMap with Prune=false,Delete=false: %+v", v)
	}
	for _, o := range []Object{
		{Kind: "Namespace", Name: "team", Read: true},
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com", Read: true},
	} {
		if v := Judge(o, Replace, Context{Version: v3_6}); v.Outcome != Updated || v.Guarded {
			t.Errorf("%s: %+v, want %s", o.Kind, v, Updated)
		}
	}
	owned := cm(nil)
	owned.Owners = []string{"Deployment/ui"}
	if v := Judge(owned, Replace, Context{Version: v3_6}); v.Outcome != NotTopLevel {
		t.Errorf("owned: %+v", v)
	}
	pv := argocd.Resource{Version: "v1", Kind: "PersistentVolume", Name: "data"}
	protected := Object{Kind: "PersistentVolume", Name: "data", Labels: map[string]string{guard.ProtectLabel: "true"}, Read: true, Row: &pv}
	if v := Judge(protected, Replace, Context{Version: v3_6, Policy: installedPolicy(t, "persistentvolumes")}); v.Outcome != Kept || !v.Guarded || !slices.Contains(v.Guards, guard.PolicyGuard) {
		t.Errorf("protected by the admission policy: %+v", v)
	}
}
