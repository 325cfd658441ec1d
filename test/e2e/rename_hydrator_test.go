//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// hydration is an Application's status.sourceHydrator as the tests read it.
type hydration struct {
	Current *struct {
		Phase       string       `json:"phase"`
		Message     string       `json:"message"`
		DrySHA      string       `json:"drySHA"`
		HydratedSHA string       `json:"hydratedSHA"`
		StartedAt   metav1.Time  `json:"startedAt"`
		FinishedAt  *metav1.Time `json:"finishedAt"`
	} `json:"currentOperation"`
	LastSuccessful *struct {
		DrySHA      string `json:"drySHA"`
		HydratedSHA string `json:"hydratedSHA"`
	} `json:"lastSuccessfulOperation"`
}

func hydrationOf(t *testing.T, u *unstructured.Unstructured) hydration {
	t.Helper()
	var h hydration
	raw, _, _ := unstructured.NestedMap(u.Object, "status", "sourceHydrator")
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h hydration) String() string {
	if h.Current == nil {
		return "no hydrate operation"
	}
	return fmt.Sprintf("phase %s dry %.8s hydrated %.8s started %s message %q", h.Current.Phase, h.Current.DrySHA, h.Current.HydratedSHA, h.Current.StartedAt, h.Current.Message)
}

// hydratedAt reports that the hydrator committed dry (any dry commit when empty) in an operation
// finished at or after since (second precision), and returns the hydrated commit.
func (h hydration) hydratedAt(dry string, since time.Time) (string, bool) {
	c := h.Current
	if c == nil || c.Phase != "Hydrated" || c.HydratedSHA == "" || c.FinishedAt == nil || (dry != "" && c.DrySHA != dry) {
		return "", false
	}
	return c.HydratedSHA, !c.FinishedAt.Time.Before(since.Truncate(time.Second))
}

// hydratorAppAt creates an Application whose manifests Argo CD's source hydrator renders from the
// dry source path "dry" of repo and commits to branch, path; syncPolicy and finalizers as given.
func hydratorAppAt(t *testing.T, env *labtest.Env, install *labtest.Install, repo *labtest.Repo, name, dest, branch, path string, policy map[string]any, finalizers []any) {
	t.Helper()
	spec := map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": labtest.InClusterServer, "namespace": dest},
		"sourceHydrator": map[string]any{
			"drySource":  map[string]any{"repoURL": repo.URL, "targetRevision": "main", "path": "dry"},
			"syncSource": map[string]any{"targetBranch": branch, "path": path},
		},
	}
	if policy != nil {
		spec["syncPolicy"] = policy
	}
	meta := map[string]any{"name": name, "namespace": install.Namespace()}
	if finalizers != nil {
		meta["finalizers"] = finalizers
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": spec}}
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Create(labtest.Context(t), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Application %s: %v", name, err)
	}
	t.Cleanup(func() { dropApp(env, install.Namespace(), name) })
}

// writeCredentials gives the installation a repository-write Secret for repo, as an operator
// gives the commit-server its push credentials (the controller sends them with each request:
// controller/hydrator_dependencies.go GetWriteCredentials, util/db GetWriteRepository). A file://
// repository needs no user or password.
func writeCredentials(t *testing.T, env *labtest.Env, install *labtest.Install, name, url string) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: install.Namespace(), Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository-write"}},
		StringData: map[string]string{"type": "git", "url": url},
	}
	if _, err := env.Kube.CoreV1().Secrets(install.Namespace()).Create(labtest.Context(t), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Secrets(install.Namespace()).Delete(labtest.Context(t), name, metav1.DeleteOptions{})
	})
}

// hydratedManifest is the manifest.yaml the commit-server pushed to branch, path.
func hydratedManifest(t *testing.T, repo *labtest.Repo, branch, path string) string {
	t.Helper()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo.Dir()
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("fetch", "--quiet", "origin", branch)
	return run("show", "FETCH_HEAD:"+path+"/manifest.yaml")
}

// appSnapshot is what a refused rename must leave exactly as it was on the Application: its uid,
// labels, annotations (a pending refresh or hydrate request aside: the controller takes those off),
// finalizers and spec.
func appSnapshot(t *testing.T, env *labtest.Env, namespace, name string) string {
	t.Helper()
	obj, ok := appExists(t, env, namespace, name)
	if !ok {
		t.Fatalf("Application %s/%s is gone", namespace, name)
	}
	meta := obj["metadata"].(map[string]any)
	annotations := map[string]any{}
	for k, v := range toMap(meta["annotations"]) {
		if k != "argocd.argoproj.io/refresh" && k != "argocd.argoproj.io/refresh-timestamp" && k != "argocd.argoproj.io/hydrate" {
			annotations[k] = v
		}
	}
	b, _ := json.Marshal([]any{meta["uid"], meta["labels"], annotations, meta["finalizers"], obj["spec"]})
	return string(b)
}

