//go:build unix

package journal

import (
	"fmt"
	"os"
	"syscall"
)

// checkPrivate refuses a journal file (or its directory) that someone other than the user could
// have written, as ssh refuses loose key files: owned by the user or root, and not writable by the
// group or others. A journal tells undo what to write on a cluster; one planted or edited by
// another user must not be acted on.
func checkPrivate(path string, dir bool) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	what := "journal"
	if dir {
		what = "journal directory"
	}
	mode := info.Mode().Perm()
	if mode&0o022 != 0 {
		return fmt.Errorf("%s %s is %w (mode %04o): refusing to use it; check who changed it, then run chmod go-w %s",
			what, path, ErrNotPrivate, mode, path)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 {
			return fmt.Errorf("%s %s belongs to another user (uid %d, you are %d): refusing to use it", what, path, st.Uid, uid)
		}
	}
	return nil
}
