//go:build lab

package apiserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

var gvrSecret = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// TestScrubLastAppliedLeaksNoSecret: a Secret applied with kubectl carries its data inside
// last-applied-configuration; detach --scrub-last-applied must not copy that data to stdout, stderr or
// the journal, and undo must restore the annotation byte for byte.
func TestScrubLastAppliedLeaksNoSecret(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	const app, ns, name, password = "vault", "scrub-secret", "db-creds", "correct-horse-battery-staple"
	env.CreateNamespace(t, ns)
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {app.kubernetes.io/instance: %[3]s}
  annotations: {argocd.argoproj.io/tracking-id: "%[3]s:/Secret:%[2]s/%[1]s"}
stringData:
  password: %[4]s
`, name, ns, app, password)
	cmd := exec.Command(env.State.Kubectl, "--kubeconfig", env.State.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	before, err := env.Dynamic.Resource(gvrSecret).Namespace(ns).Get(labtest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastApplied := before.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]
	if !strings.Contains(lastApplied, password) {
		t.Fatalf("kubectl did not embed the data in last-applied-configuration: %q", lastApplied)
	}
	env.SeedApplication(t, argocdNamespace, app, map[string]any{}, []any{
		map[string]any{"version": "v1", "kind": "Secret", "namespace": ns, "name": name, "status": "OutOfSync", "requiresPruning": true}})
	journals := labtest.TempDir(t)
	var outputs []string
	for _, step := range []struct {
		args []string
		want int
	}{
		{[]string{"scan", "-o", "wide"}, cli.ExitFindings},
		{[]string{"detach", app, "--all", "--scrub-last-applied"}, cli.ExitFindings},
		{[]string{"detach", app, "--all", "--scrub-last-applied", "-o", "json"}, cli.ExitFindings},
		{[]string{"detach", app, "--all", "--scrub-last-applied", "--dry-run=server"}, cli.ExitFindings},
		{[]string{"detach", app, "--all", "--scrub-last-applied", "--yes", "--wait=false"}, cli.ExitOK},
		{[]string{"undo", "--latest", "-o", "yaml"}, cli.ExitFindings},
		{[]string{"undo", "--list", "-o", "json"}, cli.ExitOK},
	} {
		r := unprune(t, env.State.Kubeconfig, journals, step.args...)
		if r.Code != step.want {
			t.Fatalf("%v: exit %d, want %d\n%s", step.args, r.Code, step.want, r.Stderr)
		}
		outputs = append(outputs, r.Stdout, r.Stderr)
	}
	files, _ := filepath.Glob(filepath.Join(journals, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		outputs = append(outputs, string(b))
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(password))
	for i, o := range outputs {
		if strings.Contains(o, password) || strings.Contains(o, encoded) {
			t.Errorf("output %d holds the Secret's value:\n%s", i, o)
		}
	}
	scrubbed, _ := env.Dynamic.Resource(gvrSecret).Namespace(ns).Get(labtest.Context(t), name, metav1.GetOptions{})
	if strings.Contains(scrubbed.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"], "tracking-id") {
		t.Fatalf("last-applied-configuration was not scrubbed")
	}
	if r := unprune(t, env.State.Kubeconfig, journals, "undo", "--latest", "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d", r.Code)
	}
	after, _ := env.Dynamic.Resource(gvrSecret).Namespace(ns).Get(labtest.Context(t), name, metav1.GetOptions{})
	if got := after.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; got != lastApplied {
		t.Fatalf("undo did not restore last-applied byte for byte:\n got %q\nwant %q", got, lastApplied)
	}
	if fmt.Sprint(after.GetLabels()) != fmt.Sprint(before.GetLabels()) || after.GetAnnotations()["argocd.argoproj.io/tracking-id"] != before.GetAnnotations()["argocd.argoproj.io/tracking-id"] {
		t.Fatalf("undo: labels %v, annotations %v", after.GetLabels(), after.GetAnnotations())
	}
}

// grantReader gives a user read access to everything, and nothing else.
func grantReader(t *testing.T, env *labtest.Env, user string) {
	t.Helper()
	env.EnsureReaderRole(t)
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": labtest.ReaderRole + "-" + user},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": labtest.ReaderRole},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}
	if err := env.Create(labtest.Context(t), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// probeRow runs audit --probe -o json (as a user, when given) and returns the row for a namespace.
func probeRow(t *testing.T, env *labtest.Env, as, ns string, extra ...string) (printer.AuditItem, int) {
	t.Helper()
	args := []string{"audit", "--probe", "-o", "json"}
	if as != "" {
		args = append([]string{"--as=" + as}, args...)
	}
	r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), append(args, extra...)...)
	var doc printer.AuditReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("audit (exit %d): %v\n%s", r.Code, err, r.Stderr)
	}
	for _, it := range doc.Items {
		if it.Resource.Kind == "Namespace" && it.Resource.Name == ns {
			return it, r.Code
		}
	}
	t.Fatalf("audit does not list namespace %s", ns)
	return printer.AuditItem{}, r.Code
}

// TestProbeIsNotFooledByTheProbersRights: a user who may not delete gets no "guarded" from RBAC:
// the probe says it cannot judge and --fail-on any exits 1 (ExitFindings: an unjudged deletion
// counts as unguarded). With unprune's policy installed and the namespace protected, the row is
// guarded for the admin (the API server denies; exit 0) and for the viewer (the policy unprune
// recognises). No controller runs here and the seeded installation has no controller
// ServiceAccount, so every probe is the prober's own (test/e2e probes as the controller). The
// audits name the app: other tests' apps in the shared namespace must not change the exit code.
func TestProbeIsNotFooledByTheProbersRights(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "probed", "probed-a")
	grantReader(t, env, "viewer")
	var row printer.AuditItem
	var code int
	labtest.Eventually(t, 30*time.Second, "the viewer's binding to take effect", func() (bool, string) {
		r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "--as=viewer", "audit")
		return r.Code == cli.ExitOK, r.Stderr
	})
	row, code = probeRow(t, env, "viewer", s.Namespaces[0], s.App, "--fail-on=any")
	if code != cli.ExitFindings || row.Guarded || row.Probe == nil || row.Probe.Result != "Inconclusive" || row.Probe.As != "" {
		t.Fatalf("viewer: exit %d, row %+v; want exit %d and an inconclusive, unguarded row", code, row, cli.ExitFindings)
	}
	if row, code = probeRow(t, env, "", s.Namespaces[0], s.App, "--fail-on=any"); code != cli.ExitFindings || row.Guarded || row.Probe == nil || row.Probe.Result != "Allowed" {
		t.Fatalf("admin before the policy: exit %d, row %+v; want exit %d and an allowed, unguarded row", code, row, cli.ExitFindings)
	}

	journals := labtest.TempDir(t)
	if r := unprune(t, env.State.Kubeconfig, journals, "guard", "policy", "--apply", "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("guard policy exit %d", r.Code)
	}
	t.Cleanup(func() {
		// A guard journal restores no tracking: its undo needs no Argo CD and must simply work.
		if r := unprune(t, env.State.Kubeconfig, journals, "undo", "--latest", "--yes"); r.Code != cli.ExitOK {
			t.Errorf("undo of the guard journal: exit %d, want %d\n%s", r.Code, cli.ExitOK, r.Stderr)
		}
	})
	if r := unprune(t, env.State.Kubeconfig, journals, "guard", "protect", "ns/"+s.Namespaces[0], "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("guard protect exit %d", r.Code)
	}
	labtest.Eventually(t, 60*time.Second, "the admin's probe to be denied by the policy", func() (bool, string) {
		row, code = probeRow(t, env, "", s.Namespaces[0], s.App, "--fail-on=any")
		return row.Guarded && row.Probe != nil && row.Probe.Result == "Denied", fmt.Sprintf("exit %d, %+v", code, row)
	})
	if code != cli.ExitOK {
		t.Fatalf("admin with the policy: exit %d; want %d (nothing unguarded)", code, cli.ExitOK)
	}
	row, code = probeRow(t, env, "viewer", s.Namespaces[0], s.App, "--fail-on=any")
	if code != cli.ExitOK || !row.Guarded || !hasGuard(row, "AdmissionPolicy") {
		t.Fatalf("viewer with the policy: exit %d, row %+v; want exit %d, guarded by the recognised policy", code, row, cli.ExitOK)
	}
}

func hasGuard(row printer.AuditItem, g string) bool {
	for _, x := range row.Guards {
		if x == g {
			return true
		}
	}
	return false
}

// TestJournalsAreInputs: undo refuses a journal others can write, and one edited to restore
// tracking naming another app; nothing changes either way.
func TestJournalsAreInputs(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "inputs", "inputs-a")
	journals := labtest.TempDir(t)
	if r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes", "--wait=false"); r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 {
		t.Fatalf("journals %v", paths)
	}
	path := paths[0]
	released := namespace(t, env, "inputs-a").GetResourceVersion()

	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	r := unprune(t, env.State.Kubeconfig, journals, "undo", path, "--yes")
	if r.Code != cli.ExitFailure || !strings.Contains(r.Stderr, "writable by other users") {
		t.Errorf("world-writable journal: exit %d\n%s", r.Code, r.Stderr)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	edited := strings.ReplaceAll(string(raw), "inputs:/Namespace:default/inputs-a", "attacker:/Namespace:default/inputs-a")
	if edited == string(raw) {
		t.Fatal("the journal does not hold the tracking-id to edit")
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	r = unprune(t, env.State.Kubeconfig, journals, "undo", path, "--yes")
	if r.Code != cli.ExitRefused || !strings.Contains(r.Stdout, "names app instance") {
		t.Errorf("edited journal: exit %d\n%s", r.Code, r.Stdout)
	}
	if got := namespace(t, env, "inputs-a").GetResourceVersion(); got != released {
		t.Errorf("undo changed the namespace (resourceVersion %s → %s)", released, got)
	}
}

// TestJournalEditedConsistentlyIsRefused: a journal whose app name is replaced everywhere — the
// tracking values too — agrees with itself, so only Argo CD can tell: no such Application exists in
// the journal's installation, and undo refuses (exit 3) without touching the namespace. The
// journal as written is then undone, so the refusal is the check's and not some other failure's.
func TestJournalEditedConsistentlyIsRefused(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "consistent", "edited-a")
	journals := labtest.TempDir(t)
	if r := unprune(t, env.State.Kubeconfig, journals, "detach", s.App, "--all", "--yes", "--wait=false"); r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d\n%s", r.Code, r.Stderr)
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 {
		t.Fatalf("journals %v", paths)
	}
	path := paths[0]
	released := namespace(t, env, "edited-a")
	raw, _ := os.ReadFile(path)
	edited := strings.ReplaceAll(string(raw), "consistent", "phantom")
	if strings.Count(edited, "phantom") < 4 {
		t.Fatalf("the journal does not name the app in its entry and tracking values:\n%s", raw)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"undo", path}, {"undo", path, "--yes"}} {
		r := unprune(t, env.State.Kubeconfig, journals, args...)
		if r.Code != cli.ExitRefused || !strings.Contains(r.Stdout, "Application argocd/phantom does not exist") {
			t.Errorf("%v: exit %d, want %d and the missing app named\n%s\n%s", args, r.Code, cli.ExitRefused, r.Stdout, r.Stderr)
		}
	}
	after := namespace(t, env, "edited-a")
	if after.GetResourceVersion() != released.GetResourceVersion() || after.GetLabels()["app.kubernetes.io/instance"] != "" {
		t.Fatalf("undo changed the namespace: resourceVersion %s → %s, labels %v", released.GetResourceVersion(), after.GetResourceVersion(), after.GetLabels())
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := unprune(t, env.State.Kubeconfig, journals, "undo", path, "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("undo of the journal as written: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := namespace(t, env, "edited-a").GetAnnotations()["argocd.argoproj.io/tracking-id"]; got != "consistent:/Namespace:default/edited-a" {
		t.Fatalf("tracking-id after undo: %q", got)
	}
}

// TestClusterValuesPrintEscaped: a tracking-id carrying terminal escape sequences is shown escaped
// in scan and detach, never passed to the terminal.
func TestClusterValuesPrintEscaped(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	s := seed(t, env, "escaped", "escaped-a")
	evil := "escaped:/Namespace:default/escaped-a\x1b]0;pwned\x07\x1b[2J"
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"argocd.argoproj.io/tracking-id": evil}}})
	if _, err := env.Dynamic.Resource(labtest.GVRNamespace).Patch(labtest.Context(t), s.Namespaces[0], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"scan", "-o", "wide"}, {"detach", s.App, "--all"}, {"detach", s.App, "--all", "-o", "json"}} {
		r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), args...)
		if strings.ContainsAny(r.Stdout+r.Stderr, "\x1b\x07") {
			t.Errorf("%v printed a raw escape sequence:\n%q", args, r.Stdout+r.Stderr)
		}
		if !strings.Contains(r.Stdout+r.Stderr, `\x1b`) && !strings.Contains(r.Stdout, `\u001b`) {
			t.Errorf("%v does not show the escape escaped:\n%s", args, r.Stdout)
		}
	}
}

// TestSIGTERMDuringALargeDetach: SIGTERM stops a 500-object detach at once: exit 4 within a couple of
// seconds, the journal matches the cluster object by object, and a rerun finishes the job while the
// app's status still lists what the first run released.
func TestSIGTERMDuringALargeDetach(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	const app, ns, n = "sigterm", "sigterm-objects", 500
	_, rows := seedTrackedConfigMaps(t, env, app, ns, n)
	env.SeedApplication(t, argocdNamespace, app, map[string]any{}, rows)

	bin := cmdtest.Build(t)
	journals := labtest.TempDir(t)
	// A slow rate keeps the run long enough to be interrupted in the middle.
	cmd := exec.Command(bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--qps=40", "--burst=1",
		"detach", app, "--all", "--yes", "--wait=false")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cms := env.Kube.CoreV1().ConfigMaps(ns)
	released := func() int { return countReleased(configMapMetadata(t, env, ns)) }
	labtest.Eventually(t, 60*time.Second, "the detach to be under way", func() (bool, string) {
		c := released()
		return c >= 50, fmt.Sprint(c, " released")
	})
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(sent)
	code := cmd.ProcessState.ExitCode()
	if code != cli.ExitPartial || took > 3*time.Second {
		t.Fatalf("after SIGTERM: exit %d (%v) after %s; want %d within a few seconds\n%s", code, err, took, cli.ExitPartial, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "undo") {
		t.Errorf("stderr does not say it was interrupted and how to resume or undo:\n%s", stderr.String())
	}
	paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
	if len(paths) != 1 {
		t.Fatalf("journals %v", paths)
	}
	j, torn, err := journal.NewStore(journals, nil).Load(paths[0])
	if err != nil || torn {
		t.Fatalf("journal: %v (torn %v)", err, torn)
	}
	applied := 0
	for _, e := range j.Entries {
		cm, err := cms.Get(labtest.Context(t), e.Object.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, tracked := cm.Labels["app.kubernetes.io/instance"]
		switch e.State {
		case journal.StateApplied:
			applied++
			if tracked {
				t.Errorf("%s: journal says applied, still tracked", e.Object.Name)
			}
		case journal.StateSkipped:
			if !tracked {
				t.Errorf("%s: journal says not sent, but it was released", e.Object.Name)
			}
		default:
			t.Errorf("%s: state %s after SIGTERM", e.Object.Name, e.State)
		}
	}
	if applied == 0 || applied == n {
		t.Fatalf("%d of %d applied: the run was not interrupted in the middle", applied, n)
	}
	// No controller compares here, as with a stopped one: the app's status still lists the released
	// objects, and the rerun must finish the job all the same.
	if r := unprune(t, env.State.Kubeconfig, journals, "detach", app, "--all", "--yes", "--wait=false"); r.Code != cli.ExitOK {
		t.Fatalf("rerun exit %d", r.Code)
	}
	if got := released(); got != n {
		t.Fatalf("after the rerun %d of %d released", got, n)
	}
}