// objectState is an object's uid, resourceVersion, labels and annotations: a write of any kind
// changes its resourceVersion.
func objectState(t *testing.T, c *labtest.Cluster, objects []object) map[object]string {
	t.Helper()
	out := map[object]string{}
	for _, o := range objects {
		m, err := o.meta(t, c)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		out[o] = fmt.Sprintf("uid %s rv %s labels %v annotations %v", m.UID, m.ResourceVersion, m.Labels, m.Annotations)
	}
	return out
}

// hydratorChart is a Helm chart whose objects are named from the release name: a Namespace holding
// a ConfigMap with data, and a ConfigMap in the app's destination namespace.
func hydratorChart(greeting string) labtest.HelmChart {
	return labtest.HelmChart{Name: "shop", Values: "greeting: " + greeting + "\n", Templates: map[string]string{
		"namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ .Release.Name }}-data\n",
		"data.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-ledger\n  namespace: {{ .Release.Name }}-data\n" +
			"data:\n  balance: \"100\"\n  owner: {{ .Release.Name | quote }}\n",
		"config.yaml": labtest.HelmConfigMap("config", map[string]string{"greeting": "{{ .Values.greeting | quote }}"}),
	}}
}

// TestRenameRefusesSourceHydrator tries to break rename's promise on an app of Argo CD's source
// hydrator (issue 37): a Helm chart in the dry source names every object from the release name —
// the app's name — and the app (resources finalizer, automated prune and self-heal) syncs what the
// real hydrator and commit-server pushed to its hydrated branch. Argo CD compares it with that
// branch, so a rename's checks would all pass, and the hydrator would later render the chart under
// the new name and the new app prune every object. rename must refuse before any change: exit 3,
// the Application and every object exactly as they were, no journal, no new app; and after the
// hydrator's next cycle (a new dry commit, hydrated and synced) nothing is deleted. The control: an
// app of the new name on the same dry source, hydrated for real, renders objects of its own name.
func TestRenameRefusesSourceHydrator(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	// Each line waits on three of the hydrator's cycles, six minutes. They run side by side within
	// this test's one slot of -parallel: as parallel subtests they queued for slots a second time,
	// and ended the package's run minutes after everything else.
	var lines sync.WaitGroup
	defer lines.Wait()
	for _, version := range labtest.Lines("v3.6.1", "v2.14.11") {
		lines.Go(func() { t.Run(version, func(t *testing.T) { renameRefusesSourceHydrator(t, env, version) }) })
	}
}

