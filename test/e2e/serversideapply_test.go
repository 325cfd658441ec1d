//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// argocdManager is the field manager of Argo CD's server-side apply (argo-cd common/common.go,
// ArgoCDSSAManager).
const argocdManager = "argocd-controller"

// ssaCase is an Application with ServerSideApply=true that synced ConfigMaps whose commit was then
// reverted: they require pruning, and Argo CD's field manager owns their fields.
type ssaCase struct {
	env      *labtest.Env
	install  *labtest.Install
	app      *labtest.App
	names    []string
	reverted string
	uids     map[string]string
}

func newSSACase(t *testing.T, env *labtest.Env, prefixes ...string) *ssaCase {
	t.Helper()
	return newSSACaseIn(t, env, env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"}), labtest.AppOptions{}, prefixes...)
}

// newSSACaseIn is newSSACase for an app of install with opts (its repo and sync options are set here).
func newSSACaseIn(t *testing.T, env *labtest.Env, install *labtest.Install, opts labtest.AppOptions, prefixes ...string) *ssaCase {
	t.Helper()
	opts.Repo, opts.SyncOptions = labtest.NewRepo(t), []string{"ServerSideApply=true"}
	app := install.CreateApp(t, opts)
	c := &ssaCase{env: env, install: install, app: app, uids: map[string]string{}}
	for _, p := range prefixes {
		name := labtest.UniqueName(p)
		c.names = append(c.names, name)
		app.Repo.Write(t, app.Path+"/"+name+".yaml", c.manifest(name, "blue", false))
	}
	added := app.Repo.Commit(t, "add ConfigMaps "+strings.Join(c.names, ", "))
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+added, func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of %s: %s %s", added, op.Phase, op.Message)
	}
	app.WaitSynced(t, added)
	for _, name := range c.names {
		cm := c.get(t, name)
		t.Logf("%s after Argo CD's server-side sync: managedFields %s", name, managedJSON(t, cm.ManagedFields))
		if entriesOf(cm, argocdManager, "Apply") == 0 {
			t.Fatalf("Argo CD did not apply %s server-side", name)
		}
		c.uids[name] = string(cm.UID)
	}
	c.reverted = app.Repo.Revert(t)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning of the ConfigMaps", func(s labtest.Status) bool {
		for _, name := range c.names {
			if !labtest.RequiresPruningAt(c.reverted, "ConfigMap", name)(s) {
				return false
			}
		}
		return true
	})
	return c
}

// manifest is a ConfigMap as git had it (blue), or as the team's pipeline applies it.
func (c *ssaCase) manifest(name, color string, team bool) string {
	labels := ""
	if team {
		labels = "  labels:\n    owner: team-pipeline\n"
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n%sdata:\n  color: %s\n",
		name, c.app.DestNamespace, labels, color)
}

