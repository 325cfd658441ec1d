package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rule is one RBAC rule, flattened for the assertions.
type rule struct {
	groups, resources, verbs, names []string
}

func rules(t *testing.T, role map[string]any) []rule {
	t.Helper()
	raw, _ := role["rules"].([]any)
	var out []rule
	for _, r := range raw {
		m := r.(map[string]any)
		list := func(k string) []string {
			var s []string
			for _, v := range asSlice(m[k]) {
				s = append(s, fmt.Sprint(v))
			}
			return s
		}
		out = append(out, rule{groups: list("apiGroups"), resources: list("resources"), verbs: list("verbs"), names: list("resourceNames")})
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// noWildcardNoSecrets: a rule names its groups and resources, and Secrets are not among them.
func noWildcardNoSecrets(t *testing.T, where string, r rule) {
	t.Helper()
	for _, s := range append(append([]string{}, r.groups...), r.resources...) {
		if strings.Contains(s, "*") {
			t.Errorf("%s: wildcard", where)
		}
	}
	if slices.Contains(r.resources, "secrets") {
		t.Errorf("%s: Secrets", where)
	}
}

// TestRBACLeastPrivilege: the base grants reads only, except Events (create) and its own Lease
// (create; get and update by name); no wildcard; no Secrets; nothing that writes elsewhere.
func TestRBACLeastPrivilege(t *testing.T) {
	objs := Build(t, "base")
	read := []string{"get", "list", "watch"}
	roles := append(Kind(objs, "ClusterRole"), Kind(objs, "Role")...)
	if len(roles) != 2 {
		t.Fatalf("%d roles, want the ClusterRole and the Role", len(roles))
	}
	for _, role := range roles {
		for _, r := range rules(t, role) {
			where := fmt.Sprintf("%s rule %+v", role["kind"], r)
			noWildcardNoSecrets(t, where, r)
			for _, v := range r.verbs {
				switch {
				case slices.Contains(read, v):
					watched := []string{"applications", "appprojects", "configmaps", "namespaces", "customresourcedefinitions"}
					if v == "watch" && !slices.ContainsFunc(r.resources, func(s string) bool { return slices.Contains(watched, s) }) {
						t.Errorf("%s: watch on what the watch does not watch", where)
					}
				case slices.Equal(r.resources, []string{"events"}) && r.groups[0] == "" && v == "create":
				case slices.Equal(r.resources, []string{"leases"}) && role["kind"] == "Role" && v == "create":
				case slices.Equal(r.resources, []string{"leases"}) && role["kind"] == "Role" && v == "update" && slices.Equal(r.names, []string{"unprune-watch"}):
				default:
					t.Errorf("%s: verb %q is not allowed", where, v)
				}
			}
			if slices.Contains(r.resources, "configmaps") && role["kind"] == "Role" && !slices.Equal(r.names, []string{"argocd-cm", "argocd-cmd-params-cm"}) {
				t.Errorf("%s: Argo CD's ConfigMaps by name only", where)
			}
			// Counting a Namespace's contents for an Event's text needs no cluster-wide read of Pods
			// or ConfigMaps (their specs, their data) unless opted in (components/exact-counts).
			if role["kind"] == "ClusterRole" && slices.ContainsFunc(r.resources, func(s string) bool { return s == "pods" || s == "configmaps" }) &&
				slices.ContainsFunc(r.verbs, func(v string) bool { return v == "list" || v == "watch" }) {
				t.Errorf("%s: a cluster-wide list of Pods or ConfigMaps", where)
			}
		}
	}
	// Bound to the ServiceAccount the Deployment runs as, in the kustomization's namespace.
	for _, b := range append(Kind(objs, "ClusterRoleBinding"), Kind(objs, "RoleBinding")...) {
		s := asSlice(b["subjects"])[0].(map[string]any)
		if s["name"] != "unprune-watch" || s["namespace"] != "argocd" {
			t.Errorf("%v binds %v", b["metadata"], s)
		}
	}
}

// TestOverlayRebindsServiceAccount: another namespace and a name prefix carry into the bindings (the
// lab test and users' overlays depend on it).
func TestOverlayRebindsServiceAccount(t *testing.T) {
	objs := Build(t, "base", "namespace: team-argocd", "namePrefix: x-", "components:", "  - DEPLOYcomponents/exact-counts")
	for _, b := range append(Kind(objs, "ClusterRoleBinding"), Kind(objs, "RoleBinding")...) {
		s := asSlice(b["subjects"])[0].(map[string]any)
		if s["name"] != "x-unprune-watch" || s["namespace"] != "team-argocd" {
			t.Errorf("%v binds %v", b["metadata"], s)
		}
	}
	if n := len(Kind(objs, "ClusterRoleBinding")); n != 2 {
		t.Errorf("%d ClusterRoleBindings with exact-counts, want 2", n)
	}
	// The component grants the lists and asks the watch to use them.
	dep := Kind(objs, "Deployment")[0]
	c := asSlice(dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"])[0].(map[string]any)
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--count-all-kinds") || !strings.Contains(args, "--leader-elect=true") {
		t.Errorf("args %s: want the base's and --count-all-kinds", args)
	}
}

// TestDeployment: two replicas running `unprune watch` with leader election, probes on the metrics
// port, as the ServiceAccount.
func TestDeployment(t *testing.T) {
	objs := Build(t, "base", "components:", "  - DEPLOYcomponents/servicemonitor")
	deps := Kind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments", len(deps))
	}
	spec := deps[0]["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	c := asSlice(pod["containers"])[0].(map[string]any)
	args := fmt.Sprint(c["args"])
	if fmt.Sprint(spec["replicas"]) != "2" || pod["serviceAccountName"] != "unprune-watch" ||
		!strings.Contains(args, "watch") || !strings.Contains(args, "--metrics-bind-address=:8080") || !strings.Contains(args, "--leader-elect=true") {
		t.Errorf("deployment: replicas %v, sa %v, args %s", spec["replicas"], pod["serviceAccountName"], args)
	}
	if len(Kind(objs, "ServiceMonitor")) != 1 || len(Kind(objs, "Service")) != 1 {
		t.Error("want a Service and, with the component, a ServiceMonitor")
	}
}

// TestRemoteClustersComponent: the opt-in for remote destinations adds exactly list and watch on
// Secrets in Argo CD's namespace (the watch's informer of cluster Secrets), bound to the watch's
// ServiceAccount, and the flag that uses them.
func TestRemoteClustersComponent(t *testing.T) {
	objs := Build(t, "base", "namespace: team-argocd", "namePrefix: x-", "components:", "  - DEPLOYcomponents/remote-clusters")
	var secretRules []rule
	for _, role := range Kind(objs, "Role") {
		for _, r := range rules(t, role) {
			if slices.Contains(r.resources, "secrets") {
				secretRules = append(secretRules, r)
			}
		}
	}
	if len(secretRules) != 1 || !slices.Equal(secretRules[0].verbs, []string{"list", "watch"}) || !slices.Equal(secretRules[0].groups, []string{""}) {
		t.Errorf("rules on Secrets: %+v; want one, list and watch only", secretRules)
	}
	if n := len(Kind(objs, "ClusterRole")); n != 1 {
		t.Errorf("%d ClusterRoles: the component must not grant anything cluster-wide", n)
	}
	for _, b := range Kind(objs, "RoleBinding") {
		s := asSlice(b["subjects"])[0].(map[string]any)
		if s["name"] != "x-unprune-watch" || s["namespace"] != "team-argocd" {
			t.Errorf("%v binds %v", b["metadata"], s)
		}
	}
	dep := Kind(objs, "Deployment")[0]
	c := asSlice(dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"])[0].(map[string]any)
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--cluster-credentials=argocd") || !strings.Contains(args, "--leader-elect=true") {
		t.Errorf("args %s: want the base's and --cluster-credentials=argocd", args)
	}
}

// clusterScoped are the kinds deploy/ ships that have no namespace.
var clusterScoped = map[any]bool{"ClusterRole": true, "ClusterRoleBinding": true, "ValidatingWebhookConfiguration": true}

// TestComponentsBesideTheBase: a component's objects are not in the base's `namespace: argocd` (a
// component is applied by the overlay), so each names the namespace itself: in an overlay without
// namespace:, as the documented one, they land beside the watch — not in kubectl's current
// namespace, where a Role would grant nothing and a ServiceMonitor select nothing. With an
// overlay's namespace:, everything moves together.
func TestComponentsBesideTheBase(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(Dir(), "components"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// ui-extension and argocd-notifications patch an Argo CD installation, not the watch.
		if !e.IsDir() || e.Name() == "ui-extension" || e.Name() == "argocd-notifications" {
			continue
		}
		for _, ns := range []string{"", "team-argocd"} {
			overlay := []string{"components:", "  - DEPLOYcomponents/" + e.Name()}
			want := "argocd"
			if ns != "" {
				overlay, want = append(overlay, "namespace: "+ns), ns
			}
			for _, o := range Build(t, "base", overlay...) {
				meta := o["metadata"].(map[string]any)
				if got := meta["namespace"]; !clusterScoped[o["kind"]] && got != want {
					t.Errorf("components/%s, overlay namespace %q: %s %v is in namespace %v, want %s", e.Name(), ns, o["kind"], meta["name"], got, want)
				}
			}
		}
	}
}
