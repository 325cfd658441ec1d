package deploytest

import (
	"slices"
	"strings"
	"testing"
)

// TestVerbRolesGrantWhatTheirVerbsUse: deploy/rbac's roles, one per kind of work, grant exactly what
// each adds to reading: unprune-view nothing, unprune-release patch (metadata merge patches),
// unprune-rename create, update and delete of Applications only, unprune-probe impersonation of Argo
// CD's controller only, unprune-guard-policy unprune's own admission policy only. No role may
// delete anything but an Application, nor touch RBAC, nor impersonate anyone else; the lab test
// (test/e2e/rbac_test.go) shows each is also enough.
func TestVerbRolesGrantWhatTheirVerbsUse(t *testing.T) {
	objs := Build(t, "rbac")
	roles := Kind(objs, "ClusterRole")
	if len(roles) != len(objs) {
		t.Fatalf("deploy/rbac builds %d objects, %d of them ClusterRoles; want ClusterRoles only", len(objs), len(roles))
	}
	read := []string{"get", "list", "watch"}
	want := map[string]func(r rule) bool{
		"unprune-view": func(r rule) bool { return false },
		"unprune-release": func(r rule) bool {
			return slices.Equal(r.verbs, append(slices.Clone(read), "patch"))
		},
		"unprune-rename": func(r rule) bool {
			return slices.Equal(r.verbs, append(slices.Clone(read), "patch")) ||
				slices.Equal(r.groups, []string{"argoproj.io"}) && slices.Equal(r.resources, []string{"applications"}) &&
					slices.Equal(r.verbs, []string{"create", "update", "delete"})
		},
		"unprune-probe": func(r rule) bool {
			return slices.Equal(r.groups, []string{""}) && slices.Equal(r.resources, []string{"serviceaccounts"}) &&
				slices.Equal(r.names, []string{"argocd-application-controller"}) && slices.Equal(r.verbs, []string{"impersonate"})
		},
		"unprune-guard-policy": func(r rule) bool {
			vap := slices.Equal(r.groups, []string{"admissionregistration.k8s.io"}) &&
				slices.Equal(r.resources, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"})
			return vap && (slices.Equal(r.verbs, []string{"create"}) ||
				slices.Equal(r.names, []string{"unprune-protect-deletion"}) && slices.Equal(r.verbs, []string{"patch", "update"}))
		},
	}
	seen := map[string]bool{}
	for _, role := range roles {
		name, _ := role["metadata"].(map[string]any)["name"].(string)
		allowed, ok := want[name]
		if !ok {
			t.Errorf("ClusterRole %s: not one of the verbs' roles", name)
			continue
		}
		seen[name] = true
		for _, r := range rules(t, role) {
			readOnly := !slices.ContainsFunc(r.verbs, func(v string) bool { return !slices.Contains(read, v) })
			if !readOnly && !allowed(r) {
				t.Errorf("ClusterRole %s grants %+v", name, r)
			}
			if strings.Contains(strings.Join(r.groups, ","), "rbac.authorization.k8s.io") && !readOnly {
				t.Errorf("ClusterRole %s writes RBAC: %+v", name, r)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("deploy/rbac has no ClusterRole %s", name)
		}
	}
}