func (c *ssaCase) get(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.env.Kube.CoreV1().ConfigMaps(c.app.DestNamespace).Get(labtest.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// teamApply server-side applies the team's changed manifest (another color) as another field
// manager, without --force-conflicts, and returns kubectl's output and whether it succeeded.
func (c *ssaCase) teamApply(t *testing.T, name string) (string, bool) {
	t.Helper()
	path := filepath.Join(labtest.TempDir(t), name+".yaml")
	if err := os.WriteFile(path, []byte(c.manifest(name, "green", true)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(c.env.State.Kubectl, "--kubeconfig", c.env.State.Kubeconfig, "apply", "--server-side",
		"--field-manager=team-pipeline", "-f", path).CombinedOutput()
	t.Logf("kubectl apply --server-side --field-manager=team-pipeline %s: %v\n%s", name, err, out)
	return string(out), err == nil
}

// TestServerSideApplyDetach: after detach, another server-side applier takes over the fields Argo
// CD applied, without --force-conflicts — on an object Argo CD was the only manager of, and on one
// another tool wrote to after the release, whose entry stays byte for byte. The objects keep their
// UID and data; the app is Synced; undo gives Argo CD's entries back.
func TestServerSideApplyDetach(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	c := newSSACase(t, env, "only-argocd", "labelled")
	alone, labelled := c.names[0], c.names[1]
	kubectl(t, env, "--kubeconfig", env.State.Kubeconfig, "-n", c.app.DestNamespace, "label", "configmap", labelled,
		"team=payments", "--field-manager=team-labeler")
	before := map[string]*corev1.ConfigMap{alone: c.get(t, alone), labelled: c.get(t, labelled)}
	journals := labtest.TempDir(t)
	argocdNS := "--argocd-namespace=" + c.install.Namespace()

	r := unprune(t, env, journals, "detach", c.app.Name, "--all", argocdNS)
	if r.Code != cli.ExitFindings || strings.Count(r.Stdout, "managedFields: remove entries of argocd-controller (Apply, v1)") < 2 {
		t.Fatalf("preview exit %d, want %d and the managedFields change named for both", r.Code, cli.ExitFindings)
	}
	if strings.Contains(r.Stdout, "f:data") {
		t.Error("the preview shows fieldsV1")
	}
	// The API server judges the patches, managedFields included, and keeps nothing.
	r = unprune(t, env, journals, "detach", c.app.Name, "--all", argocdNS, "--dry-run=server")
	if r.Code != cli.ExitFindings || strings.Count(r.Stdout, "DryRunAccepted") != 2 {
		t.Fatalf("--dry-run=server exit %d, want %d with both accepted", r.Code, cli.ExitFindings)
	}
	for _, name := range c.names {
		if got := c.get(t, name); managedJSON(t, got.ManagedFields) != managedJSON(t, before[name].ManagedFields) {
			t.Fatalf("%s: a server dry run changed managedFields: %s", name, managedJSON(t, got.ManagedFields))
		}
	}
	r = unprune(t, env, journals, "detach", c.app.Name, "--all", argocdNS, "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach --yes exit %d, want 0", r.Code)
	}
	c.app.WaitSynced(t, c.reverted)
	for _, name := range c.names {
		after := c.get(t, name)
		t.Logf("%s after detach: managedFields %s", name, managedJSON(t, after.ManagedFields))
		if n := entriesOf(after, argocdManager, ""); n != 0 {
			t.Fatalf("%s: %d entries of %s left after detach", name, n, argocdManager)
		}
		if string(after.UID) != c.uids[name] || after.Data["color"] != "blue" {
			t.Fatalf("%s changed: uid %s → %s, data %v", name, c.uids[name], after.UID, after.Data)
		}
		for _, e := range before[name].ManagedFields {
			if e.Manager != argocdManager && !hasEntry(t, after, e) {
				t.Errorf("%s: the entry of %s changed or went: before %s", name, e.Manager, managedJSON(t, before[name].ManagedFields))
			}
		}
	}
	if !hasPlaceholder(c.get(t, alone)) {
		t.Errorf("%s: want unprune's placeholder in place of Argo CD's only entry", alone)
	}

	for _, name := range c.names {
		if out, ok := c.teamApply(t, name); !ok {
			t.Fatalf("the team's server-side apply of %s conflicts after detach:\n%s", name, out)
		}
		if got := c.get(t, name); got.Data["color"] != "green" || string(got.UID) != c.uids[name] {
			t.Fatalf("%s after the team's apply: data %v, uid %s", name, got.Data, got.UID)
		}
	}
	if s := c.app.Status(t); s.Sync != "Synced" {
		t.Errorf("the app after the team's apply: %s", s)
	}

	r = unprune(t, env, journals, "undo", "--latest", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("undo exit %d, want 0", r.Code)
	}
	for _, name := range c.names {
		restored := c.get(t, name)
		t.Logf("%s after undo: managedFields %s", name, managedJSON(t, restored.ManagedFields))
		if restored.Annotations[trackingID] != before[name].Annotations[trackingID] {
			t.Errorf("%s after undo: tracking-id %q, want %q", name, restored.Annotations[trackingID], before[name].Annotations[trackingID])
		}
		for _, e := range before[name].ManagedFields {
			if e.Manager == argocdManager && !hasEntryFor(restored, e) {
				t.Errorf("%s: undo did not give back %s's %s entry", name, e.Manager, e.Operation)
			}
		}
	}
	if hasPlaceholder(c.get(t, alone)) {
		t.Errorf("%s: undo left the placeholder", alone)
	}
}

// TestServerSideApplyManualRitual is the control: stripping the tracking by hand releases the
// object from the app, but Argo CD's field manager still owns its fields, so the team's
// server-side apply of a changed manifest conflicts. Resetting managedFields ([{}]) by hand as well
// does not help either: the API server then gives every field to before-first-apply at the next
// apply — why detach leaves a placeholder entry when Argo CD's were the only ones.
func TestServerSideApplyManualRitual(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	c := newSSACase(t, env, "ritual", "reset")
	ritual, reset := c.names[0], c.names[1]
	for _, name := range c.names {
		kubectl(t, env, "--kubeconfig", env.State.Kubeconfig, "-n", c.app.DestNamespace, "annotate", "configmap", name, trackingID+"-")
	}
	kubectl(t, env, "--kubeconfig", env.State.Kubeconfig, "-n", c.app.DestNamespace, "patch", "configmap", reset,
		"--type=merge", "-p", `{"metadata":{"managedFields":[{}]}}`)
	if n := len(c.get(t, reset).ManagedFields); n != 0 {
		t.Fatalf("%s: %d managedFields entries after the reset", reset, n)
	}
	c.app.WaitSynced(t, c.reverted)
	for name, owner := range map[string]string{ritual: argocdManager, reset: "before-first-apply"} {
		out, ok := c.teamApply(t, name)
		if ok || !strings.Contains(out, "conflict") || !strings.Contains(out, owner) {
			t.Errorf("%s: want a conflict with %s after the manual ritual, got success=%t:\n%s", name, owner, ok, out)
		}
	}
}

// TestServerSideApplyDetachThroughArgoCDsAPI: the same release through Argo CD's API (as the argocd
// plugin): Argo CD returns the live object with its managedFields and passes the merge patch to the
// destination unchanged, so the team's server-side apply succeeds afterwards there too.
func TestServerSideApplyDetachThroughArgoCDsAPI(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-api", Server: true})
	c := newSSACaseIn(t, env, install, labtest.AppOptions{Project: lab.ServerProject}, "via-api")
	name := c.names[0]
	server := strings.TrimPrefix(install.ServerURL(t), "http://")
	r := cmdtest.RunNamed(t, cli.NameArgoCDPlugin, labtest.TempDir(t),
		"--server", server, "--plaintext", "--auth-token", install.Token(t, lab.ServerDeployer), "detach", c.app.Name, "--all", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach through Argo CD's API: exit %d, want 0", r.Code)
	}
	after := c.get(t, name)
	t.Logf("%s after detach through the API: managedFields %s", name, managedJSON(t, after.ManagedFields))
	if n := entriesOf(after, argocdManager, ""); n != 0 || !hasPlaceholder(after) {
		t.Fatalf("%s: %d entries of %s left, placeholder %t", name, n, argocdManager, hasPlaceholder(after))
	}
	if out, ok := c.teamApply(t, name); !ok {
		t.Fatalf("the team's server-side apply conflicts after a detach through the API:\n%s", out)
	}
}

func entriesOf(cm *corev1.ConfigMap, manager, operation string) int {
	n := 0
	for _, e := range cm.ManagedFields {
		if e.Manager == manager && (operation == "" || string(e.Operation) == operation) {
			n++
		}
	}
	return n
}

// hasPlaceholder reports whether cm holds the entry detach puts in place of Argo CD's when those
// were the only ones: unprune's, owning only metadata. (Undo's own write of the tracking key makes
// an entry of unprune too, owning that key.)
func hasPlaceholder(cm *corev1.ConfigMap) bool {
	for _, e := range cm.ManagedFields {
		if e.Manager == "unprune" && e.Operation == metav1.ManagedFieldsOperationUpdate && e.FieldsV1 != nil && string(e.FieldsV1.Raw) == `{"f:metadata":{}}` {
			return true
		}
	}
	return false
}

// hasEntry reports whether cm holds e exactly: the same JSON, fieldsV1 and time included.
func hasEntry(t *testing.T, cm *corev1.ConfigMap, e metav1.ManagedFieldsEntry) bool {
	want := managedJSON(t, []metav1.ManagedFieldsEntry{e})
	for _, got := range cm.ManagedFields {
		if managedJSON(t, []metav1.ManagedFieldsEntry{got}) == want {
			return true
		}
	}
	return false
}

// hasEntryFor reports whether cm holds an entry of e's manager, operation, API version and
// subresource with e's time: the API server keeps one entry per those.
func hasEntryFor(cm *corev1.ConfigMap, e metav1.ManagedFieldsEntry) bool {
	for _, got := range cm.ManagedFields {
		if got.Manager == e.Manager && got.Operation == e.Operation && got.APIVersion == e.APIVersion && got.Subresource == e.Subresource &&
			got.Time.Equal(e.Time) {
			return true
		}
	}
	return false
}

func managedJSON(t *testing.T, entries []metav1.ManagedFieldsEntry) string {
	t.Helper()
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
