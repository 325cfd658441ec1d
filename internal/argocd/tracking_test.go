package argocd

import "testing"

func TestParseTrackingID(t *testing.T) {
	tests := []struct {
		in   string
		want TrackingID
		ok   bool
	}{
		{in: "guestbook:/Service:guestbook/ui", want: TrackingID{Instance: "guestbook", Kind: "Service", Namespace: "guestbook", Name: "ui"}, ok: true},
		{in: "guestbook:apps/Deployment:guestbook/ui", want: TrackingID{Instance: "guestbook", Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}, ok: true},
		{in: "team_guestbook:apps/Deployment:guestbook/ui", want: TrackingID{Instance: "team_guestbook", Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}, ok: true},
		{in: "feas:/Namespace:default/kube-system", want: TrackingID{Instance: "feas", Kind: "Namespace", Namespace: "default", Name: "kube-system"}, ok: true},
		{in: "x:apiextensions.k8s.io/CustomResourceDefinition:/foos.example.com", want: TrackingID{Instance: "x", Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "foos.example.com"}, ok: true},
		// Argo CD splits on the first two colons only, so RBAC names with colons still parse.
		{in: "x:rbac.authorization.k8s.io/ClusterRole:/system:aggregate-to-admin", want: TrackingID{Instance: "x", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:aggregate-to-admin"}, ok: true},
		{in: ":/:/", want: TrackingID{}, ok: true},
		{in: ""},
		{in: "guestbook"},
		{in: "guestbook:/Service"},
		{in: "guestbook:Service:guestbook/ui"},
		{in: "guestbook:a/b/Service:guestbook/ui"},
		{in: "guestbook:/Service:ui"},
		{in: "guestbook:/Service:guestbook/ui/extra"},
		{in: "app.kubernetes.io/instance"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseTrackingID(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("ParseTrackingID(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
			if ok && got.String() != tt.in {
				t.Fatalf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func FuzzParseTrackingID(f *testing.F) {
	for _, seed := range []string{
		"guestbook:/Service:guestbook/ui",
		"x:apiextensions.k8s.io/CustomResourceDefinition:/foos.example.com",
		"x:rbac.authorization.k8s.io/ClusterRole:/system:aggregate-to-admin",
		"a:b:c",
		"::/",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		id, ok := ParseTrackingID(in)
		if !ok {
			if id != (TrackingID{}) {
				t.Fatalf("ParseTrackingID(%q) failed but returned %+v", in, id)
			}
			return
		}
		formatted := id.String()
		if formatted != in {
			t.Fatalf("ParseTrackingID(%q).String() = %q", in, formatted)
		}
		again, ok := ParseTrackingID(formatted)
		if !ok || again != id {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", in, again, ok, id)
		}
	})
}

func TestInstanceName(t *testing.T) {
	tests := []struct {
		appNamespace, appName, controllerNamespace, want string
	}{
		{"argocd", "guestbook", "argocd", "guestbook"},
		{"team-a", "guestbook", "argocd", "team-a_guestbook"},
		{"", "guestbook", "argocd", "guestbook"},
		{"openshift-gitops", "guestbook", "openshift-gitops", "guestbook"},
	}
	for _, tt := range tests {
		if got := InstanceName(tt.appNamespace, tt.appName, tt.controllerNamespace); got != tt.want {
			t.Errorf("InstanceName(%q, %q, %q) = %q, want %q", tt.appNamespace, tt.appName, tt.controllerNamespace, got, tt.want)
		}
	}
}

func TestRefersTo(t *testing.T) {
	deployment := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	namespace := ObjectRef{Kind: "Namespace", Name: "kube-system", ClusterScoped: true}
	tests := []struct {
		name   string
		id     string
		object ObjectRef
		want   bool
	}{
		{name: "same object", id: "app:apps/Deployment:guestbook/ui", object: deployment, want: true},
		{name: "other name", id: "app:apps/Deployment:guestbook/api", object: deployment},
		{name: "other namespace", id: "app:apps/Deployment:prod/ui", object: deployment},
		{name: "other kind", id: "app:apps/StatefulSet:guestbook/ui", object: deployment},
		{name: "other group", id: "app:extensions/Deployment:guestbook/ui", object: deployment},
		{name: "instance is not compared", id: "someone-else:apps/Deployment:guestbook/ui", object: deployment, want: true},
		{name: "cluster-scoped with destination namespace", id: "feas:/Namespace:default/kube-system", object: namespace, want: true},
		{name: "cluster-scoped with empty slot", id: "feas:/Namespace:/kube-system", object: namespace, want: true},
		{name: "cluster-scoped other name", id: "feas:/Namespace:default/default", object: namespace},
		{name: "empty namespace counts as cluster-scoped", id: "x:/Namespace:whatever/kube-system", object: ObjectRef{Kind: "Namespace", Name: "kube-system"}, want: true},
		{name: "namespaced object needs empty-slot match", id: "app:apps/Deployment:/ui", object: deployment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := ParseTrackingID(tt.id)
			if !ok {
				t.Fatalf("ParseTrackingID(%q) failed", tt.id)
			}
			if got := id.RefersTo(tt.object); got != tt.want {
				t.Fatalf("%q.RefersTo(%+v) = %v, want %v", tt.id, tt.object, got, tt.want)
			}
		})
	}
}

// TestInstallationIDRuleBoundaries checks the rule on both sides of every boundary of every release
// line (ARGOCD.md, corrected from each release's util/argo/resource_tracking.go).
func TestInstallationIDRuleBoundaries(t *testing.T) {
	tests := []struct {
		version string
		want    installationIDRule
	}{
		{"v2.10.20", installationIDIgnored},
		{"v2.11.0", installationIDIgnored},
		{"v2.11.11", installationIDIgnored},
		{"v2.11.12", installationIDMustEqual}, // 2.11 line: check with the bug from .12
		{"v2.11.14", installationIDMustEqual},
		{"v2.12.0", installationIDIgnored},
		{"v2.12.6", installationIDIgnored},
		{"v2.12.7", installationIDIgnored}, // writes the annotation, never reads it
		{"v2.12.11", installationIDIgnored},
		{"v2.12.12", installationIDMustEqual},
		{"v2.12.13", installationIDMustEqual},
		{"v2.13.0", installationIDMustEqual},
		{"v2.14.11", installationIDMustEqual},
		{"v3.0.0", installationIDMustEqual},
		{"v3.0.23", installationIDMustEqual},
		{"v3.5.0", installationIDMustEqual},
		{"v3.5.9", installationIDMustEqual},
		{"v3.6.0", installationIDMustEqualWhenConfigured},
		{"v3.6.1", installationIDMustEqualWhenConfigured},
		{"v3.7.0", installationIDMustEqualWhenConfigured},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := installationIDRuleOf(v); got != tt.want {
			t.Errorf("%s: rule %q, want %q", tt.version, got, tt.want)
		}
	}
}

func TestInstallationIDMatches(t *testing.T) {
	tests := []struct {
		name                 string
		version              *Version
		configured, onObject string
		wantMatches          bool
		wantCertain          bool
	}{
		{name: "v2.12.11 writes but never checks", version: versionPtr(2, 12, 11), onObject: "other", wantMatches: true, wantCertain: true},
		{name: "v2.12.11 ignores configured mismatch", version: versionPtr(2, 12, 11), configured: "prod", onObject: "other", wantMatches: true, wantCertain: true},
		{name: "v2.11.12 buggy: unconfigured, object carries ID", version: versionPtr(2, 11, 12), onObject: "other", wantCertain: true},
		{name: "v2.12.12 buggy: unconfigured, object carries ID", version: versionPtr(2, 12, 12), onObject: "other", wantCertain: true},
		{name: "v2.13.0 buggy", version: versionPtr(2, 13, 0), onObject: "other", wantCertain: true},
		{name: "v2.14.11 buggy: unconfigured, object carries ID", version: versionPtr(2, 14, 11), onObject: "other", wantCertain: true},
		{name: "v3.0.23 buggy: unconfigured, object carries ID", version: versionPtr(3, 0, 23), onObject: "other", wantCertain: true},
		{name: "v3.5.9 buggy", version: versionPtr(3, 5, 9), onObject: "other", wantCertain: true},
		{name: "v2.14.11 unconfigured, no ID", version: versionPtr(2, 14, 11), wantMatches: true, wantCertain: true},
		{name: "v3.6.0 fixed: unconfigured, object carries ID", version: versionPtr(3, 6, 0), onObject: "other", wantMatches: true, wantCertain: true},
		{name: "v3.6.1 fixed: unconfigured, object carries ID", version: versionPtr(3, 6, 1), onObject: "other", wantMatches: true, wantCertain: true},
		{name: "v2.14.11 configured equal", version: versionPtr(2, 14, 11), configured: "prod", onObject: "prod", wantMatches: true, wantCertain: true},
		{name: "v2.14.11 configured mismatch", version: versionPtr(2, 14, 11), configured: "prod", onObject: "other", wantCertain: true},
		{name: "v2.14.11 configured, object has none", version: versionPtr(2, 14, 11), configured: "prod", wantCertain: true},
		{name: "v3.6.1 configured mismatch", version: versionPtr(3, 6, 1), configured: "prod", onObject: "other", wantCertain: true},
		{name: "v3.6.1 configured, object has none", version: versionPtr(3, 6, 1), configured: "prod", wantCertain: true},
		{name: "unknown version, nothing anywhere", wantMatches: true, wantCertain: true},
		{name: "unknown version, equal", configured: "prod", onObject: "prod", wantMatches: true, wantCertain: true},
		{name: "unknown version, unconfigured, object carries ID", onObject: "other", wantMatches: true},
		{name: "unknown version, configured mismatch", configured: "prod", onObject: "other", wantMatches: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			matches, certain := InstallationIDMatches(tt.version, tt.configured, tt.onObject)
			if matches != tt.wantMatches || certain != tt.wantCertain {
				t.Fatalf("InstallationIDMatches() = %v, %v; want %v, %v", matches, certain, tt.wantMatches, tt.wantCertain)
			}
		})
	}
}

func TestObjectRefString(t *testing.T) {
	tests := []struct {
		ref  ObjectRef
		want string
	}{
		{ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}, "Deployment.apps/ui in namespace guestbook"},
		{ObjectRef{Kind: "Service", Namespace: "guestbook", Name: "ui"}, "Service/ui in namespace guestbook"},
		{ObjectRef{Kind: "Namespace", Name: "kube-system", ClusterScoped: true}, "Namespace/kube-system"},
	}
	for _, tt := range tests {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
