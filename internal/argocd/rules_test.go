package argocd

import (
	"strings"
	"testing"
)

func TestEffectivePrune(t *testing.T) {
	v := func(s string) *Version {
		parsed, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return &parsed
	}
	tests := []struct {
		name       string
		version    *Version
		object     string
		app        []string
		want       PruneValue
		wantSource PruneSource
		certain    bool
		note       string
	}{
		{name: "nothing", version: v("v3.6.1"), want: PruneAllowed, certain: true},
		{name: "object Prune=false", version: v("v2.14.11"), object: "Prune=false", want: PruneDisabled, wantSource: PruneSourceObject, certain: true},
		{name: "object Prune=confirm", version: v("v3.6.1"), object: "ServerSideApply=true, Prune=confirm", want: PruneConfirm, wantSource: PruneSourceObject, certain: true},
		{name: "app Prune=false before v3.4 does nothing", version: v("v3.3.9"), app: []string{"Prune=false"}, want: PruneAllowed, certain: true, note: "does nothing for pruning before Argo CD v3.4"},
		{name: "app Prune=false on v2.14.11 does nothing", version: v("v2.14.11"), app: []string{"CreateNamespace=true", "Prune=false"}, want: PruneAllowed, certain: true, note: "before Argo CD v3.4"},
		{name: "app Prune=false from v3.4.0", version: v("v3.4.0"), app: []string{"Prune=false"}, want: PruneDisabled, wantSource: PruneSourceApp, certain: true},
		{name: "app Prune=confirm on v3.6.1", version: v("v3.6.1"), app: []string{"Prune=confirm"}, want: PruneConfirm, wantSource: PruneSourceApp, certain: true},
		{name: "object overrides app", version: v("v3.6.1"), object: "Prune=true", app: []string{"Prune=false"}, want: PruneAllowed, wantSource: PruneSourceObject, certain: true, note: "overrides the app's syncOptions Prune=false"},
		{name: "object confirm overrides app false", version: v("v3.6.1"), object: "Prune=confirm", app: []string{"Prune=false"}, want: PruneConfirm, wantSource: PruneSourceObject, certain: true, note: "overrides"},
		// v3.4+ reads the first Prune= entry; earlier releases look for Prune=false anywhere.
		{name: "first entry decides from v3.4", version: v("v3.6.1"), object: "Prune=true,Prune=false", want: PruneAllowed, wantSource: PruneSourceObject, certain: true},
		{name: "any entry counts before v3.4", version: v("v3.0.23"), object: "Prune=true,Prune=false", want: PruneDisabled, wantSource: PruneSourceObject, certain: true},
		{name: "unknown version, object Prune=false", object: "Prune=false", want: PruneDisabled, wantSource: PruneSourceObject, certain: true},
		{name: "unknown version, app-level only", app: []string{"Prune=false"}, want: PruneAllowed, certain: false, note: "the version is unknown"},
		{name: "exact entries only", version: v("v2.14.11"), object: "prune=false,Prune = false", want: PruneAllowed, certain: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EffectivePrune(tt.version, tt.object, tt.app)
			if got.Value != tt.want || got.Source != tt.wantSource || got.Certain != tt.certain {
				t.Fatalf("EffectivePrune = %+v; want value %q source %q certain %v", got, tt.want, tt.wantSource, tt.certain)
			}
			if tt.note != "" && !strings.Contains(strings.Join(got.Notes, "\n"), tt.note) {
				t.Fatalf("notes %q lack %q", got.Notes, tt.note)
			}
			if tt.note == "" && len(got.Notes) > 0 {
				t.Fatalf("unexpected notes %q", got.Notes)
			}
		})
	}
}

func TestIsHook(t *testing.T) {
	tests := []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{AnnotationHook: "PreSync"}, true},
		{map[string]string{AnnotationHook: "PostSync, SyncFail"}, true},
		{map[string]string{AnnotationHook: "PreDelete"}, true},
		{map[string]string{AnnotationHook: "Skip"}, false},
		{map[string]string{AnnotationHook: "Skip,Bogus"}, false},
		{map[string]string{AnnotationHook: "Skip,PreSync"}, true},
		{map[string]string{AnnotationHook: "Bogus"}, true},
		{map[string]string{AnnotationHelmHook: "pre-install"}, true},
		{map[string]string{AnnotationHelmHook: "test"}, true},
		{map[string]string{AnnotationHelmHook: "crd-install"}, false},
		{map[string]string{AnnotationHook: "Skip", AnnotationHelmHook: "pre-install"}, false},
		{map[string]string{"helm.sh/resource-policy": "keep"}, false},
	}
	for _, tt := range tests {
		if got := IsHook(tt.annotations); got != tt.want {
			t.Errorf("IsHook(%v) = %v, want %v", tt.annotations, got, tt.want)
		}
	}
}

func TestTruncatedLabelValue(t *testing.T) {
	long := strings.Repeat("a", 62)
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"guestbook", "guestbook", true},
		{strings.Repeat("x", 63), strings.Repeat("x", 63), true},
		{strings.Repeat("x", 64), strings.Repeat("x", 63), true},
		// team-apps_<name>: cut at 63, then trailing '-', '_' and '.' go.
		{long + "-bcd", long, true},
		{long + "_.-x", long, true},
		{"-" + strings.Repeat("-", 70), "", false},
	}
	for _, tt := range tests {
		got, ok := TruncatedLabelValue(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("TruncatedLabelValue(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestVersionFromContainers(t *testing.T) {
	tests := []struct {
		name       string
		containers []Container
		want       string
	}{
		{name: "manifests", containers: []Container{{Name: "argocd-application-controller", Image: "quay.io/argoproj/argocd:v3.6.1"}}, want: "v3.6.1"},
		{name: "sidecar first", containers: []Container{
			{Name: "proxy", Image: "envoyproxy/envoy:v1.31.2"},
			{Name: "argocd-application-controller", Image: "quay.io/argoproj/argocd:v2.14.11"},
		}, want: "v2.14.11"},
		{name: "sidecar only has a version", containers: []Container{
			{Name: "log-shipper", Image: "fluent/fluent-bit:3.1.0"},
			{Name: "controller", Image: "registry.local:5000/mirror/argocd@sha256:abc", Args: []string{"/usr/local/bin/argocd-application-controller"}},
		}},
		{name: "helm chart", containers: []Container{{Name: "application-controller", Image: "ghcr.io/argoproj/argocd:v3.0.23"}}, want: "v3.0.23"},
		{name: "by repository", containers: []Container{{Name: "main", Image: "registry.local:5000/argoproj/argocd:v3.5.2"}}, want: "v3.5.2"},
		{name: "no argocd container", containers: []Container{{Name: "nginx", Image: "nginx:1.27.0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, found := VersionFromContainers(tt.containers)
			got := ""
			if found {
				got = v.String()
			}
			if got != tt.want {
				t.Fatalf("version %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEmptyInstanceIsNotTracked(t *testing.T) {
	v := Version{Major: 3, Minor: 6, Patch: 1}
	s := NewSettings(map[string]string{SettingTrackingMethod: "annotation"}, &v)
	ref := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "x"}
	own := s.Owner(nil, map[string]string{AnnotationTrackingID: ":apps/Deployment:ns/x"}, ref)
	if own.Tracked || own.Reason != ReasonEmptyInstance {
		t.Fatalf("ownership %+v: want untracked, reason %s", own, ReasonEmptyInstance)
	}
}
