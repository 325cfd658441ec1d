//go:build lab

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

const syncOptions = "argocd.argoproj.io/sync-options"

func configMapManifest(name, ns string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  color: blue\n", name, ns)
}

func deploymentManifest(name, ns string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: 1
  selector:
    matchLabels:
      run: %[1]s
  template:
    metadata:
      labels:
        run: %[1]s
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
`, name, ns)
}

// object is a live object a test watches.
type object struct {
	kind, namespace, name string
	// group and resource are needed beyond Namespaces, ConfigMaps and Deployments.
	group, resource string
}

func (o object) String() string { return o.kind + "/" + o.namespace + "/" + o.name }

func (o object) gvr() schema.GroupVersionResource {
	switch o.kind {
	case "Namespace":
		return schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	case "ConfigMap":
		return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	case "Secret":
		return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	case "Deployment":
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	}
	return schema.GroupVersionResource{Group: o.group, Version: "v1", Resource: o.resource}
}

// resourceArg is the object as unprune's RESOURCE arguments name it.
func (o object) resourceArg() string {
	kind := o.kind
	switch {
	case o.kind == "Deployment":
		kind = "Deployment.apps"
	case o.group != "":
		kind += "." + o.group
	}
	if o.namespace == "" {
		return kind + "/" + o.name
	}
	return kind + "/" + o.namespace + "/" + o.name
}

// meta reads the object's metadata.
func (o object) meta(t *testing.T, c *labtest.Cluster) (*metav1.ObjectMeta, error) {
	u, err := c.Dynamic.Resource(o.gvr()).Namespace(o.namespace).Get(labtest.Context(t), o.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	m := &metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), DeletionTimestamp: u.GetDeletionTimestamp()}
	return m, nil
}

func (o object) uid(t *testing.T, c *labtest.Cluster) string {
	t.Helper()
	m, err := o.meta(t, c)
	if err != nil {
		t.Fatalf("%s: %v", o, err)
	}
	return string(m.UID)
}

// watchNothingDeleted polls the objects until stop is called, and returns every moment one was
// missing, being deleted, or had another UID than at the start: "nothing deleted at any time".
func watchNothingDeleted(t *testing.T, c *labtest.Cluster, objects ...object) (stop func() []string) {
	t.Helper()
	uids := map[object]string{}
	for _, o := range objects {
		uids[o] = o.uid(t, c)
	}
	done := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, o := range objects {
				m, err := o.meta(t, c)
				var bad string
				switch {
				case apierrors.IsNotFound(err):
					bad = "gone"
				case err != nil:
					continue // a transient read error proves nothing either way
				case m.DeletionTimestamp != nil:
					bad = "being deleted"
				case string(m.UID) != uids[o]:
					bad = "recreated (uid " + string(m.UID) + ")"
				}
				if bad != "" {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%s %s at %s", o, bad, time.Now().Format(time.RFC3339Nano)))
					mu.Unlock()
				}
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// trackedBy reports whether the metadata names instance under the tracking method.
func trackedBy(m *metav1.ObjectMeta, tracking, instance string) bool {
	switch tracking {
	case "label":
		return m.Labels[instanceLabel] == instance
	default:
		return strings.HasPrefix(m.Annotations[trackingID], instance+":")
	}
}

// moveFiles moves files from one app's path to another's in the working clone and commits.
func moveFiles(t *testing.T, repo *labtest.Repo, from, to string, files ...string) string {
	t.Helper()
	for _, f := range files {
		if err := os.Rename(filepath.Join(repo.Dir(), from, f), filepath.Join(repo.Dir(), to, f)); err != nil {
			t.Fatal(err)
		}
	}
	return repo.Commit(t, "move "+strings.Join(files, ", ")+" from "+from+" to "+to)
}

// moveCase is an app A with automated prune holding a ConfigMap and a Deployment, and an app B
// (manual sync) in the same repository.
type moveCase struct {
	env      *labtest.Env
	tracking string
	repo     *labtest.Repo
	a, b     *labtest.App
	objects  []object
	journals string
}

func newMoveCase(t *testing.T, env *labtest.Env, version, tracking string) *moveCase {
	t.Helper()
	return newMoveCaseWith(t, env, lab.ArgoCDConfig{Version: version, Tracking: tracking}, labtest.AppOptions{})
}

// newMoveCaseWith is newMoveCase on an installation of cfg, with B's name and namespace from b.
func newMoveCaseWith(t *testing.T, env *labtest.Env, cfg lab.ArgoCDConfig, b labtest.AppOptions) *moveCase {
	t.Helper()
	install := env.ArgoCD(t, cfg)
	c := &moveCase{env: env, tracking: cfg.Tracking, repo: labtest.NewRepo(t), journals: labtest.TempDir(t)}
	c.a = install.CreateApp(t, labtest.AppOptions{Repo: c.repo, Path: "a", Automated: true, AutoPrune: true})
	b.Repo, b.Path = c.repo, "b"
	c.b = install.CreateApp(t, b)
	ns := c.a.DestNamespace
	cm, dep := labtest.UniqueName("moved-cm"), labtest.UniqueName("moved-dep")
	c.repo.Write(t, "a/cm.yaml", configMapManifest(cm, ns))
	c.repo.Write(t, "a/dep.yaml", deploymentManifest(dep, ns))
	rev := c.repo.Commit(t, "A gets a ConfigMap and a Deployment")
	c.a.RefreshUntil(t, labtest.ControllerTimeout, "to sync them", func(s labtest.Status) bool {
		_, hasCM := s.Find("ConfigMap", cm)
		_, hasDep := s.Find("Deployment", dep)
		return s.Revision == rev && s.Sync == "Synced" && hasCM && hasDep
	})
	if op := c.b.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of B: %s %s", op.Phase, op.Message)
	}
	c.b.WaitSynced(t, rev)
	c.objects = []object{{kind: "ConfigMap", namespace: ns, name: cm}, {kind: "Deployment", namespace: ns, name: dep}}
	waitDeploymentSettled(t, env.Cluster, c.objects[1])
	return c
}

func (c *moveCase) args(extra ...string) []string {
	args := []string{"--argocd-namespace=" + c.a.Install.Namespace(), "move", c.a.Name}
	for _, o := range c.objects {
		args = append(args, o.resourceArg())
	}
	return append(append(args, "--to", c.b.Namespace+"/"+c.b.Name), extra...)
}

// commitMove moves the manifests from A's path to B's and waits until both apps have seen it: B
// lists both objects, A lists them requiring pruning and its automated sync of the commit ran.
func (c *moveCase) commitMove(t *testing.T) string {
	t.Helper()
	committed := time.Now().Add(-time.Second)
	rev := moveFiles(t, c.repo, "a", "b", "cm.yaml", "dep.yaml")
	c.b.RefreshUntil(t, labtest.ControllerTimeout, "to declare the moved objects", func(s labtest.Status) bool {
		for _, o := range c.objects {
			if r, ok := s.Find(o.kind, o.name); !ok || r.RequiresPruning {
				return false
			}
		}
		return s.Revision == rev
	})
	c.a.RefreshUntil(t, labtest.ControllerTimeout, "to have synced the commit with prune", func(s labtest.Status) bool {
		started, _ := time.Parse(time.RFC3339, s.Operation.StartedAt)
		return s.Revision == rev && started.After(committed) && s.Idle()
	})
	return rev
}

// moveCells are the Argo CD versions and tracking methods move and rename are proven on.
var moveCells = []struct{ version, tracking string }{
	{"v3.6.1", "annotation"}, {"v3.6.1", "label"}, {"v3.6.1", "annotation+label"},
	{"v3.5.1", "annotation"}, {"v2.14.11", "label"},
}

// TestMoveThroughPrepare: prepare, commit, move — nothing deleted at any moment, the tracking names
// B, both apps Synced; a move to an app that does not declare the objects is refused first.
func TestMoveThroughPrepare(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	cells := moveCells
	if versions := labtest.Lines(); len(versions) > 0 {
		cells = nil
		for _, v := range versions {
			// The release's default method: the matrix's detach rows cover the others.
			tracking := "annotation"
			if strings.HasPrefix(v, "v2.") {
				tracking = "label"
			}
			cells = append(cells, struct{ version, tracking string }{v, tracking})
		}
	}
	for _, cell := range cells {
		tracking := cell.tracking
		t.Run(cell.version+"/"+tracking, func(t *testing.T) {
			t.Parallel()
			c := newMoveCase(t, env, cell.version, tracking)
			stop := watchNothingDeleted(t, env.Cluster, c.objects...)

			// B does not declare them yet: refused, nothing changed.
			before := map[object]string{}
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				before[o] = m.ResourceVersion
			}
			if r := unprune(t, env, c.journals, c.args("--yes")...); r.Code != 3 || !strings.Contains(r.Stdout, "does not declare") {
				t.Fatalf("move to an app that does not declare them: exit %d, want 3 saying B does not declare them", r.Code)
			}
			for _, o := range c.objects {
				if m, _ := o.meta(t, env.Cluster); m.ResourceVersion != before[o] {
					t.Errorf("%s changed by a refused move (resourceVersion %s → %s)", o, before[o], m.ResourceVersion)
				}
			}

			if r := unprune(t, env, c.journals, c.args("--prepare", "--yes")...); r.Code != 0 {
				t.Fatalf("move --prepare: exit %d", r.Code)
			}
			for _, o := range c.objects {
				if m, _ := o.meta(t, env.Cluster); m.Annotations[syncOptions] != "Prune=false,Delete=false" {
					t.Fatalf("%s after --prepare: sync-options %q", o, m.Annotations[syncOptions])
				}
			}
			rev := c.commitMove(t)
			if r := unprune(t, env, c.journals, c.args("--yes", "--timeout", "2m")...); r.Code != 0 {
				t.Fatalf("move: exit %d", r.Code)
			}
			c.a.WaitSynced(t, rev)
			s := c.b.WaitSynced(t, rev)
			for _, o := range c.objects {
				m, _ := o.meta(t, env.Cluster)
				if !trackedBy(m, tracking, c.b.Instance()) || trackedBy(m, tracking, c.a.Instance()) {
					t.Errorf("%s after the move: labels %v annotations %v", o, m.Labels, m.Annotations)
				}
				if _, has := m.Annotations[syncOptions]; has {
					t.Errorf("%s: the move left sync-options %q", o, m.Annotations[syncOptions])
				}
				if r, ok := s.Find(o.kind, o.name); !ok || r.Status != "Synced" {
					t.Errorf("B's row for %s: %+v (listed %t)", o, r, ok)
				}
			}
			if bad := stop(); len(bad) > 0 {
				t.Errorf("deleted at some point: %v", bad)
			}
		})
	}
}

// TestMoveToALongAppInAnotherNamespace: B lives in another namespace (its instance is
// <namespace>_<name>) and its instance is longer than a label value, so in annotation+label mode Argo
// CD writes it truncated in the label: the move writes exactly what Argo CD writes, and B is Synced.
func TestMoveToALongAppInAnotherNamespace(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	// The same installation as TestLongInstanceAnnotationLabel's: a configuration names one
	// namespace, and two configurations may not share it.
	cfg := lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation+label", AppNamespaces: []string{"long-apps"}}
	c := newMoveCaseWith(t, env, cfg, labtest.AppOptions{Namespace: "long-apps", Name: labtest.UniqueName("a-rather-long-application-name-for-the-shop-team")})
	if len(c.b.Instance()) <= 63 {
		t.Fatalf("instance %q is not long enough to be truncated", c.b.Instance())
	}
	stop := watchNothingDeleted(t, env.Cluster, c.objects...)
	if r := unprune(t, env, c.journals, c.args("--prepare", "--yes")...); r.Code != 0 {
		t.Fatalf("move --prepare: exit %d", r.Code)
	}
	rev := c.commitMove(t)
	if r := unprune(t, env, c.journals, c.args("--yes", "--timeout", "2m")...); r.Code != 0 {
		t.Fatalf("move: exit %d", r.Code)
	}
	c.a.WaitSynced(t, rev)
	c.b.WaitSynced(t, rev)
	for _, o := range c.objects {
		m, _ := o.meta(t, env.Cluster)
		label := m.Labels[instanceLabel]
		if !trackedBy(m, "annotation", c.b.Instance()) || label == c.b.Instance() || !strings.HasPrefix(c.b.Instance(), label) || len(label) > 63 {
			t.Errorf("%s after the move: label %q, annotations %v; want the tracking-id of %q and its truncated label", o, label, m.Annotations, c.b.Instance())
		}
	}
	if bad := stop(); len(bad) > 0 {
		t.Errorf("deleted at some point: %v", bad)
	}
}

// TestMoveWithoutPrepareDeletes is the control: the same commit without --prepare lets A's automated
// prune delete both objects before anything can move them.
func TestMoveWithoutPrepareDeletes(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	c := newMoveCase(t, env, "v3.6.1", "annotation")
	moveFiles(t, c.repo, "a", "b", "cm.yaml", "dep.yaml")
	c.a.Refresh(t)
	for _, o := range c.objects {
		labtest.Eventually(t, labtest.ControllerTimeout, o.String()+" to be pruned by A", func() (bool, string) {
			_, err := o.meta(t, env.Cluster)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}
