//go:build lab

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestKubectlPluginCompletion proves shell completion of `kubectl unprune` as a user gets it: the
// lab's own kubectl (1.35) finds kubectl-unprune on PATH, and for the plugin's arguments runs
// kubectl_complete-unprune (plugins/, as `make build` and the archives ship it), which asks the
// plugin's hidden __complete command. It completes the app's name, then the app's resources that
// require pruning, and undo's journals.
func TestKubectlPluginCompletion(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	path := pluginPath(t, env)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Namespace: "argocd-completion"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	ns := labtest.UniqueName("completed")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)
	journals := labtest.TempDir(t)
	conn := []string{"--kubeconfig", env.State.Kubeconfig, "--argocd-namespace", install.Namespace(), "--journal-dir", journals}
	kubectl := func(words ...string) completion {
		return complete(t, path, env.State.Kubectl, append([]string{"__complete"}, words...)...)
	}
	plugin := func(words ...string) completion {
		return complete(t, path, filepath.Join(path, "kubectl-unprune"), append([]string{"__complete"}, words...)...)
	}

	// kubectl offers the plugin among its commands.
	if c := kubectl("unpr"); !c.has("unprune") {
		t.Errorf("kubectl __complete unpr: no unprune among %q", c.words)
	}

	// APP, from a prefix of its name.
	args := append(append([]string{"unprune", "detach"}, conn...), app.Name[:len(app.Name)-3])
	if c := kubectl(args...); !c.has(app.Name) || c.directive != ":4" {
		t.Errorf("kubectl __complete %s: %q %s; want %s, no file completion (:4)", strings.Join(args, " "), c.words, c.directive, app.Name)
	}

	// RESOURCE: what requires pruning, as `unprune scan` prints it.
	resource := "Namespace/" + ns
	args = append(append([]string{"unprune", "detach"}, conn...), app.Name, "")
	if c := kubectl(args...); !c.has(resource) || c.directive != ":4" {
		t.Errorf("kubectl __complete %s: %q %s; want %s, no file completion (:4)", strings.Join(args, " "), c.words, c.directive, resource)
	}
	// …and not the resource already on the line.
	args = append(append([]string{"detach"}, conn...), app.Name, resource, "")
	if c := plugin(args...); c.has(resource) {
		t.Errorf("kubectl-unprune __complete %s offers %s a second time: %q", strings.Join(args, " "), resource, c.words)
	}

	// Detach it: the app then has nothing left to offer, and undo completes the journal.
	if r := unprune(t, env, journals, "detach", app.Name, "--all", "--yes", "--argocd-namespace", install.Namespace()); r.Code != cli.ExitOK {
		t.Fatalf("detach --yes exit %d", r.Code)
	}
	args = append(append([]string{"detach"}, conn...), app.Name, "")
	if c := plugin(args...); len(c.words) != 0 {
		t.Errorf("after detach, kubectl-unprune __complete %s: %q, want nothing", strings.Join(args, " "), c.words)
	}
	files, err := filepath.Glob(filepath.Join(journals, "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("journals after one detach: %v %v", files, err)
	}
	for _, c := range []completion{
		kubectl(append(append([]string{"unprune", "undo"}, conn...), "")...),
		plugin(append(append([]string{"undo"}, conn...), "")...),
	} {
		if !c.has(files[0]) {
			t.Errorf("undo completion: %q, want the journal %s", c.words, files[0])
		}
	}
}

// TestArgoCDPluginCompletion: argocd (v3.6.1, the lab's own CLI) completes a plugin's name from
// PATH, so `argocd unp<TAB>` gives unprune. It has nothing like kubectl's kubectl_complete-<plugin>
// for the words after the name (its root's completion only lists plugins; the plugin is never
// asked), so unprune ships no completion script for argocd-unprune.
func TestArgoCDPluginCompletion(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	bins, err := lab.Build(labtest.Context(t), env.Root, "argocd-v3.6.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := labtest.TempDir(t)
	// Argo CD's binary is every one of its programs; named argocd, it is the CLI.
	if err := os.Symlink(filepath.Join(bins.ArgoCD["v3.6.1"], "argocd"), filepath.Join(dir, "argocd")); err != nil {
		t.Fatal(err)
	}
	goBuild(t, env, "./cmd/argocd-unprune", filepath.Join(dir, "argocd-unprune"))
	if c := complete(t, dir, filepath.Join(dir, "argocd"), "__complete", "unp"); !c.has("unprune") {
		t.Errorf("argocd __complete unp: no unprune among %q", c.words)
	}
}

// pluginPath builds kubectl-unprune into a directory with kubectl_complete-unprune beside it, as
// `make build` lays them out, and returns that directory.
func pluginPath(t *testing.T, env *labtest.Env) string {
	t.Helper()
	dir := labtest.TempDir(t)
	goBuild(t, env, "./cmd/kubectl-unprune", filepath.Join(dir, "kubectl-unprune"))
	script, err := os.ReadFile(filepath.Join(env.Root, "plugins", "kubectl_complete-unprune"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-unprune"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goBuild builds one of the repository's commands.
func goBuild(t *testing.T, env *labtest.Env, pkg, out string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir = env.Root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// completion is what a __complete call printed: the candidates (descriptions dropped) and cobra's
// directive line.
type completion struct {
	words     []string
	directive string
}

func (c completion) has(w string) bool { return slices.Contains(c.words, w) }

// complete runs a __complete call with only dir (and the system's) on PATH.
func complete(t *testing.T, dir, bin string, args ...string) completion {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+"/usr/bin:/bin", "HOME="+labtest.TempDir(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("%s %q → %v\n--- stdout\n%s--- stderr\n%s", filepath.Base(bin), args, err, stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	var c completion
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if strings.HasPrefix(line, ":") {
			c.directive = line
			continue
		}
		if w, _, _ := strings.Cut(line, "\t"); w != "" {
			c.words = append(c.words, w)
		}
	}
	return c
}
