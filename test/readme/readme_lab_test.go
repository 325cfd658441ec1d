//go:build lab

// Package readme runs README.md's quickstart as a newcomer would: each command of its "Five minutes
// on your own cluster" section, exactly as written, from a shell, against a lab that holds the
// incident the section describes (app guestbook, Namespace team-a requiring pruning) and nothing
// else. It is a package of its own so that its control plane has one Argo CD, in namespace argocd,
// as the reader's cluster has: `unprune scan -A` must find it without being told.
package readme

import (
	"bufio"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

const section = "## Five minutes on your own cluster"

// quickstart is every command line of the section's sh blocks, comments stripped.
func quickstart(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == section
		case in && l == "```sh":
			block = true
		case in && l == "```":
			block = false
		case in && block:
			cmd, _, _ := strings.Cut(l, "#")
			if cmd = strings.TrimSpace(cmd); cmd != "" {
				lines = append(lines, cmd)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 5 {
		t.Fatalf("README's %q holds %d commands: %q", section, len(lines), lines)
	}
	return lines
}

// TestQuickstartRunsAsWritten: the commands, in order, each exiting 0 or 1 (1: findings, or a
// preview with changes to make), and the cluster as the prose says after each: released by the
// detach with --yes (Argo CD shows the app Synced), tracked again after the undo, and untouched by
// every preview and dry run.
func TestQuickstartRunsAsWritten(t *testing.T) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd"})
	app := install.CreateApp(t, labtest.AppOptions{Name: "guestbook", Repo: labtest.NewRepo(t)})
	t.Cleanup(func() { env.DeleteNamespace("team-a") })
	app.Incident(t, "team-a", nil)

	bin := filepath.Dir(cmdtest.Build(t))
	state := t.TempDir()
	annotations := func() map[string]string {
		ns, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), "team-a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Namespace team-a: %v", err)
		}
		return ns.Annotations
	}
	tracked := func() bool {
		_, ok := annotations()["argocd.argoproj.io/tracking-id"]
		return ok
	}
	for _, line := range quickstart(t) {
		before := annotations()
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+env.Kubeconfig, "XDG_STATE_HOME="+state, "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		code := cmd.ProcessState.ExitCode()
		t.Logf("$ %s → exit %d\n%s", line, code, out)
		if err != nil && code != 1 {
			t.Fatalf("%s: exit %d (%v); README promises it runs", line, code, err)
		}
		verb := strings.Fields(line)[1]
		switch {
		case verb == "detach" && strings.Contains(line, "--yes"):
			if tracked() {
				t.Fatalf("%s: team-a still carries the tracking-id", line)
			}
			if s := app.Status(t); s.Sync != "Synced" {
				t.Errorf("%s: the app is %s, README says it waits until Synced", line, s.Sync)
			}
		case verb == "undo":
			if !tracked() {
				t.Fatalf("%s: team-a's tracking-id is not back", line)
			}
			// undo asks for no refresh and does not wait: Argo CD's controller compares the app
			// again by itself, as it sees team-a change, and only then do scan and audit, which
			// read its comparison, name team-a again.
			app.WaitStatus(t, labtest.ControllerTimeout, "to list team-a requiring pruning again, compared by itself after the undo", func(s labtest.Status) bool {
				r, ok := s.Find("Namespace", "team-a")
				return ok && r.RequiresPruning
			})
		case verb == "scan" || verb == "audit":
			if !strings.Contains(string(out), "team-a") {
				t.Errorf("%s does not name team-a", line)
			}
		}
		if after := annotations(); !strings.Contains(line, "--yes") && !maps.Equal(before, after) {
			t.Errorf("%s changed team-a's annotations without --yes: %v → %v", line, before, after)
		}
	}
	if !tracked() {
		t.Errorf("the quickstart ends with team-a released; README ends it with the undo")
	}
}
