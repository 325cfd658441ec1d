package argocd

import "testing"

// TestIsDeleteHookFinalizer: the finalizers with which Argo CD runs delete hooks, plain or with a
// stage, and nothing else.
func TestIsDeleteHookFinalizer(t *testing.T) {
	for f, want := range map[string]bool{
		FinalizerPostDelete: true, FinalizerPostDelete + "/cleanup": true,
		FinalizerPreDelete: true, FinalizerPreDelete + "/cleanup": true,
		FinalizerResources: false, FinalizerResourcesForeground: false, "example.com/other": false,
	} {
		if got := IsDeleteHookFinalizer(f); got != want {
			t.Errorf("%s: %v, want %v", f, got, want)
		}
	}
}

// TestSkipsReconcile: the controller parses the annotation with strconv.ParseBool and skips the
// app only when it parses as true.
func TestSkipsReconcile(t *testing.T) {
	for _, tc := range []struct {
		value string
		set   bool
		want  bool
	}{{"true", true, true}, {"True", true, true}, {"1", true, true}, {"false", true, false}, {"yes", true, false}, {"", true, false}, {"", false, false}} {
		if got := SkipsReconcile(tc.value, tc.set); got != tc.want {
			t.Errorf("%q (set %v): %v, want %v", tc.value, tc.set, got, tc.want)
		}
	}
}

// TestSameTargetHydrator: a source-hydrator app's source is its dry source and its hydrated branch,
// so two hydrator apps of the same ones are a rename, and an ordinary app never matches one.
func TestSameTargetHydrator(t *testing.T) {
	app := func(name string, spec map[string]any) Whole {
		spec["destination"] = map[string]any{"server": InClusterServer, "namespace": "shop"}
		return ParseWhole(map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": name}, "spec": spec})
	}
	hyd := func(path string) map[string]any {
		return map[string]any{"sourceHydrator": map[string]any{
			"drySource":  map[string]any{"repoURL": "https://git.example/dry.git", "path": "chart", "targetRevision": "main"},
			"syncSource": map[string]any{"targetBranch": "environments/prod", "path": path}}}
	}
	if !app("shop", hyd("shop")).SameTarget(app("shop-v2", hyd("shop"))) {
		t.Error("the same dry source and hydrated path: a rename")
	}
	if app("shop", hyd("shop")).SameTarget(app("shop-v2", hyd("shop-v2"))) {
		t.Error("another hydrated path is another target")
	}
	plain := app("shop-v2", map[string]any{"source": map[string]any{"repoURL": "https://git.example/dry.git", "path": "chart", "targetRevision": "main"}})
	if app("shop", hyd("shop")).SameTarget(plain) || plain.SameTarget(app("shop", hyd("shop"))) {
		t.Error("an ordinary app is not a hydrator app's rename")
	}
}
