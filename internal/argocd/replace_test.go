package argocd

import "testing"

func TestRecreated(t *testing.T) {
	for _, c := range []struct {
		name           string
		group, kind    string
		app            []string
		manifest, live string
		want           Recreation
	}{
		{"applied", "", "ConfigMap", nil, "Prune=false", "", Never},
		{"app-level Replace", "", "PersistentVolumeClaim", []string{"Replace=true"}, "", "", OnForce},
		{"manifest Replace", "", "ConfigMap", nil, "Prune=false,Replace=true", "", OnForce},
		{"live Replace", "apps", "Deployment", nil, "", "Replace=true", OnForce},
		{"Replace and Force", "", "ConfigMap", nil, "Replace=true,Force=true", "", Always},
		{"Force alone applies", "", "ConfigMap", nil, "Force=true", "", Never},
		{"a Namespace is updated", "", "Namespace", []string{"Replace=true"}, "Replace=true,Force=true", "", Never},
		{"a CRD is updated", "apiextensions.k8s.io", "CustomResourceDefinition", []string{"Replace=true"}, "", "", Never},
		{"another group's Namespace kind", "example.com", "Namespace", []string{"Replace=true"}, "", "", OnForce},
		{"options compare exactly", "", "ConfigMap", []string{"replace=true"}, "Replace = true", "", Never},
	} {
		if got := Recreated(c.group, c.kind, c.app, c.manifest, c.live); got != c.want {
			t.Errorf("%s: Recreated = %d, want %d", c.name, got, c.want)
		}
	}
}
