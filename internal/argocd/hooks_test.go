package argocd

import "testing"

// TestDeleteHookType: the hooks Argo CD runs when their app is deleted, by either annotation, as
// one entry among others too.
func TestDeleteHookType(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{map[string]string{AnnotationHook: "PostDelete"}, HookPostDelete},
		{map[string]string{AnnotationHook: "PreSync, PreDelete"}, HookPreDelete},
		{map[string]string{AnnotationHelmHook: "post-delete"}, HookPostDelete},
		{map[string]string{AnnotationHelmHook: "pre-install,pre-delete"}, HookPreDelete},
		{map[string]string{AnnotationHook: "PostSync"}, ""},
		{map[string]string{AnnotationHook: "postdelete"}, ""},
		{nil, ""},
	} {
		if got := DeleteHookType(tc.annotations); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.annotations, got, tc.want)
		}
	}
}
