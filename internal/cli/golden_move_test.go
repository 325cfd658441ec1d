package cli

import (
	"testing"
	"time"
)

// Move cases run in a world where Application "teams" declares Namespace/team-b, which guestbook
// still tracks and lists as requiring pruning (the commit moved the manifest).
func TestGoldenMove(t *testing.T) {
	teams := func(w *world) { w.addMoveTarget() }
	runGoldens(t, []goldenCase{
		// Exit 1: previews.
		{name: "move-preview", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams"}, setup: teams},
		{name: "move-all-json", args: []string{"move", "guestbook", "--all", "--to", "teams", "-o", "json"}, setup: teams},
		// Exit 0: prepared, then moved and shown by both apps.
		{name: "move-prepare", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes"}, setup: teams},
		{name: "move-yes", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--yes"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
		}},
		// Exit 5: moved, but Argo CD's controller stops once the marks are off and never shows it.
		// -o name: both apps are waited for at once, so the readings of the stepping clock each
		// one gets, and the elapsed times the table prints, vary from run to run.
		{name: "move-not-synced", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--yes", "--timeout", "200ms", "-o", "name"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
			w.stopAfterPatches(2)
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 3: Argo CD's controller is stopped, so it never shows that teams declares team-b:
		// nothing is handed over.
		{name: "move-not-compared", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--yes", "--timeout", "200ms"}, setup: func(w *world) {
			w.addMoveTarget()
			w.argo.Stop()
			w.stepClock(50 * time.Millisecond)
		}},
		// Exit 0: teams' automated sync took team-b over after the commit, before the move ran:
		// guestbook lists it no more; the move takes off exactly the marks the prepare added.
		{name: "move-taken-over", args: []string{"move", "guestbook", "Namespace/team-b", "--to", "teams", "--yes"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
			w.takeOver("guestbook", "teams", "team-b")
		}},
		{name: "move-taken-over-all", args: []string{"move", "guestbook", "--all", "--to", "teams", "--yes"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
			w.takeOver("guestbook", "teams", "team-b")
		}},
		// Exit 3: the object's manifest sets sync-options, so Argo CD would write the marks over.
		{name: "move-prepare-reverted", args: []string{"move", "guestbook", "Deployment.apps/guestbook/guestbook-ui", "--to", "teams", "--prepare", "--yes"}, setup: func(w *world) {
			w.addMoveTarget()
			w.manifestSets("guestbook-ui", "argocd.argoproj.io/sync-options", "ServerSideApply=true")
		}},
		{name: "move-nothing", args: []string{"move", "platform", "--all", "--to", "teams"}, setup: teams},
		// Exit 3: teams does not declare team-a (it would prune it), and guestbook still declares
		// its Deployment: nothing moves.
		{name: "move-refused-undeclared", args: []string{"move", "guestbook", "Namespace/team-a", "--to", "teams", "--yes"}, setup: teams},
		{name: "move-refused-still-declared", args: []string{"move", "guestbook", "Deployment.apps/guestbook/guestbook-ui", "Namespace/team-b", "--to", "teams", "--yes"}, setup: teams},
		// Exit 2: bad input; apps of different clusters are a usage error of the engine's.
		{name: "move-other-cluster", args: []string{"move", "apps/shop", "ConfigMap/shop/legacy", "--to", "teams", "--yes"}, setup: teams},
		{name: "move-no-to", args: []string{"move", "guestbook", "--all"}},
		{name: "move-no-resources", args: []string{"move", "guestbook", "--to", "teams"}},
		{name: "move-missing-target", args: []string{"move", "guestbook", "--all", "--to", "nope"}},
	})
}
