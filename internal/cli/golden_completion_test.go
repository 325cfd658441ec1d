package cli

import "testing"

// Completion asks the fake for apps and their resources, as a shell would through __complete.
func TestGoldenCompletion(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "complete-detach-apps", args: []string{"__complete", "detach", ""}},
		{name: "complete-detach-resources", args: []string{"__complete", "detach", "guestbook", ""}},
		{name: "complete-scan-all-namespaces", args: []string{"__complete", "scan", "-A", ""}},
		{name: "complete-output", args: []string{"__complete", "scan", "-o", ""}},
		{name: "complete-undo-journals", args: []string{"__complete", "undo", ""}, setup: func(w *world) {
			w.mustRun(ExitOK, "detach", "guestbook", "Namespace/team-a", "--yes")
		}},
		// The script itself is cobra's: only that it is one, and its exit code.
		{name: "completion-bash", args: []string{"completion", "bash"}, keep: firstLine},
		// An unknown shell gets cobra's help of completion, and exit 0.
		{name: "completion-bad-shell", args: []string{"completion", "tcsh"}, keep: firstLine},
	})
}

// watch runs until interrupted against a real API server (leader election, informers, metrics):
// it is tested in the lab (test/e2e). Here only what it decides before connecting: its flag
// errors, exit 2.
func TestGoldenWatch(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "watch-args", args: []string{"watch", "extra"}},
		{name: "watch-via-argocd", args: []string{"watch", "--via", "argocd"}},
		{name: "watch-bad-flag", args: []string{"watch", "--leader-elect=maybe"}},
		{name: "watch-bad-duration", args: []string{"watch", "--resync-period", "often"}},
		{name: "watch-no-kubeconfig", args: []string{"watch", "--leader-elect=false"}},
	})
}
