//go:build lab

package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
)

// The releases the rename and move safety rules are proven on: the newest line, and the incident's
// with label tracking (where the tracking label is the one Helm charts set too).
var safetyCells = []struct{ version, tracking string }{{"v3.6.1", "annotation"}, {"v2.14.11", "label"}}

// helmWeb is a chart template of Deployment <release>-web, selected and labelled by the release name
// as `helm create` does: a release name that changes changes its selector and pod template.
const helmWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:{{ .Values.tag }}
`

// ownedReplicaSets are the names and UIDs of the ReplicaSets a Deployment owns: a rollout adds one.
func ownedReplicaSets(t *testing.T, c *labtest.Cluster, dep object) []string {
	t.Helper()
	list, err := c.Kube.AppsV1().ReplicaSets(dep.namespace).List(labtest.Context(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range list.Items {
		for _, o := range rs.OwnerReferences {
			if o.Kind == "Deployment" && o.Name == dep.name {
				out = append(out, rs.Name+"/"+string(rs.UID))
			}
		}
	}
	slices.Sort(out)
	return out
}

// waitDeploymentSettled waits until kube-controller-manager's deployment controller has done its
// writes on a new Deployment: one ReplicaSet, the Deployment's revision annotation, and a status
// that has observed its generation and counts every replica. The controller writes the annotation
// and status after it creates the ReplicaSet, so a snapshot of labels, annotations or
// resourceVersion taken before this would see a write of the controller's as a change of ours.
// In the lab no kubelet runs, so the pods stay Pending and the Deployment writes nothing further.
func waitDeploymentSettled(t *testing.T, c *labtest.Cluster, dep object) {
	t.Helper()
	labtest.Eventually(t, 2*time.Minute, "the deployment controller to settle "+dep.String(), func() (bool, string) {
		d, err := c.Kube.AppsV1().Deployments(dep.namespace).Get(labtest.Context(t), dep.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		rs := ownedReplicaSets(t, c, dep)
		state := fmt.Sprintf("replicasets %v, revision %q, observed generation %d of %d, replicas %d/%d updated %d",
			rs, d.Annotations["deployment.kubernetes.io/revision"], d.Status.ObservedGeneration, d.Generation,
			d.Status.Replicas, want, d.Status.UpdatedReplicas)
		return len(rs) == 1 && d.Annotations["deployment.kubernetes.io/revision"] != "" &&
			d.Status.ObservedGeneration >= d.Generation && d.Status.Replicas == want && d.Status.UpdatedReplicas == want, state
	})
}

// metadataSnapshot is every object's labels and annotations.
func metadataSnapshot(t *testing.T, c *labtest.Cluster, objects []object) map[object][2]map[string]string {
	t.Helper()
	out := map[object][2]map[string]string{}
	for _, o := range objects {
		m, err := o.meta(t, c)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		out[o] = [2]map[string]string{maps.Clone(m.Labels), maps.Clone(m.Annotations)}
	}
	return out
}

// wantSnapshot checks every object's labels and annotations are exactly as snapshot recorded.
func wantSnapshot(t *testing.T, c *labtest.Cluster, snapshot map[object][2]map[string]string) {
	t.Helper()
	for o, want := range snapshot {
		m, err := o.meta(t, c)
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		if !maps.Equal(m.Labels, want[0]) || !maps.Equal(m.Annotations, want[1]) {
			t.Errorf("%s: labels %v annotations %v, were %v %v", o, m.Labels, m.Annotations, want[0], want[1])
		}
	}
}

// appPolicy is an Application's finalizers and automated sync policy, as JSON-ish text.
func appPolicy(t *testing.T, env *labtest.Env, namespace, name string) (string, bool) {
	t.Helper()
	obj, ok := appExists(t, env, namespace, name)
	if !ok {
		return "", false
	}
	meta, spec := obj["metadata"].(map[string]any), obj["spec"].(map[string]any)
	return fmt.Sprint(meta["finalizers"], " ", spec["syncPolicy"]), true
}

// TestRenameHelmChartApp: an app of a real Helm chart whose objects are named and selected from the
// release name — the resources finalizer, automated prune and self-heal, a Deployment, a ConfigMap,
// a Secret. The rename pins helm.releaseName to the old name, so the new app renders the same
// objects: every UID unchanged, no rollout, nothing deleted at any moment, the new app Synced; undo
// brings back exactly what was.
func TestRenameHelmChartApp(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking})
			repo := labtest.NewRepo(t)
			repo.WriteHelmChart(t, "chart", labtest.HelmChart{Name: "shop", Values: "tag: \"1\"\ngreeting: hello\n", Templates: map[string]string{
				"config.yaml": labtest.HelmConfigMap("config", map[string]string{"greeting": "{{ .Values.greeting | quote }}"}),
				"secret.yaml": labtest.HelmSecret("secret", map[string]string{"password": `"s3cret"`}),
				"web.yaml":    helmWeb,
			}})
			app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "chart", Automated: true, AutoPrune: true, SelfHeal: true,
				Finalizers: []string{resourcesFinalizer}})
			t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
			rev := repo.Head(t)
			ns := app.DestNamespace
			objects := []object{{kind: "ConfigMap", namespace: ns, name: app.Name + "-config"}, {kind: "Secret", namespace: ns, name: app.Name + "-secret"},
				{kind: "Deployment", namespace: ns, name: app.Name + "-web"}}
			app.RefreshUntil(t, labtest.ControllerTimeout, "to sync the chart", func(s labtest.Status) bool {
				for _, o := range objects {
					if r, ok := s.Find(o.kind, o.name); !ok || r.Status != "Synced" {
						return false
					}
				}
				return s.Revision == rev && s.Sync == "Synced" && s.Idle()
			})
			web := objects[2]
			waitDeploymentSettled(t, env.Cluster, web)
			rsBefore := ownedReplicaSets(t, env.Cluster, web)
			snapshot := metadataSnapshot(t, env.Cluster, objects)
			policy, _ := appPolicy(t, env, app.Namespace, app.Name)
			stop := watchNothingDeleted(t, env.Cluster, objects...)
			newName := labtest.UniqueName("shop-renamed")
			t.Cleanup(func() { dropApp(env, app.Namespace, newName) })
			journals := labtest.TempDir(t)
			ns0 := "--argocd-namespace=" + install.Namespace()

			// The control: without the pinned release name the chart renders other objects under the
			// new name, and the rename is refused at its first check, changing nothing.
			if r := unprune(t, env, labtest.TempDir(t), ns0, "rename", app.Name, newName, "--keep-release-name=false", "--yes", "--timeout", "3m"); r.Code != 3 ||
				!strings.Contains(r.Stdout, newName+"-web") {
				t.Fatalf("rename without the release name: exit %d, want 3 naming %s-web", r.Code, newName)
			}
			if _, ok := appExists(t, env, app.Namespace, newName); ok {
				t.Fatal("the refused rename left the new app behind")
			}
			wantSnapshot(t, env.Cluster, snapshot)

			r := unprune(t, env, journals, ns0, "rename", app.Name, newName, "--yes", "--timeout", "3m")
			if r.Code != 0 {
				t.Fatalf("rename: exit %d", r.Code)
			}
			if !strings.Contains(r.Stdout, fmt.Sprintf("helm.releaseName %q", app.Name)) {
				t.Errorf("the plan does not say the release name is pinned:\n%s", r.Stdout)
			}
			renamed := &labtest.App{Install: install, Name: newName, Namespace: app.Namespace, Repo: repo, Path: "chart"}
			s := renamed.WaitSynced(t, rev)
			obj, ok := appExists(t, env, app.Namespace, newName)
			if !ok {
				t.Fatal("the new app is not there")
			}
			src := obj["spec"].(map[string]any)["source"].(map[string]any)
			if helm, _ := src["helm"].(map[string]any); helm == nil || helm["releaseName"] != app.Name {
				t.Errorf("the new app's helm source: %v", src["helm"])
			}
			if got, _ := appPolicy(t, env, app.Namespace, newName); got != policy {
				t.Errorf("the new app's finalizers and policy %s, were %s", got, policy)
			}
			if a := obj["metadata"].(map[string]any)["annotations"]; a != nil && a.(map[string]any)["unprune.dev/rename-journal"] != nil {
				t.Errorf("the new app kept the rename's mark: %v", a)
			}
			if _, ok := appExists(t, env, app.Namespace, app.Name); ok {
				t.Error("the old Application still exists")
			}
			for _, o := range objects {
				m, _ := o.meta(t, env.Cluster)
				if !trackedBy(m, cell.tracking, renamed.Instance()) {
					t.Errorf("%s after the rename: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
				if row, ok := s.Find(o.kind, o.name); !ok || row.Status != "Synced" {
					t.Errorf("the new app's row for %s: %+v (listed %t)", o, row, ok)
				}
			}
			if got := ownedReplicaSets(t, env.Cluster, web); !slices.Equal(got, rsBefore) {
				t.Errorf("a rollout: ReplicaSets %v, were %v", got, rsBefore)
			}

			if r := unprune(t, env, journals, ns0, "undo", "--latest", "--yes"); r.Code != 0 {
				t.Fatalf("undo: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, app.Namespace, newName); ok {
				t.Error("the new Application is still there after undo")
			}
			if got, ok := appPolicy(t, env, app.Namespace, app.Name); !ok || got != policy {
				t.Errorf("the old app after undo: %s (exists %t), was %s", got, ok, policy)
			}
			app.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced after undo", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == rev })
			wantSnapshot(t, env.Cluster, snapshot)
			if got := ownedReplicaSets(t, env.Cluster, web); !slices.Equal(got, rsBefore) {
				t.Errorf("a rollout after undo: ReplicaSets %v, were %v", got, rsBefore)
			}
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestRenameOfANameFedJsonnetAppIsRefused: a jsonnet app names its objects from $ARGOCD_APP_NAME, so
// under the new name it renders other objects, and the rename would prune the old ones once the
// new app's automated prune came back. The rename stops at its first check: exit 3, the names that
// differ said, and every object, the old app and its automation as they were; nothing created.
func TestRenameOfANameFedJsonnetAppIsRefused(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking})
			repo := labtest.NewRepo(t)
			dest := labtest.UniqueName("jsonnet")
			repo.Write(t, "app/settings.jsonnet", fmt.Sprintf(`local app = std.extVar('app');
