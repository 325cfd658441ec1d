//go:build lab

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// TestRerunWhileTheControllerIsStopped is the rerun after an interruption on a real, stopped
// controller (SIGSTOP of its process, as a controller with a long queue or one that is down looks to
// its users): a detach of an app's stuck resources is interrupted halfway; the rerun of --all,
// while Argo CD still lists the released half, releases the rest and exits 5 saying Argo CD has not
// compared — never 3. Each object is patched once. When the controller resumes, the app is Synced,
// and a prune sync deletes nothing.
func TestRerunWhileTheControllerIsStopped(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	// An installation of its own: stopping its controller must not stall other tests.
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-v361-stopped"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	const n = 40
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("stuck-%02d", i)
		app.Repo.Write(t, fmt.Sprintf("%s/%s.yaml", app.Path, names[i]), fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  keep: me\n", names[i], app.DestNamespace))
	}
	added := app.Repo.Commit(t, "add 40 ConfigMaps")
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+added, func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync: %s %s", op.Phase, op.Message)
	}
	app.WaitSynced(t, added)
	reverted := app.Repo.Revert(t)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to list every ConfigMap as requiring pruning", func(s labtest.Status) bool {
		stuck := 0
		for _, r := range s.Resources {
			if r.RequiresPruning && strings.HasPrefix(r.Name, "stuck-") {
				stuck++
			}
		}
		return s.Revision == reverted && stuck == n
	})
	uids := map[string]string{}
	cms := app.Cluster.Kube.CoreV1().ConfigMaps(app.DestNamespace)
	for _, name := range names {
		cm, err := cms.Get(labtest.Context(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = string(cm.UID)
	}
	released := func() int {
		list, err := cms.List(labtest.Context(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, cm := range list.Items {
			if _, tracked := cm.Annotations["argocd.argoproj.io/tracking-id"]; strings.HasPrefix(cm.Name, "stuck-") && !tracked {
				count++
			}
		}
		return count
	}

	resume := install.PauseController(t)

	// The first run, slowed down so that it can be interrupted halfway; one worker, so that what is
	// dispatched when the signal comes (and so still sent) is one patch, not a rate limiter's queue.
	journals := labtest.TempDir(t)
	cmd := exec.Command(cmdtest.Build(t), "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--qps=2", "--burst=1",
		"--argocd-namespace="+install.Namespace(), "detach", app.Name, "-n", app.Namespace, "--all", "--yes", "--workers=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// On a loaded machine the run's start (discovery, reads) can take a while: the deadline is long,
	// and a run that ends before it is interrupted fails the test at once, with its output.
	labtest.Eventually(t, 3*time.Minute, "half the ConfigMaps to be released", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("the first run ended before it could be interrupted: exit %d\n%s", cmd.ProcessState.ExitCode(), stderr.String())
		default:
		}
		c := released()
		return c >= n/2, fmt.Sprint(c, " released")
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != cli.ExitPartial {
		t.Fatalf("interrupted run: exit %d, want %d\n%s", code, cli.ExitPartial, stderr.String())
	}
	first := released()
	if first == n {
		t.Fatalf("the first run released everything before it was interrupted")
	}
	if s := app.Status(t); len(s.Resources) < n {
		t.Fatalf("the stopped controller changed the status: %s", s)
	}

	// The rerun, with the controller still stopped: Argo CD lists every object still.
	r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "detach", app.Name, "-n", app.Namespace, "--all", "--yes", "--timeout=5s", "-o", "json")
	if r.Code != cli.ExitNotSynced {
		t.Fatalf("rerun with the controller stopped: exit %d, want %d\n%s", r.Code, cli.ExitNotSynced, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "has not compared") {
		t.Errorf("the rerun does not say Argo CD has not compared the app:\n%s", r.Stderr)
	}
	var doc printer.ChangeReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	already := 0
	for _, it := range doc.Items {
		switch {
		case it.Outcome == string(engine.OutcomeUnchanged) && it.Reason == engine.ReasonAlreadyReleased:
			already++
		case it.Outcome != string(engine.OutcomeApplied):
			t.Errorf("rerun: %s %s %s %s", it.Resource.Name, it.Outcome, it.Reason, it.Message)
		}
	}
	if already != first || doc.Summary.Applied != n-first {
		t.Errorf("rerun: %d already released, %d applied; the first run released %d of %d", already, doc.Summary.Applied, first, n)
	}
	if got := released(); got != n {
		t.Fatalf("after the rerun %d of %d released", got, n)
	}
	patched := map[string]int{}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	for _, path := range paths {
		j, _, err := journal.NewStore(journals, nil).Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range j.Entries {
			if e.State == journal.StateApplied {
				patched[e.Object.Name]++
			}
		}
	}
	for _, name := range names {
		if patched[name] != 1 {
			t.Errorf("%s was patched %d times across the journals, want once", name, patched[name])
		}
	}

	resume()
	app.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced without the released ConfigMaps", func(s labtest.Status) bool {
		for _, r := range s.Resources {
			if strings.HasPrefix(r.Name, "stuck-") {
				return false
			}
		}
		return s.Sync == "Synced" && s.Revision == reverted
	})
	if op := app.Sync(t, true); op.Phase != "Succeeded" {
		t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
	}
	for _, name := range names {
		cm, err := cms.Get(labtest.Context(t), name, metav1.GetOptions{})
		if err != nil || string(cm.UID) != uids[name] || cm.DeletionTimestamp != nil {
			t.Errorf("%s after a prune sync: %v (uid %v, was %s)", name, err, cm.UID, uids[name])
		}
	}
}
