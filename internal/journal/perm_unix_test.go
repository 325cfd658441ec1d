//go:build unix

package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestPermissionsIgnoreUmask(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o077} {
		t.Run("umask-"+fmtMode(os.FileMode(umask)), func(t *testing.T) {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)

			dir := filepath.Join(t.TempDir(), "state", "unprune", "journal")
			s := testStore(t, dir, t0)
			j := validJournal()
			path, err := s.Create(j)
			if err != nil {
				t.Fatal(err)
			}
			checkMode(t, dir, DirMode)
			checkMode(t, path, FileMode)

			// Save replaces the file; a file someone loosened gets 0600 back.
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := j.MarkApplied(0, "2", t0); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(path, j); err != nil {
				t.Fatal(err)
			}
			checkMode(t, path, FileMode)
		})
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %s, want %s", path, fmtMode(got), fmtMode(want))
	}
}

func fmtMode(m os.FileMode) string { return fmt.Sprintf("%04o", uint32(m)) }
