//go:build lab

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// seedTrackedConfigMaps creates n ConfigMaps in ns tracked by app (label and tracking-id, as
// annotation+label tracking writes them) and returns their names and the status rows that list
// them as requiring pruning.
func seedTrackedConfigMaps(t *testing.T, env *labtest.Env, app, ns string, n int) ([]string, []any) {
	t.Helper()
	env.CreateNamespace(t, ns)
	names := make([]string, n)
	rows := make([]any, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		names[i] = fmt.Sprintf("cm-%04d", i)
		rows[i] = map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": names[i], "status": "OutOfSync", "requiresPruning": true}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- env.Create(context.Background(), map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
				"name": names[i], "namespace": ns,
				"labels":      map[string]any{"app.kubernetes.io/instance": app, "team": "storage"},
				"annotations": map[string]any{"argocd.argoproj.io/tracking-id": fmt.Sprintf("%s:/ConfigMap:%s/%s", app, ns, names[i])}}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return names, rows
}

// configMapMetadata reads every ConfigMap of ns but the root CA's: labels and annotations by name.
func configMapMetadata(t *testing.T, env *labtest.Env, ns string) map[string]corev1.ConfigMap {
	t.Helper()
	list, err := env.Kube.CoreV1().ConfigMaps(ns).List(labtest.Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.ConfigMap{}
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			out[cm.Name] = cm
		}
	}
	return out
}

func countReleased(cms map[string]corev1.ConfigMap) int {
	n := 0
	for _, cm := range cms {
		if _, tracked := cm.Labels["app.kubernetes.io/instance"]; !tracked {
			n++
		}
	}
	return n
}

