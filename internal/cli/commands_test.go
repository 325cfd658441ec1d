package cli

import "testing"

// TestGolden runs every command in process against the incident's world, each case from a fresh
// world, and compares what it prints and its exit code with testdata/golden.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"scan", []string{"scan"}},
		{"scan-json", []string{"scan", "-o", "json"}},
		{"detach-preview", []string{"detach", "guestbook", "--all"}},
		{"detach-yes", []string{"detach", "guestbook", "--all", "--yes"}},
		{"audit", []string{"audit"}},
		{"version", []string{"version", "-o", "json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			golden(t, w, tc.name, w.run(tc.args...), tc.args...)
		})
	}
}
