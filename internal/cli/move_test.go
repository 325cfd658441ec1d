package cli

import (
	"strings"
	"testing"
)

// Flag and argument errors of move, rename and check --also are found before anything connects.
func TestMoveRenameAndCheckAlsoFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"move", "app", "--all"}, "--to: name the Application"},
		{[]string{"move", "--to", "b"}, "name the APP the resources are in"},
		{[]string{"move", "a", "--to", "b"}, "name the resources to move"},
		{[]string{"move", "a", "ConfigMap/x/y", "--all", "--to", "b"}, "name resources or use --all, not both"},
		{[]string{"move", "a", "team-b", "--to", "b"}, `resource "team-b": use KIND[.GROUP]/NAME`},
		{[]string{"move", "a", "--all", "--to", "/b"}, `APP "/b": use NAME or NAMESPACE/NAME`},
		{[]string{"move", "a", "--all", "--to", "b", "--dry-run=none"}, "add --yes"},
		{[]string{"move", "a", "--all", "--to", "b", "--timeout=0"}, "--timeout must be positive"},
		{[]string{"rename", "a"}, "name the APP and its NEW name"},
		{[]string{"rename", "a", "b", "c"}, "name the APP and its NEW name"},
		{[]string{"rename", "a", "Shop"}, "use lowercase letters"},
		{[]string{"rename", "a", "ns/b"}, "use lowercase letters"},
		{[]string{"rename", "a", "-b"}, "unknown shorthand flag"},
		{[]string{"rename", "a", "b", "--dry-run=none"}, "add --yes"},
		{[]string{"rename", "a", "b", "--via", "argocd", "--argocd-server", "localhost:1"}, "use your kubeconfig"},
		{[]string{"check", "a", "--manifests", "x", "--also", "b"}, "--also b: use APP=PATH"},
		{[]string{"check", "a", "--manifests", "-", "--also", "b=-"}, "only one set of manifests can come from stdin"},
		{[]string{"check", "applicationset/s", "--manifests", "x", "--also", "b=y"}, "--also goes with an Application"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := run(t, NameUnprune, tt.args...)
			if code != ExitFailure || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, ExitFailure, tt.want)
			}
			if strings.Contains(stderr, "connect") || strings.Contains(stderr, "cannot reach") {
				t.Fatalf("validation connected to a cluster: %s", stderr)
			}
		})
	}
}
