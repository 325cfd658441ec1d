package lab

import "testing"

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
		{ArgoCDConfig{Namespace: "argocd", Version: "v3.5.0"}, `ARGOCD_VERSION="v3.5.0" is not one the lab builds; use one of v3.6.1, v3.0.23, v2.14.11`},
		{ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1", Tracking: "labels"}, `TRACKING="labels" is not an Argo CD tracking method; use label, annotation or annotation+label (or leave it empty for the version's default)`},
		{ArgoCDConfig{Version: "v3.6.1"}, "an Argo CD installation needs a namespace"},
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

func TestRepoServerTakesClientCAPath(t *testing.T) {
	for v, want := range map[string]bool{"v3.6.1": true, "v3.0.23": false, "v2.14.11": false} {
		if got := repoServerTakesClientCAPath(v); got != want {
			t.Errorf("repoServerTakesClientCAPath(%q) = %t, want %t", v, got, want)
		}
	}
}
