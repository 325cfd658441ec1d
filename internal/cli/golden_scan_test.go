package cli

import "testing"

func TestGoldenScan(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "scan", args: []string{"scan"}},
		{name: "scan-json", args: []string{"scan", "-o", "json"}},
		{name: "scan-wide", args: []string{"scan", "-o", "wide"}},
		{name: "scan-argocd-plugin", binary: NameArgoCDPlugin, args: []string{"scan", "--server", "argocd.example", "--auth-token", "t"}},
		{name: "scan-no-headers", args: []string{"scan", "--no-headers"}},
		{name: "scan-all-namespaces-yaml", args: []string{"scan", "-A", "-o", "yaml"}},
		{name: "scan-all-namespaces", args: []string{"scan", "-A"}},
		{name: "scan-name", args: []string{"scan", "-A", "-o", "name"}},
		{name: "scan-jsonpath", args: []string{"scan", "-A", "-o", "jsonpath={.items[*].resource.name}"}},
		{name: "scan-go-template", args: []string{"scan", "-o", `go-template={{range .items}}{{.application.name}} {{.resource.kind}}/{{.resource.name}}{{"\n"}}{{end}}`}},
		{name: "scan-project", args: []string{"scan", "-A", "--project", "shop"}},
		{name: "scan-named-other-namespace", args: []string{"scan", "apps/shop"}},
		// Moves prepared and not finished show, so none is forgotten: still in the source app's
		// hands, and taken over by the target app's sync (its marks left on).
		{name: "scan-prepared", args: []string{"scan"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
		}},
		{name: "scan-prepared-taken-over-yaml", args: []string{"scan", "-o", "yaml"}, setup: func(w *world) {
			w.addMoveTarget()
			w.mustRun(ExitOK, "move", "guestbook", "Namespace/team-b", "--to", "teams", "--prepare", "--yes")
			w.takeOver("guestbook", "teams", "team-b")
		}},
		// Exit 0: nothing requires pruning.
		{name: "scan-none", args: []string{"scan", "platform"}},
		{name: "scan-selector-none", args: []string{"scan", "-l", "team=none"}},
		// Exit 2: bad input, found before anything is read.
		{name: "scan-bad-output", args: []string{"scan", "-o", "xml"}},
		{name: "scan-bad-jsonpath", args: []string{"scan", "-o", "jsonpath={.items["}},
		{name: "scan-no-headers-json", args: []string{"scan", "-o", "json", "--no-headers"}},
		{name: "scan-namespace-and-all", args: []string{"scan", "-n", "argocd", "-A"}},
		{name: "scan-apps-and-selector", args: []string{"scan", "guestbook", "-A"}},
		{name: "scan-bad-app", args: []string{"scan", "a/b/c"}},
		{name: "scan-missing-app", args: []string{"scan", "nope"}},
		{name: "scan-bad-qps", args: []string{"scan", "--qps", "0"}},
		{name: "scan-bad-via", args: []string{"scan", "--via", "ssh"}},
		{name: "scan-bad-argocd-version", args: []string{"scan", "--argocd-version", "three"}},
		{name: "scan-other-argocd-namespace", args: []string{"scan", "--argocd-namespace", "gitops"}},
	})
}
