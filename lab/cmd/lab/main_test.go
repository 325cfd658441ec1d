package main

import (
	"reflect"
	"testing"

	"github.com/unprune/unprune/lab"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    lab.Config
		wantErr bool
	}{
		{env: map[string]string{}, want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1"}}},
		{env: map[string]string{"ARGOCD_VERSION": "none", "KCM": "off"}, want: lab.Config{Dir: "/d"}},
		{
			env: map[string]string{"ARGOCD_VERSION": "2.14.11", "TRACKING": "label", "INSTANCE_LABEL_KEY": "argocd.argoproj.io/instance",
				"INSTALLATION_ID": "prod", "APP_NAMESPACES": "team-a, team-b"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v2.14.11", Tracking: "label",
				InstanceLabelKey: "argocd.argoproj.io/instance", InstallationID: "prod", AppNamespaces: []string{"team-a", "team-b"}}},
		},
		{
			env:  map[string]string{"ARGOCD_VERSION": "v3.0.23", "REMOTE": "1", "SERVER": "on"},
			want: lab.Config{Dir: "/d", KCM: true, Remote: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v3.0.23", Server: true}},
		},
		{env: map[string]string{"ARGOCD_VERSION": "none", "REMOTE": "yes"}, want: lab.Config{Dir: "/d", KCM: true, Remote: true}},
		{env: map[string]string{"KCM": "maybe"}, wantErr: true},
		{env: map[string]string{"REMOTE": "2"}, wantErr: true},
		{env: map[string]string{"ARGOCD_VERSION": "none", "SERVER": "1"}, wantErr: true},
		{env: map[string]string{"TRACKING": "annotations"}, wantErr: true},
		{
			env:  map[string]string{"APPSET_POLICY": "sync", "APPSET_POLICY_OVERRIDE": "true"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1", AppSetPolicy: "sync", AppSetPolicyOverride: "true"}},
		},
		{env: map[string]string{"APPSET_POLICY": "delete"}, wantErr: true},
		{env: map[string]string{"APPSET_POLICY_OVERRIDE": "yes"}, wantErr: true},
		{
			env:  map[string]string{"ARGOCD_VERSION": "v2.14.11", "NOTIFICATIONS": "1"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v2.14.11", Notifications: true}},
		},
		{env: map[string]string{"NOTIFICATIONS": "sometimes"}, wantErr: true},
		{env: map[string]string{"ARGOCD_VERSION": "none", "NOTIFICATIONS": "on"}, wantErr: true},
		{
			env:  map[string]string{"ARGOCD_VERSION": "v2.14.11", "HYDRATOR": "1"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v2.14.11", Hydrator: true}},
		},
		{env: map[string]string{"HYDRATOR": "maybe"}, wantErr: true},
		{env: map[string]string{"ARGOCD_VERSION": "none", "HYDRATOR": "on"}, wantErr: true},
		{
			env:  map[string]string{"REPO_SERVER_TOOLS": "0"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1", NoRepoServerTools: true}},
		},
		{
			env:  map[string]string{"REPO_SERVER_TOOLS": "on"},
			want: lab.Config{Dir: "/d", KCM: true, ArgoCD: &lab.ArgoCDConfig{Namespace: "argocd", Version: "v3.6.1"}},
		},
		{env: map[string]string{"REPO_SERVER_TOOLS": "helm"}, wantErr: true},
		{env: map[string]string{"ARGOCD_VERSION": "none", "REPO_SERVER_TOOLS": "off"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := configFromEnv("/d", func(k string) string { return tt.env[k] })
		if (err != nil) != tt.wantErr {
			t.Errorf("configFromEnv(%v) error = %v, want error %t", tt.env, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("configFromEnv(%v) = %+v, want %+v", tt.env, got, tt.want)
		}
	}
}
