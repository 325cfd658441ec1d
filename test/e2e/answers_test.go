//go:build lab

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestArgoCDAnswers: with argocd-server named beside the kubeconfig, check takes Argo CD's own
// answers: the Applications a changed ApplicationSet generates (the generation API), and an app of
// apps' manifests at a revision (the manifests API), and says so in the output.
func TestArgoCDAnswers(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Server: true})
	api := []string{"--argocd-namespace=" + install.Namespace(), "--argocd-server", strings.TrimPrefix(install.ServerURL(t), "http://"), "--argocd-plaintext",
		"--argocd-auth-token", install.Token(t, lab.ServerAdmin)}
	check := func(t *testing.T, args ...string) printer.CheckReport {
		t.Helper()
		r := unprune(t, env, labtest.TempDir(t), append(append(append([]string{}, api...), "check"), append(args, "-o", "json")...)...)
		var doc printer.CheckReport
		if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
			t.Fatalf("check %v: exit %d, %v\n%s", args, r.Code, err, r.Stderr)
		}
		return doc
	}
	answered := func(doc printer.CheckReport, question, by string) bool {
		for _, a := range doc.Answers {
			if a.Question == question && a.By == by && (by != "ArgoCD" || a.Server != "") {
				return true
			}
		}
		return false
	}

	t.Run("generation", func(t *testing.T) {
		t.Parallel()
		repo := labtest.NewRepo(t)
		keep, drop := labtest.UniqueName("keep"), labtest.UniqueName("drop")
		for _, team := range []string{keep, drop} {
			repo.Write(t, "teams/"+team+"/team.yaml", teamManifests(team))
		}
		repo.Commit(t, "two teams")
		name := labtest.UniqueName("set")
		startSet(t, env, install, appSet(name, install.Namespace(), repo.URL, "", false, keep, drop), repo, map[string]string{keep: "teams/" + keep, drop: "teams/" + drop})
		doc := check(t, "applicationset/"+name, "--manifests", writeSet(t, appSet(name, install.Namespace(), repo.URL, "", false, keep)))
		a, ok := findApp(doc, drop)
		switch {
		case doc.ApplicationSet == nil || doc.ApplicationSet.GeneratedBy != "ArgoCD" || strings.Join(doc.ApplicationSet.Generated, ",") != keep:
			t.Fatalf("set: %+v; want Argo CD's generation of %s alone", doc.ApplicationSet, keep)
		case strings.Join(doc.ApplicationSet.GeneratedBefore, ",") != strings.Join(sortedPair(keep, drop), ","):
			t.Fatalf("generated before: %v; want both", doc.ApplicationSet.GeneratedBefore)
		case !ok || a.Fate != "Cascade" || findResource(a, "Namespace", drop) == nil:
			t.Fatalf("apps: %+v; want %s's cascade", doc.Applications, drop)
		case !answered(doc, "Generation", "ArgoCD") || !answered(doc, "Deletions", "Offline"):
			t.Fatalf("answers %+v; want the generation from Argo CD, the deletions offline", doc.Answers)
		}
	})

	t.Run("revision", func(t *testing.T) {
		t.Parallel()
		parent, child, team := appOfApps(t, env, install, true)
		// The parent's commit before the child: Argo CD renders it without the child.
		before := parent.Repo.Revert(t)
		parent.Repo.Revert(t) // and back: the live parent keeps the child; only the check looks at before
		doc := check(t, parent.Name, "--revision", before)
		a, ok := findApp(doc, child)
		if !ok || a.Fate != "Cascade" || findResource(a, "Namespace", team) == nil || !answered(doc, "Manifests", "ArgoCD") {
			t.Fatalf("check at %s: %+v answers %+v; want the child's cascade, the manifests from Argo CD", before, doc.Applications, doc.Answers)
		}
	})
}

func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}
