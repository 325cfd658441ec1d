package cli

import (
	"testing"

	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
)

func TestGoldenAudit(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "audit", args: []string{"audit"}},
		{name: "audit-wide", args: []string{"audit", "-A", "-o", "wide"}},
		{name: "audit-kubectl-plugin", binary: NameKubectlPlugin, args: []string{"audit", "-A"}},
		{name: "audit-json", args: []string{"audit", "-o", "json"}},
		{name: "audit-name", args: []string{"audit", "-A", "-o", "name"}},
		// Exit 1: --fail-on turns unguarded deletions into findings, for CI.
		{name: "audit-fail-on-high", args: []string{"audit", "--fail-on", "high"}},
		{name: "audit-fail-on-any", args: []string{"audit", "apps/shop", "--fail-on", "any", "--no-headers"}},
		// Exit 0: a guarded namespace is no finding.
		{name: "audit-guarded", args: []string{"audit", "--fail-on", "high"}, setup: func(w *world) {
			w.mustRun(ExitOK, "guard", "confirm", "Namespace/team-a", "Namespace/team-b", "--yes")
		}},
		{name: "audit-none", args: []string{"audit", "platform"}},
		// ledger's Prune=false does not keep it: the same sync prunes its Namespace.
		{name: "audit-guard-in-pruned-namespace", args: []string{"audit", "guestbook", "--fail-on", "any", "-o", "wide"}, setup: func(w *world) { w.addGuardedInTeamA() }},
		// ops syncs platform's ConfigMap with Replace=true: a forced sync of ops recreates it.
		{name: "audit-shared-replace", args: []string{"audit", "-A", "--fail-on", "any", "-o", "wide"}, setup: func(w *world) { w.addReplacingApp() }},
		// A move prepared and not finished shows beside the deletions: the marks keep its app from
		// ever pruning the object, and nothing else would say so.
		{name: "audit-prepared", args: []string{"audit"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
		}},
		// --probe asks the API server with a dry-run DELETE, which only the lab can answer (test/e2e):
		// the fake is no Prober. Here only its no-op path: nothing to probe.
		{name: "audit-probe-none", args: []string{"audit", "platform", "--probe"}},
		// The deletion budget's view: the installation's budget told by --deletion-budget, or the
		// project's annotation (guestbook's high-risk Namespace is held back within it too).
		{name: "audit-budget-default", args: []string{"audit", "-A", "--deletion-budget", "2"}},
		{name: "audit-budget-project-json", args: []string{"audit", "guestbook", "-o", "json"}, setup: func(w *world) {
			argoCDObjects(w)
			w.home.Update(w.home.Add("argoproj.io", "AppProject", "argocd", "default", nil, nil), func(o *cluster.Object) {
				o.Annotations = map[string]string{budget.AnnotationBudget: "10"}
			})
		}},
		// Exit 2: bad input.
		{name: "audit-bad-budget", args: []string{"audit", "--deletion-budget", "-2"}},
		{name: "audit-bad-fail-on", args: []string{"audit", "--fail-on", "low"}},
		{name: "audit-bad-output", args: []string{"audit", "-o", "markdown"}},
	})
}
