package cli

import (
	"strings"
	"testing"
)

// TestWhatArgoCDsAPICannotDo: through argocd-server's API (--via argocd) each verb refuses, before
// it connects or changes anything, what that backend cannot do (session.Capabilities), with the
// words that say what to do instead.
func TestWhatArgoCDsAPICannotDo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"detach", "guestbook", "--all", "--dry-run=server"}, "--dry-run=server: Argo CD's API cannot send a patch as a dry run"},
		{[]string{"detach", "guestbook", "--all", "--scrub-last-applied"}, "--scrub-last-applied needs the object as the cluster stores it"},
		{[]string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--dry-run=server"}, "--dry-run=server: Argo CD's API cannot send a patch as a dry run"},
		{[]string{"rename", "guestbook", "shop"}, "rename needs to create, patch and delete Application objects with preconditions"},
		{[]string{"guard", "protect", "Namespace/team-a"}, "guard protect"},
		{[]string{"guard", "policy"}, "guard policy"},
		{[]string{"watch"}, "unprune watch reads Applications through the Kubernetes API"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			w := newWorld(t)
			r := runIn(t, w, NameUnprune, "", append(tc.args, "--via", "argocd", "--argocd-server", "127.0.0.1:1")...)
			if r.code != ExitFailure || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d saying %q", r.code, r.stderr, ExitFailure, tc.want)
			}
		})
	}
}
