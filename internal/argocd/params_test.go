package argocd

import (
	"fmt"
	"testing"
)

func TestAppNamespaces(t *testing.T) {
	a := AppNamespaces{ArgoCD: "argocd", Patterns: SplitList(" team-a , ,team-*,/^ops-[0-9]+$/,//")}
	if fmt.Sprint(a.Patterns) != "[team-a team-* /^ops-[0-9]+$/ //]" {
		t.Fatalf("patterns %q", a.Patterns)
	}
	for ns, want := range map[string]bool{"argocd": true, "team-a": true, "team-b": true, "ops-12": true, "ops-x": false, "": false} {
		if got, known := a.Enabled(ns); got != want || !known {
			t.Errorf("Enabled(%q) = %t, %t; want %t, true", ns, got, known, want)
		}
	}
	// A lookbehind compiles in Argo CD's regexp2, not in Go: nothing it does not match is known.
	lookbehind := AppNamespaces{ArgoCD: "argocd", Patterns: []string{"/(?<=x)y/"}}
	if got, known := lookbehind.Enabled("team-a"); got || known {
		t.Errorf("Enabled with a regexp2-only pattern = %t, %t; want false, false", got, known)
	}
	if got, known := lookbehind.Enabled("argocd"); !got || !known {
		t.Errorf("Argo CD's own namespace: %t, %t", got, known)
	}
}
