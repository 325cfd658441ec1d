package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cluster"
)

func TestGoldenDetach(t *testing.T) {
	runGoldens(t, []goldenCase{
		// Exit 1: a preview with changes to make.
		{name: "detach-preview", args: []string{"detach", "guestbook", "--all"}},
		{name: "detach-preview-json", args: []string{"detach", "guestbook", "--all", "-o", "json"}},
		{name: "detach-dry-run-server", args: []string{"detach", "guestbook", "Namespace/team-a", "--dry-run=server"}},
		{name: "detach-selected-no-headers", args: []string{"detach", "-A", "--all", "--no-headers"}},
		// Exit 0: done, and Argo CD shows the resources released.
		{name: "detach-yes", args: []string{"detach", "guestbook", "--all", "--yes"}},
		{name: "detach-yes-yaml", args: []string{"detach", "guestbook", "Namespace/team-a", "--yes", "-o", "yaml"}},
		{name: "detach-keep", args: []string{"detach", "guestbook", "Namespace/team-a", "--strategy", "keep", "--yes"}},
		// ledger's Namespace requires pruning in guestbook too: keeping ledger alone keeps nothing.
		{name: "detach-keep-in-pruned-namespace", args: []string{"detach", "guestbook", "ConfigMap/team-a/ledger", "--strategy", "keep", "--yes"},
			setup: func(w *world) { w.addGuardedInTeamA() }},
		{name: "detach-keep-with-its-namespace", args: []string{"detach", "guestbook", "ConfigMap/team-a/ledger", "Namespace/team-a", "--strategy", "keep"},
			setup: func(w *world) { w.addGuardedInTeamA() }},
		{name: "detach-remote-name", args: []string{"detach", "apps/shop", "--all", "--yes", "-o", "name"}},
		{name: "detach-nothing", args: []string{"detach", "platform", "--all"}},
		{name: "detach-again", args: []string{"detach", "guestbook", "--all", "--yes"}, setup: func(w *world) {
			w.mustRun(ExitOK, "detach", "guestbook", "--all", "--yes")
		}},
		// Exit 3: a safety rule refuses, nothing changes: the ConfigMap is platform's.
		{name: "detach-refused-other-app", args: []string{"detach", "guestbook", "ConfigMap/platform/settings", "--force", "--yes"}},
		{name: "detach-all-or-nothing", args: []string{"detach", "guestbook", "Namespace/team-a", "ConfigMap/platform/settings", "--force", "--yes", "--all-or-nothing"}},
		// Exit 4: partly done: a refusal next to an applied object, or a patch failing.
		{name: "detach-partial-refused", args: []string{"detach", "guestbook", "Namespace/team-a", "ConfigMap/platform/settings", "--force", "--yes"}},
		{name: "detach-partial-failed", args: []string{"detach", "guestbook", "--all", "--yes", "--workers", "1"}, setup: func(w *world) {
			w.home.BeforePatch = func(_ int, ref cluster.Ref, _ *cluster.Object) (bool, error) {
				if ref.Name == "team-b" {
					return false, errors.New("admission webhook \"deny.example.com\" denied the request")
				}
				return false, nil
			}
		}},
		// Exit 5: applied, but Argo CD's controller is stopped and never shows the release.
		{name: "detach-not-synced", args: []string{"detach", "guestbook", "Namespace/team-a", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.argo.Stop()
			w.stepClock(50 * time.Millisecond)
		}},
		// Run as a plugin, the command lines it recommends are the plugin's: krew installs no unprune.
		{name: "detach-yes-kubectl-plugin", binary: NameKubectlPlugin, args: []string{"detach", "guestbook", "--all", "--yes"}},
		{name: "detach-help-kubectl-plugin", binary: NameKubectlPlugin, args: []string{"detach", "--help"}},
		// Exit 2: bad input.
		{name: "detach-no-args", args: []string{"detach"}},
		{name: "detach-no-resources", args: []string{"detach", "guestbook"}},
		{name: "detach-resource-and-all", args: []string{"detach", "guestbook", "Namespace/team-a", "--all"}},
		{name: "detach-selector-without-all", args: []string{"detach", "-A"}},
		{name: "detach-bad-strategy", args: []string{"detach", "guestbook", "--all", "--strategy", "delete"}},
		{name: "detach-dry-run-none-without-yes", args: []string{"detach", "guestbook", "--all", "--dry-run=none"}},
		{name: "detach-bad-resource", args: []string{"detach", "guestbook", "team-a"}},
		{name: "detach-missing-app", args: []string{"detach", "nope", "--all"}},
	})
}