func renameRefusesSourceHydrator(t *testing.T, env *labtest.Env, version string) {
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, Hydrator: true})
	repo := labtest.NewRepo(t)
	repo.WriteHelmChart(t, "dry", hydratorChart("hello"))
	repo.Commit(t, "the dry source: a chart")
	name, newName := labtest.UniqueName("shop"), labtest.UniqueName("shop-renamed")
	dest := labtest.UniqueName("dest")
	env.CreateNamespace(t, dest)
	branch := "hydrated/" + name
	writeCredentials(t, env, install, "write-"+name, repo.URL)
	t.Cleanup(func() {
		for _, n := range []string{name, newName} {
			env.DeleteNamespace(n + "-data")
		}
	})
	hydratorAppAt(t, env, install, repo, name, dest, branch, name,
		map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}}, []any{resourcesFinalizer})
	app := &labtest.App{Install: install, Name: name, Namespace: install.Namespace(), Repo: repo, DestNamespace: dest, Cluster: env.Cluster}
	objects := []object{{kind: "Namespace", name: name + "-data"}, {kind: "ConfigMap", namespace: name + "-data", name: name + "-ledger"},
		{kind: "ConfigMap", namespace: dest, name: name + "-config"}}

	// The real hydrator commits the chart rendered under the app's name, and the app syncs it.
	var hydrated string
	labtest.Eventually(t, 6*time.Minute, name+" to be hydrated and synced", func() (bool, string) {
		u := app.Get(t)
		h, s := hydrationOf(t, u), labtest.ParseStatus(t, u)
		sha, ok := h.hydratedAt("", time.Time{})
		if !ok || s.Sync != "Synced" || s.Revision != sha || !s.Idle() {
			return false, h.String() + "; " + s.String()
		}
		for _, o := range objects {
			if r, found := s.Find(o.kind, o.name); !found || r.Status != "Synced" {
				return false, h.String() + "; " + s.String()
			}
		}
		hydrated = sha
		return true, ""
	})
	if m := hydratedManifest(t, repo, branch, name); !strings.Contains(m, "name: "+name+"-ledger") || !strings.Contains(m, "name: "+name+"-data") {
		t.Fatalf("the hydrated commit %.8s does not hold the chart rendered under %s:\n%s", hydrated, name, m)
	}
	before, appBefore := objectState(t, env.Cluster, objects), appSnapshot(t, env, install.Namespace(), name)
	watching := watchNothingDeleted(t, env.Cluster, objects...)
	var once sync.Once
	var seen []string
	stop := func() []string {
		once.Do(func() { seen = watching() })
		return seen
	}
	defer stop()

	journals := labtest.TempDir(t)
	r := unprune(t, env, journals, "--argocd-namespace="+install.Namespace(), "rename", name, newName, "--yes", "--timeout", "3m")
	refused := time.Now()
	if r.Code != 3 || !strings.Contains(r.Stderr, "renders through Argo CD's source hydrator") || !strings.Contains(r.Stderr, "nothing was changed") {
		t.Fatalf("rename of a hydrator app: exit %d, want 3 and the reason\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, ok := appExists(t, env, install.Namespace(), newName); ok {
		t.Error("the refused rename created the new app")
	}
	if files, _ := os.ReadDir(journals); len(files) > 0 {
		t.Errorf("the refused rename wrote a journal: %v", files)
	}
	if got := appSnapshot(t, env, install.Namespace(), name); got != appBefore {
		t.Errorf("the Application changed:\n%s\nwas\n%s", got, appBefore)
	}
	if after := objectState(t, env.Cluster, objects); !maps.Equal(after, before) {
		t.Errorf("objects changed:\n%v\nwere\n%v", after, before)
	}

	// The hydrator's next cycle after the refusal: a commit to the dry source, hydrated under the
	// old name and synced, deletes nothing.
	repo.WriteHelmChart(t, "dry", hydratorChart("hello-again"))
	dry := repo.Commit(t, "the dry source: a new greeting")
	labtest.Eventually(t, 8*time.Minute, "the hydrator to hydrate "+dry[:8]+" after the refusal, and "+name+" to sync it", func() (bool, string) {
		u := app.Get(t)
		h, s := hydrationOf(t, u), labtest.ParseStatus(t, u)
		sha, ok := h.hydratedAt(dry, refused)
		if !ok || s.Sync != "Synced" || s.Revision != sha || !s.Idle() {
			return false, h.String() + "; " + s.String()
		}
		cm, err := env.Kube.CoreV1().ConfigMaps(dest).Get(labtest.Context(t), name+"-config", metav1.GetOptions{})
		if err != nil || cm.Data["greeting"] != "hello-again" {
			return false, fmt.Sprintf("ConfigMap %s-config: %v %v", name, cm.Data, err)
		}
		return true, ""
	})
	for _, o := range objects {
		m, err := o.meta(t, env.Cluster)
		if err != nil {
			t.Fatalf("%s after the hydrator's next cycle: %v", o, err)
		}
		if !strings.Contains(before[o], "uid "+string(m.UID)+" ") || !trackedByDefault(m, version, name) {
			t.Errorf("%s after the hydrator's next cycle: uid %s labels %v annotations %v; before: %s", o, m.UID, m.Labels, m.Annotations, before[o])
		}
	}

	// The control: an app of the new name on the same dry source, automated sync off, no
	// finalizer, its own hydrated path. The real hydrator renders the chart under its name.
	hydratorAppAt(t, env, install, repo, newName, dest, branch, newName, nil, nil)
	control := &labtest.App{Install: install, Name: newName, Namespace: install.Namespace(), Repo: repo, DestNamespace: dest, Cluster: env.Cluster}
	// Both apps share the dry commit and the branch, and the hydrator skips a dry commit the first
	// of them already had hydrated (controller/hydrator/hydrator.go, hydrate): a new dry commit
	// has both rendered.
	repo.WriteHelmChart(t, "dry", hydratorChart("hello-control"))
	dry2 := repo.Commit(t, "the dry source: the control's greeting")
	labtest.Eventually(t, 8*time.Minute, "the hydrator to hydrate "+dry2[:8]+" for "+newName, func() (bool, string) {
		h := hydrationOf(t, control.Get(t))
		_, ok := h.hydratedAt(dry2, refused)
		return ok, h.String()
	})
	m := hydratedManifest(t, repo, branch, newName)
	if !strings.Contains(m, "name: "+newName+"-ledger") || !strings.Contains(m, "name: "+newName+"-data") || strings.Contains(m, "name: "+name+"-") {
		t.Errorf("the hydrator rendered for %s:\n%s\nwant the chart's objects under the new name: what the renamed app would sync and the old objects it would prune", newName, m)
	}
	control.WaitStatus(t, 3*time.Minute, "to list the objects of its own name", func(s labtest.Status) bool {
		r, ok := s.Find("ConfigMap", newName+"-ledger")
		return ok && r.Status == "OutOfSync"
	})
	dropApp(env, install.Namespace(), newName)

	if seen := stop(); len(seen) > 0 {
		t.Errorf("deleted or recreated:\n%s", strings.Join(seen, "\n"))
	}
}

// trackedByDefault reports whether the object's tracking names instance under the release's
// default tracking method: the label before v3.0, the annotation from v3.0 (ARGOCD.md).
func trackedByDefault(m *metav1.ObjectMeta, version, instance string) bool {
	if strings.HasPrefix(version, "v2.") {
		return trackedBy(m, "label", instance)
	}
	return trackedBy(m, "annotation", instance)
}
