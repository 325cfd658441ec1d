package cmdtest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles the unprune binary into a directory of the test and returns its path, for tests
// that must signal or kill the process itself.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "unprune")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/unprune/unprune/cmd/unprune").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