[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: app + '-settings', namespace: %q}, data: {owner: app}}]
`, dest))
			app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "app", DestNamespace: dest, Automated: true, AutoPrune: true, SelfHeal: true,
				Finalizers: []string{resourcesFinalizer}, JsonnetExtVars: map[string]string{"app": "$ARGOCD_APP_NAME"}})
			t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
			rev := repo.Head(t)
			settings := object{kind: "ConfigMap", namespace: dest, name: app.Name + "-settings"}
			objects := []object{settings, {kind: "ConfigMap", namespace: dest, name: app.Name + "-config"}}
			app.RefreshUntil(t, labtest.ControllerTimeout, "to sync the jsonnet", func(s labtest.Status) bool {
				_, ok := s.Find("ConfigMap", settings.name)
				return ok && s.Revision == rev && s.Sync == "Synced" && s.Idle()
			})
			snapshot := metadataSnapshot(t, env.Cluster, objects)
			policy, _ := appPolicy(t, env, app.Namespace, app.Name)
			stop := watchNothingDeleted(t, env.Cluster, objects...)
			newName := labtest.UniqueName("settings-renamed")
			t.Cleanup(func() { dropApp(env, app.Namespace, newName) })

			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "rename", app.Name, newName, "--yes", "--timeout", "2m")
			if r.Code != 3 {
				t.Fatalf("rename: exit %d, want 3", r.Code)
			}
			for _, name := range []string{newName + "-settings", settings.name} {
				if !strings.Contains(r.Stdout, name) {
					t.Errorf("the refusal does not name %s:\n%s", name, r.Stdout)
				}
			}
			if _, ok := appExists(t, env, app.Namespace, newName); ok {
				t.Error("the new app was left behind")
			}
			if got, ok := appPolicy(t, env, app.Namespace, app.Name); !ok || got != policy {
				t.Errorf("the old app: %s (exists %t), was %s", got, ok, policy)
			}
			wantSnapshot(t, env.Cluster, snapshot)
			if _, err := env.Kube.CoreV1().ConfigMaps(dest).Get(labtest.Context(t), newName+"-settings", metav1.GetOptions{}); err == nil {
				t.Error("the new app's rendering was applied")
			}
			app.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced still", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == rev })
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestMovePrepareRefusesAMarkArgoCDResets: the object's manifest sets sync-options
// (SkipDryRunOnMissingResource=true), and its app syncs automatically with self-heal. A mark in that
// annotation would show the object OutOfSync and be written over within seconds, after which the
// commit's prune would delete it. prepare refuses (exit 3) and changes nothing; the app stays
// Synced and the object as it was.
func TestMovePrepareRefusesAMarkArgoCDResets(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking})
			repo := labtest.NewRepo(t)
			a := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "a", Automated: true, AutoPrune: true, SelfHeal: true})
			b := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "b"})
			cm := object{kind: "ConfigMap", namespace: a.DestNamespace, name: labtest.UniqueName("marked")}
			repo.Write(t, "a/cm.yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n"+
				"    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true\ndata:\n  color: blue\n", cm.name, cm.namespace))
			rev := repo.Commit(t, "a ConfigMap whose manifest sets sync-options")
			a.RefreshUntil(t, labtest.ControllerTimeout, "to sync it", func(s labtest.Status) bool {
				r, ok := s.Find("ConfigMap", cm.name)
				return ok && r.Status == "Synced" && s.Revision == rev && s.Idle()
			})
			snapshot := metadataSnapshot(t, env.Cluster, []object{cm})
			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+install.Namespace(), "move", a.Name, cm.resourceArg(), "--to", b.Namespace+"/"+b.Name, "--prepare", "--yes")
			if r.Code != 3 || !strings.Contains(r.Stdout, "MarkRevertedByArgoCD") && !strings.Contains(r.Stdout, "would write it back") {
				t.Fatalf("prepare: exit %d, want 3 saying Argo CD writes the mark back", r.Code)
			}
			wantSnapshot(t, env.Cluster, snapshot)
			a.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced still", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == rev })
		})
	}
}

// TestMoveToAnAutomatedTarget: the target app syncs on its own, so after the commit it applies the
// objects and takes their tracking before anyone runs the move (a move would then find nothing to
// move, and the prepare's marks would stay for ever, keeping the target from ever pruning them or
// cascading). prepare → commit → the target's sync → move: exit 0, the marks gone, each object
// tracked by the target with its UID, nothing deleted at any moment; undo puts the marks back.
func TestMoveToAnAutomatedTarget(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, cell := range safetyCells {
		t.Run(cell.version, func(t *testing.T) {
			t.Parallel()
			c := newMoveCaseWith(t, env, lab.ArgoCDConfig{Version: cell.version, Tracking: cell.tracking},
				labtest.AppOptions{Automated: true, AutoPrune: true, SelfHeal: true})
			stop := watchNothingDeleted(t, env.Cluster, c.objects...)
			ns := "--argocd-namespace=" + c.a.Install.Namespace()
			if r := unprune(t, env, c.journals, c.args("--prepare", "--yes")...); r.Code != 0 {
				t.Fatalf("prepare: exit %d", r.Code)
			}
			rev := moveFiles(t, c.repo, "a", "b", "cm.yaml", "dep.yaml")
			c.b.RefreshUntil(t, labtest.ControllerTimeout, "to take the objects over by its own sync", func(s labtest.Status) bool {
				for _, o := range c.objects {
					m, err := o.meta(t, env.Cluster)
					if r, ok := s.Find(o.kind, o.name); err != nil || !ok || r.Status != "Synced" || !trackedBy(m, c.tracking, c.b.Instance()) {
						return false
					}
				}
				return s.Revision == rev && s.Idle()
			})
			uids := map[object]string{}
			for _, o := range c.objects {
				uids[o] = o.uid(t, env.Cluster)
			}
			if r := unprune(t, env, c.journals, c.args("--yes")...); r.Code != 0 {
				t.Fatalf("move: exit %d", r.Code)
			}
			marked := metadataSnapshot(t, env.Cluster, c.objects)
			for o, md := range marked {
				if md[1][syncOptions] != "" || !trackedBy(&metav1.ObjectMeta{Labels: md[0], Annotations: md[1]}, c.tracking, c.b.Instance()) || o.uid(t, env.Cluster) != uids[o] {
					t.Errorf("%s after the move: labels %v annotations %v", o, md[0], md[1])
				}
			}
			c.b.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == rev })
			if r := unprune(t, env, c.journals, ns, "undo", "--latest", "--yes"); r.Code != 0 {
				t.Fatalf("undo: exit %d", r.Code)
			}
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				if m.Annotations[syncOptions] != "Prune=false,Delete=false" || !trackedBy(m, c.tracking, c.b.Instance()) {
					t.Errorf("%s after undo: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
			}
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestKilledRenameDeletesNothingAndUndoes: the rename's binary is killed with SIGKILL at each of its
// half-done states — the new app created (its first check running), the old app switched off, the
// tracking half rewritten, the old Application deleted (the last checks running). Lying half-done,
// with both apps compared again by Argo CD, nothing is deleted; and the undo of the journal left
// behind restores the old app, its automation and finalizers, and every tracking exactly.
func TestKilledRenameDeletesNothingAndUndoes(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	bin := cmdtest.Build(t)
	points := []killPoint{
		{"new app created", func(t *testing.T, old, next, _ string, app *labtest.App, _ []object) bool {
			_, ok := appExists(t, env, app.Namespace, next)
			return ok
		}},
		{"old app switched off", func(t *testing.T, old, next, _ string, app *labtest.App, _ []object) bool {
			obj, ok := appExists(t, env, app.Namespace, old)
			f, _ := obj["metadata"].(map[string]any)["finalizers"].([]any)
			return ok && len(f) == 0
		}},
		{"tracking half rewritten", func(t *testing.T, old, next, tracking string, app *labtest.App, objects []object) bool {
			for _, o := range objects {
				if m, err := o.meta(t, env.Cluster); err == nil && trackedBy(m, tracking, (&labtest.App{Install: app.Install, Name: next, Namespace: app.Namespace}).Instance()) {
					return true
				}
			}
			return false
		}},
		{"old app deleted", func(t *testing.T, old, next, _ string, app *labtest.App, _ []object) bool {
			_, ok := appExists(t, env, app.Namespace, old)
			return !ok
		}},
	}
	// The incident's release with label tracking, and the newest with annotation tracking.
	for _, cfg := range []lab.ArgoCDConfig{{Version: "v3.6.1", Tracking: "annotation"}, {Version: "v2.14.11", Tracking: "label"}} {
		t.Run(cfg.Version+"-"+cfg.Tracking, func(t *testing.T) {
			t.Parallel()
			killRenameAt(t, env, bin, env.ArgoCD(t, cfg), cfg.Tracking, points)
		})
	}
}

// killPoint is a half-done state of a rename to kill it in.
type killPoint struct {
	name string
	// reached reports the state to kill the rename in.
	reached func(t *testing.T, old, next, tracking string, app *labtest.App, objects []object) bool
}

func killRenameAt(t *testing.T, env *labtest.Env, bin string, install *labtest.Install, tracking string, points []killPoint) {
	for _, point := range points {
		t.Run(strings.ReplaceAll(point.name, " ", "-"), func(t *testing.T) {
			repo := labtest.NewRepo(t)
			app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Automated: true, AutoPrune: true, SelfHeal: true, Finalizers: []string{resourcesFinalizer}})
			t.Cleanup(func() { dropApp(env, app.Namespace, app.Name) })
			var objects []object
			for i := range 20 {
				name := fmt.Sprintf("%s-cm-%02d", app.Name, i)
				repo.Write(t, app.Path+"/"+name+".yaml", configMapManifest(name, app.DestNamespace))
				objects = append(objects, object{kind: "ConfigMap", namespace: app.DestNamespace, name: name})
			}
			rev := repo.Commit(t, "twenty ConfigMaps")
			app.RefreshUntil(t, labtest.ControllerTimeout, "to sync them", func(s labtest.Status) bool {
				for _, o := range objects {
					if r, ok := s.Find(o.kind, o.name); !ok || r.Status != "Synced" {
						return false
					}
				}
				return s.Revision == rev && s.Sync == "Synced" && s.Idle()
			})
			snapshot := metadataSnapshot(t, env.Cluster, objects)
			policy, _ := appPolicy(t, env, app.Namespace, app.Name)
			stop := watchNothingDeleted(t, env.Cluster, objects...)
			next := labtest.UniqueName("killed")
			t.Cleanup(func() { dropApp(env, app.Namespace, next) })
			journals := labtest.TempDir(t)

			// A low --qps spreads the rewrites over seconds, so that the kill lands among them.
			cmd := exec.Command(bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--qps=4", "--burst=1",
				"--argocd-namespace="+install.Namespace(), "rename", app.Name, next, "--yes", "--timeout", "2m")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			labtest.Eventually(t, 2*time.Minute, "the rename to reach: "+point.name, func() (bool, string) {
				select {
				case <-exited:
					t.Fatalf("the rename ended before it was killed:\n%s", out.String())
				default:
				}
				return point.reached(t, app.Name, next, tracking, app, objects), "not yet"
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the rename was not killed (%v):\n%s", cmd.ProcessState, out.String())
			}
			rewritten := 0
			for _, o := range objects {
				if m, err := o.meta(t, env.Cluster); err == nil && !trackedBy(m, tracking, app.Instance()) {
					rewritten++
				}
			}
			t.Logf("killed with %d of %d objects' tracking rewritten", rewritten, len(objects))
			if point.name == "tracking half rewritten" && (rewritten == 0 || rewritten == len(objects)) {
				t.Fatalf("killed with %d of %d objects rewritten: not half-way", rewritten, len(objects))
			}
			// Half-done, each app that exists is compared again after the kill: neither deletes. The
			// old app, once switched off, is marked skip-reconcile: Argo CD leaves it alone, and with
			// no finalizer and no automated sync it can delete nothing.
			killed := time.Now()
			for _, name := range []string{app.Name, next} {
				obj, ok := appExists(t, env, app.Namespace, name)
				if !ok {
					continue
				}
				if s, _ := stateOf(t, env, app.Namespace, name); s.annotations[skipReconcile] == "true" {
					if p, _ := obj["spec"].(map[string]any)["syncPolicy"].(map[string]any); len(s.finalizers) > 0 || p["automated"] != nil {
						t.Fatalf("%s is marked %s but can still delete: %s", name, skipReconcile, s)
					}
					continue
				}
				a := &labtest.App{Install: install, Name: name, Namespace: app.Namespace}
				a.RefreshUntil(t, labtest.ControllerTimeout, "to be compared after the kill", func(s labtest.Status) bool { return s.ReconciledAt.After(killed) && s.Idle() })
			}
			if bad := stop(); len(bad) > 0 {
				t.Fatalf("deleted while the rename lay half-done: %v", bad)
			}
			stop = watchNothingDeleted(t, env.Cluster, objects...)
			if r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "undo", "--latest", "--yes"); r.Code != 0 {
				t.Fatalf("undo: exit %d", r.Code)
			}
			if _, ok := appExists(t, env, app.Namespace, next); ok {
				t.Error("the new Application is still there after undo")
			}
			if got, ok := appPolicy(t, env, app.Namespace, app.Name); !ok || got != policy {
				t.Errorf("the old app after undo: %s (exists %t), was %s", got, ok, policy)
			}
			wantSnapshot(t, env.Cluster, snapshot)
			app.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced after undo", func(s labtest.Status) bool { return s.Sync == "Synced" && s.Revision == rev && s.Idle() })
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted during or after the undo: %v", bad)
			}
		})
	}
}
