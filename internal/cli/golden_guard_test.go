package cli

import (
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

func TestGoldenGuard(t *testing.T) {
	runGoldens(t, []goldenCase{
		// guard policy: printed for review (exit 0), previewed with --apply (exit 1), applied.
		{name: "guard-policy", args: []string{"guard", "policy"}},
		{name: "guard-policy-kinds", args: []string{"guard", "policy", "--kinds", "namespaces,crds,pvs", "--name", "namespaces/team-a", "--break-glass-group", "platform-admins"}},
		// A kind beyond namespaces, crds and pvs is looked up in the cluster, and named with its namespace.
		{name: "guard-policy-configmaps", args: []string{"guard", "policy", "--kinds", "namespaces,configmaps", "--name", "configmaps/platform/settings"}},
		// --merge keeps what the installed policy protects: its kinds, names and break-glass group.
		{name: "guard-policy-merge", args: []string{"guard", "policy", "--merge", "--kinds", "crds"}, setup: func(w *world) {
			w.mustRun(ExitOK, "guard", "policy", "--kinds", "namespaces,configmaps", "--name", "configmaps/platform/settings", "--break-glass-group", "platform-admins", "--apply", "--yes")
		}},
		{name: "guard-policy-apply-preview", args: []string{"guard", "policy", "--apply"}},
		{name: "guard-policy-apply-yes", args: []string{"guard", "policy", "--apply", "--yes"}},
		{name: "guard-policy-apply-dry-run-server", args: []string{"guard", "policy", "--apply", "--dry-run=server", "--cluster", "prod-eu"}},
		// Exit 2: bad input.
		{name: "guard-policy-yes-without-apply", args: []string{"guard", "policy", "--yes"}},
		{name: "guard-policy-bad-kind", args: []string{"guard", "policy", "--kinds", "widgets"}},
		{name: "guard-policy-unknown-cluster", args: []string{"guard", "policy", "--apply", "--yes", "--cluster", "prod-us"}},

		// guard protect and confirm: previews (exit 1), changes (exit 0), nothing to change (exit 0).
		{name: "guard-protect-preview", args: []string{"guard", "protect", "Namespace/team-a"}},
		{name: "guard-protect-yes", args: []string{"guard", "protect", "Namespace/team-a", "Namespace/team-b", "--yes"}},
		{name: "guard-protect-json", args: []string{"guard", "protect", "namespaces/team-a", "-o", "json"}},
		{name: "guard-protect-again", args: []string{"guard", "protect", "Namespace/team-a", "--yes"}, setup: func(w *world) {
			w.mustRun(ExitOK, "guard", "protect", "Namespace/team-a", "--yes")
		}},
		{name: "guard-confirm-yes-yaml", args: []string{"guard", "confirm", "Namespace/team-a", "--yes", "-o", "yaml"}},
		{name: "guard-confirm-remote", args: []string{"guard", "confirm", "ConfigMap/shop/legacy", "--cluster", remoteServer, "--yes"}},
		{name: "guard-confirm-dry-run-server", args: []string{"guard", "confirm", "Namespace/team-a", "Namespace/team-b", "--dry-run=server", "--no-headers"}},
		// Exit 3: the Deployment's manifest sets sync-options, so Argo CD would write Prune=confirm over.
		{name: "guard-confirm-reverted", args: []string{"guard", "confirm", "Deployment.apps/guestbook/guestbook-ui", "--yes"}, setup: func(w *world) {
			w.manifestSets("guestbook-ui", "argocd.argoproj.io/sync-options", "SkipDryRunOnMissingResource=true")
		}},
		// Exit 3: guestbook syncs with Replace=true, which writes its manifest over the label at every sync.
		{name: "guard-protect-replaced", args: []string{"guard", "protect", "Deployment.apps/guestbook/guestbook-ui"}, setup: func(w *world) {
			w.replaces("guestbook")
		}},
		// A missing object cannot be guarded: reported Gone, nothing changed (exit 0).
		// A mark on ledger does not hold while guestbook prunes its Namespace; nor does the one it has.
		{name: "guard-confirm-in-pruned-namespace", args: []string{"guard", "confirm", "ConfigMap/team-a/ledger"},
			setup: func(w *world) {
				w.addGuardedInTeamA()
				w.home.Update(w.refs["ledger"], func(o *cluster.Object) { delete(o.Annotations, argocd.AnnotationSyncOptions) })
			}},
		{name: "guard-confirm-guarded-in-pruned-namespace", args: []string{"guard", "confirm", "ConfigMap/team-a/ledger"},
			setup: func(w *world) { w.addGuardedInTeamA() }},
		{name: "guard-confirm-missing", args: []string{"guard", "confirm", "Namespace/nope", "--yes"}},
		// guard approve and budget annotate the Application, AppProject or ApplicationSet (against
		// the real webhook and controllers: TestDeletionBudget): previews (exit 1), changes (exit 0).
		{name: "guard-approve-preview", args: []string{"guard", "approve", "guestbook", "-n", "argocd"}, setup: argoCDObjects},
		{name: "guard-approve-yes", args: []string{"guard", "approve", "guestbook", "-n", "argocd", "--yes"}, setup: argoCDObjects},
		{name: "guard-approve-nothing", args: []string{"guard", "approve", "platform", "-n", "argocd", "--yes"}, setup: argoCDObjects},
		{name: "guard-budget-yes", args: []string{"guard", "budget", "guestbook", "3", "-n", "argocd", "--yes"}, setup: argoCDObjects},
		{name: "guard-budget-project", args: []string{"guard", "budget", "default", "10", "--project", "--yes"}, setup: argoCDObjects},
		{name: "guard-budget-applicationset", args: []string{"guard", "budget", "envs", "2", "--applicationset", "-n", "argocd", "--dry-run=server"}, setup: argoCDObjects},
		// Exit 2: bad input.
		{name: "guard-budget-not-a-number", args: []string{"guard", "budget", "guestbook", "many"}},
		{name: "guard-approve-namespaced-name", args: []string{"guard", "approve", "argocd/guestbook"}},
		{name: "guard-budget-project-and-set", args: []string{"guard", "budget", "envs", "2", "--project", "--applicationset"}},
		// Exit 2: bad input.
		{name: "guard-protect-no-args", args: []string{"guard", "protect"}},
		{name: "guard-protect-bad-resource", args: []string{"guard", "protect", "team-a"}},
		{name: "guard-confirm-unknown-kind", args: []string{"guard", "confirm", "Widget/w", "--yes"}},
	})
}

// argoCDObjects makes the home cluster serve Argo CD's kinds, with guestbook and platform as
// Applications, project default and ApplicationSet envs as objects: what guard approve and budget
// annotate.
func argoCDObjects(w *world) {
	w.home.Serve(clustertest.ArgoCDKinds...)
	w.home.Add("argoproj.io", "Application", "argocd", "guestbook", nil, nil)
	w.home.Add("argoproj.io", "Application", "argocd", "platform", nil, nil)
	w.home.Add("argoproj.io", "AppProject", "argocd", "default", nil, nil)
	w.home.Add("argoproj.io", "ApplicationSet", "argocd", "envs", nil, nil)
}
