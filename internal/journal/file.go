package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// File and directory modes, applied explicitly (not left to the umask).
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// writeAtomic writes data to a temp file next to path, fsyncs it, moves it to path (replacing an
// existing file only if replace) and fsyncs the directory. On failure the temp file is removed and
// path is untouched.
func writeAtomic(path string, data []byte, replace bool, write func(*os.File, []byte) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write journal %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = os.Remove(tmp)
			err = fmt.Errorf("write journal %s: %w", path, err)
		}
	}()
	if err = f.Chmod(FileMode); err != nil {
		return err
	}
	if write == nil {
		write = func(f *os.File, data []byte) error { _, err := f.Write(data); return err }
	}
	if err = write(f, data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = linkNoReplace(tmp, path)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

// linkNoReplace moves tmp to path unless path exists. A hard link fails atomically if path exists;
// where links are unsupported fall back to a check-then-rename.
func linkNoReplace(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		_ = os.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w (refusing to overwrite)", fs.ErrExist)
	}
	if _, serr := os.Lstat(path); serr == nil {
		return fmt.Errorf("%w (refusing to overwrite)", fs.ErrExist)
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be fsynced there; rename is durable enough
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// ensureDir creates the journal directory (0700) if needed; an existing one must be private.
func ensureDir(dir string) error {
	if dir == "" {
		return errors.New("journal directory is not set")
	}
	if _, err := os.Stat(dir); err == nil {
		return checkPrivate(dir, true)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	return nil
}

// ErrNotPrivate is returned (wrapped) for a journal or directory others could have written.
var ErrNotPrivate = errors.New("writable by other users")
