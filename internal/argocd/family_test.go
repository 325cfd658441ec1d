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
