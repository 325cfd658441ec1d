package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewerVersion(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"v3.6.1", "", true},
		{"v3.6.1", "v2.14.11", true},
		{"v2.14.11", "v3.6.1", false},
		{"v3.6.1", "v3.6.1", false},
		{"v3.10.0", "v3.9.9", true},
		{"v3.6.1", "v3.0.23", true},
	}
	for _, tt := range tests {
		if got := newerVersion(tt.a, tt.b); got != tt.want {
			t.Errorf("newerVersion(%q, %q) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestArgoCDConfigValidate(t *testing.T) {
	tests := []struct {
		cfg     ArgoCDConfig
		wantErr string
	}{
		{ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1"}, ""},
		{ArgoCDConfig{Namespace: "argocd", Version: "v2.14.11", Tracking: "annotation+label"}, ""},
		{ArgoCDConfig{Namespace: "argocd", Version: "v3.5.0"}, `ARGOCD_VERSION="v3.5.0" is not one the lab builds; use one of v3.6.1, v3.5.1, v3.4.7, v3.3.14, v3.2.11, v3.1.16, v3.0.23, v2.14.11`},
		{ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1", Tracking: "labels"}, `TRACKING="labels" is not an Argo CD tracking method; use label, annotation or annotation+label (or leave it empty for the version's default)`},
		{ArgoCDConfig{Version: "v3.6.1"}, "an Argo CD installation needs a namespace"},
		{ArgoCDConfig{Namespace: "argocd", Version: "v2.14.11", Hydrator: true}, ""},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("Validate(%+v) = %q, want %q", tt.cfg, got, tt.wantErr)
		}
	}
}

// TestHydratorLines: every line the lab builds has the source hydrator; one before v2.14 is refused
// with the reason (the lab builds none, so the rule is checked on its own).
func TestHydratorLines(t *testing.T) {
	for _, v := range ArgoCDVersions {
		if err := (ArgoCDConfig{Namespace: "argocd", Version: v, Hydrator: true}).validateHydrator(); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	err := ArgoCDConfig{Namespace: "argocd", Version: "v2.13.9", Hydrator: true}.validateHydrator()
	if err == nil || !strings.Contains(err.Error(), "HYDRATOR=1 needs Argo CD v2.14.0 or later") {
		t.Errorf("v2.13.9: %v", err)
	}
	if err := (ArgoCDConfig{Namespace: "argocd", Version: "v2.13.9"}).validateHydrator(); err != nil {
		t.Errorf("without the hydrator: %v", err)
	}
}

func TestRepoServerTakesClientCAPath(t *testing.T) {
	for v, want := range map[string]bool{"v3.6.1": true, "v3.5.1": true, "v3.4.7": false, "v3.3.14": false, "v3.2.11": false, "v3.1.16": false, "v3.0.23": false, "v2.14.11": false} {
		if got := repoServerTakesClientCAPath(v); got != want {
			t.Errorf("repoServerTakesClientCAPath(%q) = %t, want %t", v, got, want)
		}
	}
}

// TestControllerClusterRole reads the controller's ClusterRole from a release's manifests as
// build.sh copies them (Argo CD v3.6.1's, abridged), and refuses manifests that bind it otherwise.
func TestControllerClusterRole(t *testing.T) {
	const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: argocd-application-controller
rules:
- apiGroups: ['*']
  resources: ['*']
  verbs: ['*']
`
	binding := func(subject string) string {
		return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: argocd-application-controller
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: argocd-application-controller
subjects:
- kind: ServiceAccount
  name: ` + subject + `
  namespace: argocd
`
	}
	const kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{"release manifests", map[string]string{"role.yaml": role, "binding.yaml": binding(ControllerAccount), "kustomization.yaml": kustomization}, ""},
		{"bound to another account", map[string]string{"role.yaml": role, "binding.yaml": binding("other")}, "no longer binds"},
		{"no binding", map[string]string{"role.yaml": role}, "holds no ClusterRole and ClusterRoleBinding"},
		{"not built with them", nil, "run lab/build.sh again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			folder := filepath.Join(dir, "cluster-rbac", "application-controller")
			if err := os.MkdirAll(folder, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(folder, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := controllerClusterRole(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got["kind"] != "ClusterRole" || fmt.Sprint(got["rules"]) != "[map[apiGroups:[*] resources:[*] verbs:[*]]]" {
				t.Errorf("role = %v", got)
			}
		})
	}
}
