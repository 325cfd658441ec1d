package extension

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// tokenSource is the secret argocd-server adds in HeaderToken. Read from a file, it follows the
// file: the kubelet updates a mounted Secret in place (an atomic swap of the directory's ..data
// link) when the Secret changes, so a rotated token is accepted, and the old one refused, without
// restarting the backend. Each request compares the file's identity, size and modification time
// with those of the last read, and reads it again when they differ.
type tokenSource struct {
	mu    sync.Mutex
	value string
	file  string
	seen  os.FileInfo
}

// newToken is the token of value, or of file when file is set.
func newToken(value, file string) (*tokenSource, error) {
	t := &tokenSource{value: strings.TrimSpace(value), file: file}
	if file != "" {
		if err := t.reload(); err != nil {
			return nil, err
		}
	}
	if t.value == "" {
		return nil, errors.New("no token: argocd-server must send one (extension.config.unprune headers), and the backend must require it")
	}
	return t, nil
}

// reload reads the file; an empty or unreadable file keeps the value read before (a Secret being
// rewritten is never a moment to accept anything else).
func (t *tokenSource) reload() error {
	info, err := os.Stat(t.file)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	b, err := os.ReadFile(t.file)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return fmt.Errorf("token file %s is empty", t.file)
	}
	t.value, t.seen = v, info
	return nil
}

// changed reports whether the file is not the one last read.
func (t *tokenSource) changed() bool {
	info, err := os.Stat(t.file)
	if err != nil {
		return false
	}
	return !os.SameFile(info, t.seen) || info.Size() != t.seen.Size() || !info.ModTime().Equal(t.seen.ModTime())
}

// matches reports whether got is the token, in constant time.
func (t *tokenSource) matches(got string) (bool, error) {
	if got == "" {
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var err error
	if t.file != "" && t.changed() {
		err = t.reload()
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(t.value)) == 1, err
}
