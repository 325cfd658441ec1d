package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"

	"github.com/unprune/unprune/internal/cluster"
)

func TestGoldenRename(t *testing.T) {
	compared := func(w *world) { w.compareCreated("platform") }
	runGoldens(t, []goldenCase{
		// Exit 1: previews of every step.
		{name: "rename-preview", args: []string{"rename", "platform", "platform-v2"}},
		{name: "rename-preview-json", args: []string{"rename", "platform", "platform-v2", "-o", "json"}},
		{name: "rename-dry-run-server", args: []string{"rename", "platform", "platform-v2", "--dry-run=server"}},
		// Exit 0: renamed, and Argo CD shows the new app Synced on every resource.
		{name: "rename-yes", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: compared},
		// Exit 5: renamed, but Argo CD's controller stops once the new app has its policy back, and
		// never shows it Synced.
		{name: "rename-not-synced", args: []string{"rename", "platform", "platform-v2", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.argo.AfterWrite = func(write string) {
				if strings.HasPrefix(write, "patch argocd/platform-v2 ") {
					w.argo.Stop()
				}
			}
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 3: Argo CD's controller is stopped and never compares the new app: the rename stops
		// at its first check, and the new app is taken away again.
		{name: "rename-not-compared", args: []string{"rename", "platform", "platform-v2", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.argo.Stop()
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 3: the new app renders other objects (its manifests depend on the app's name): the
		// rename stops before the old app is touched, names the difference and takes the new app away.
		{name: "rename-renders-other-objects", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.argo.OnCreate = func(app *argocd.Application) {
				app.Resources = []argocd.Resource{{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "platform-v2-settings", Status: "OutOfSync", Health: "Missing"}}
				app.Refresh = "normal"
			}
		}},
		// Exit 4: the tracking rewrite fails after the new app was created and the old one switched off.
		{name: "rename-partial", args: []string{"rename", "platform", "platform-v2", "--yes"}, setup: func(w *world) {
			w.compareCreated("platform")
			w.home.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
				return false, errors.New("admission webhook \"deny.example.com\" denied the request")
			}
		}},
		// Exit 3: refused, nothing changed.
		{name: "rename-refused-out-of-sync", args: []string{"rename", "guestbook", "guestbook-v2", "--yes"}},
		{name: "rename-refused-exists", args: []string{"rename", "platform", "guestbook", "--yes"}},
		// Exit 2: bad input.
		{name: "rename-bad-name", args: []string{"rename", "platform", "Platform"}},
		// Judged before connecting: the kubeconfig is never read.
		{name: "rename-same-name", args: []string{"rename", "platform", "platform", "--kubeconfig", "/nonexistent/kubeconfig"}},
		{name: "rename-one-arg", args: []string{"rename", "platform"}},
		{name: "rename-missing-app", args: []string{"rename", "nope", "new"}},
	})
}
