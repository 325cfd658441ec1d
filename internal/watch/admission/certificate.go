package admission

import (
	"crypto/tls"
	"os"
	"sync"
	"time"
)

// Certificate serves a key pair from files, read again when either changes: cert-manager (or any
// rotation) writes new files into the mounted Secret, and the next handshake uses them without a
// restart.
type Certificate struct {
	CertFile, KeyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime [2]time.Time
}

// Get is tls.Config.GetCertificate.
func (c *Certificate) Get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var mod [2]time.Time
	for i, f := range []string{c.CertFile, c.KeyFile} {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		mod[i] = st.ModTime()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert != nil && mod == c.modTime {
		return c.cert, nil
	}
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		if c.cert != nil {
			// A rotation half written: keep serving the pair that worked.
			return c.cert, nil
		}
		return nil, err
	}
	c.cert, c.modTime = &pair, mod
	return c.cert, nil
}
