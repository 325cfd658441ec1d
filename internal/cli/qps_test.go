package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/session/sessiontest"
	"github.com/unprune/unprune/internal/watch"
)

// The one-off commands set no client-side rate limit unless --qps asks for one; the watch, which
// runs next to Argo CD for ever, keeps Argo CD's controller's 50/100.
func TestClientRateLimits(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{[]string{"scan"}, -1, 2000},
		{[]string{"--qps", "200", "--burst", "400", "scan"}, 200, 400},
		{[]string{"detach", "guestbook", "--all"}, -1, 2000},
		{[]string{"watch"}, watch.DefaultQPS, watch.DefaultBurst},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got *session.Config
			streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
			g := newFactory(NameUnprune, streams)
			g.Now = w.now
			factory := sessiontest.Factory(w.argo, w.env, w.rand)
			g.NewSession = func(cfg session.Config) session.Session {
				got = &cfg
				return factory(cfg)
			}
			full := append([]string{"--kubeconfig", filepath.Join(w.dir, "no-kubeconfig"), "--journal-dir", w.journalDir()}, tc.args...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			execute(ctx, NameUnprune, newRootCommand(NameUnprune, g), full, streams)
			if got == nil {
				t.Fatal("no session was made")
			}
			if got.QPS != tc.qps || got.Burst != tc.burst {
				t.Fatalf("qps %v burst %d, want %v %d", got.QPS, got.Burst, tc.qps, tc.burst)
			}
		})
	}
}