// TestSIGKILLDuringALargeDetachThenRerun: the built binary is killed with SIGKILL in the middle of a
// 3,000-object detach. Its journal still loads; a rerun converges to exit 0 while the seeded status
// still lists every object (no controller compares here, as with a stopped one: nothing edits the
// status); each object is patched by exactly one of the two runs; and undoing both journals, newest
// first, gives back every object's metadata exactly.
func TestSIGKILLDuringALargeDetachThenRerun(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	const app, ns, n = "sigkill", "sigkill-objects", 3000
	names, rows := seedTrackedConfigMaps(t, env, app, ns, n)
	env.SeedApplication(t, argocdNamespace, app, map[string]any{}, rows)
	before := configMapMetadata(t, env, ns)

	journals := labtest.TempDir(t)
	cmd := exec.Command(cmdtest.Build(t), "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--qps=200", "--burst=1",
		"detach", app, "--all", "--yes", "--wait=false")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	labtest.Eventually(t, 2*time.Minute, "the detach to be under way", func() (bool, string) {
		c := countReleased(configMapMetadata(t, env, ns))
		return c >= n/3, fmt.Sprint(c, " released")
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the detach was not killed: %v\n%s", cmd.ProcessState, stderr.String())
	}
	killedAt := countReleased(configMapMetadata(t, env, ns))
	if killedAt == n {
		t.Fatalf("the run finished before it was killed: %d of %d released", killedAt, n)
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 {
		t.Fatalf("journals after the kill: %v", paths)
	}
	first, _, err := journal.NewStore(journals, nil).Load(paths[0])
	if err != nil {
		t.Fatalf("the killed run's journal does not load: %v", err)
	}
	if len(first.Entries) != n {
		t.Fatalf("the killed run's journal has %d entries, want %d", len(first.Entries), n)
	}

	r := unprune(t, env.State.Kubeconfig, journals, "detach", app, "--all", "--yes", "--wait=false", "-o", "json")
	if r.Code != cli.ExitOK {
		t.Fatalf("rerun: exit %d, want %d\n%s", r.Code, cli.ExitOK, r.Stderr)
	}
	var doc printer.ChangeReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatal(err)
	}
	released := 0
	for _, it := range doc.Items {
		switch {
		case it.Outcome == string(engine.OutcomeUnchanged) && it.Reason == engine.ReasonAlreadyReleased:
			released++
			if !strings.Contains(it.Message, paths[0]) {
				t.Errorf("%s: %q does not name the killed run's journal", it.Resource.Name, it.Message)
			}
		case it.Outcome != string(engine.OutcomeApplied):
			t.Errorf("%s: %s %s %s", it.Resource.Name, it.Outcome, it.Reason, it.Message)
		}
	}
	// Requests the killed process had already sent may still land after the count above: the rerun
	// finds at least that many released, and releases exactly the rest.
	if released < killedAt || released+doc.Summary.Applied != n {
		t.Errorf("rerun: %d already released and %d applied; the kill left at least %d of %d released", released, doc.Summary.Applied, killedAt, n)
	}
	if got := countReleased(configMapMetadata(t, env, ns)); got != n {
		t.Fatalf("after the rerun %d of %d released", got, n)
	}
	second, _, err := journal.NewStore(journals, nil).Load(doc.Journal)
	if err != nil {
		t.Fatal(err)
	}
	patched := map[string]int{}
	for _, j := range []*journal.Journal{first, second} {
		for _, e := range j.Entries {
			if e.State == journal.StateApplied {
				patched[e.Object.Name]++
			}
		}
	}
	for _, e := range second.Entries {
		if patched[e.Object.Name] > 1 {
			t.Errorf("%s was patched by both runs", e.Object.Name)
		}
	}

	for _, path := range []string{doc.Journal, paths[0]} {
		if r := unprune(t, env.State.Kubeconfig, journals, "undo", path, "--yes"); r.Code != cli.ExitOK {
			t.Fatalf("undo %s: exit %d\n%s", path, r.Code, r.Stderr)
		}
	}
	after := configMapMetadata(t, env, ns)
	sort.Strings(names)
	for _, name := range names {
		b, a := before[name], after[name]
		if a.UID != b.UID || mustJSON(t, a.Labels) != mustJSON(t, b.Labels) || mustJSON(t, a.Annotations) != mustJSON(t, b.Annotations) {
			t.Errorf("%s after both undos: labels %v annotations %v uid %s; before: %v %v %s", name, a.Labels, a.Annotations, a.UID, b.Labels, b.Annotations, b.UID)
		}
	}
}

// TestRefusalsDoNotStopTheOthers: one object of the app is refused (its tracking names another
// app); the others are released all the same, and the exit code (4) and the report say which was
// refused. With --all-or-nothing, nothing changes (exit 3).
func TestRefusalsDoNotStopTheOthers(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, tc := range []struct {
		name     string
		flags    []string
		wantCode int
		released int
	}{
		{name: "default", wantCode: cli.ExitPartial, released: 2},
		{name: "all-or-nothing", flags: []string{"--all-or-nothing"}, wantCode: cli.ExitRefused, released: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			app, ns := "refusal-"+tc.name, "refusal-"+tc.name+"-objects"
			names, rows := seedTrackedConfigMaps(t, env, app, ns, 3)
			other := names[2]
			_, err := env.Kube.CoreV1().ConfigMaps(ns).Patch(labtest.Context(t), other, "application/merge-patch+json",
				[]byte(`{"metadata":{"labels":{"app.kubernetes.io/instance":"other-app"},"annotations":{"argocd.argoproj.io/tracking-id":"other-app:/ConfigMap:`+ns+`/`+other+`"}}}`),
				metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			env.SeedApplication(t, argocdNamespace, app, map[string]any{}, rows)
			args := append([]string{"detach", app, "--all", "--yes", "--wait=false", "-o", "json"}, tc.flags...)
			r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), args...)
			if r.Code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.Code, tc.wantCode, r.Stderr)
			}
			var doc printer.ChangeReport
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
				t.Fatal(err)
			}
			refused := ""
			for _, it := range doc.Items {
				if it.Outcome == string(engine.OutcomeRefused) {
					refused += it.Resource.Name + "=" + it.Reason + " "
				}
			}
			if refused != other+"=TrackedElsewhere " {
				t.Errorf("refused: %q, want %s=TrackedElsewhere", refused, other)
			}
			cms := configMapMetadata(t, env, ns)
			if got := countReleased(cms); got != tc.released {
				t.Errorf("%d released, want %d", got, tc.released)
			}
			if cms[other].Labels["app.kubernetes.io/instance"] != "other-app" {
				t.Errorf("the refused object changed: %v", cms[other].Labels)
			}
		})
	}
}
