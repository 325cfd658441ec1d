// Package labtest gives end-to-end tests a real lab: one control plane per test binary (started from
// TestMain), Argo CD installations started on first use and stopped once idle, a git repository per
// test, Applications, syncs through the Application's .operation, and waits with deadlines.
package labtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/lab"
)

// Env is the lab shared by all tests of one test binary. Its embedded Cluster is the lab's own
// cluster, where Argo CD runs (REST, Kube, Dynamic, Mapper, CreateNamespace, Create …).
type Env struct {
	*Cluster
	Root       string
	State      *lab.State
	mu         sync.Mutex
	installs   map[string]*installSlot
	closed     bool // set once the tests are done: lab.Down stops what is left
	remote     remoteSlot
	keepOnExit bool
}

// Cluster is one API server of the lab with clients for its admin: the lab's own cluster (Env) or
// the remote one (Env.Remote).
type Cluster struct {
	// Server is the API server's URL; apps name the lab's own cluster https://kubernetes.default.svc.
	Server             string
	Kubeconfig         string
	NoAccessKubeconfig string
	REST               *rest.Config
	Kube               kubernetes.Interface
	Dynamic            dynamic.Interface
	// Mapper caches discovery; Create resets it when a kind is not found (a CRD installed since).
	Mapper *restmapper.DeferredDiscoveryRESTMapper
}

// installSlot is one configuration's installation: started on first use, stopped when no test has
// used it for installLinger, and started again over the same objects if a later test asks for it.
// Every installation watches the whole lab cluster, so each one left running costs every later test
// CPU (29 of them stayed up until the e2e package ended, and it ran CPU-bound).
type installSlot struct {
	mu      sync.Mutex
	install *Install
	users   int
	idle    *time.Timer
}

// installLinger is how long an installation no test uses keeps running: long enough for the next
// test of a sequence to take it over, short against a package's run.
const installLinger = 20 * time.Second

var shared *Env

// Main starts the control plane (with kube-controller-manager), runs the tests and stops every process
// it started. Its state directory is removed when all tests pass and kept (with logs) otherwise.
//
// setup, if given, runs once the control plane is up and before any test.
func Main(m *testing.M, setup ...func(*Env) error) int {
	ctx := context.Background()
	root, err := lab.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "labtest:", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "unprune-lab-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "labtest:", err)
		return 2
	}
	start := time.Now()
	st, err := lab.Up(ctx, root, lab.Config{Dir: dir, KCM: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "labtest: lab up:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "labtest: control plane up in %.1fs (%s)\n", time.Since(start).Seconds(), dir)
	env, err := newEnv(root, st)
	if err != nil {
		_ = lab.Down(dir)
		fmt.Fprintln(os.Stderr, "labtest:", err)
		return 2
	}
	for _, f := range setup {
		if err := f(env); err != nil {
			_ = lab.Down(dir)
			fmt.Fprintln(os.Stderr, "labtest: setup:", err)
			return 2
		}
	}
	shared = env
	code := m.Run()
	env.mu.Lock()
	env.closed = true
	env.mu.Unlock()
	if err := lab.Down(dir); err != nil {
		fmt.Fprintln(os.Stderr, "labtest: lab down:", err)
	}
	if code == 0 && os.Getenv("LAB_KEEP") == "" {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "labtest: lab state and logs kept in %s\n", dir)
	}
	return code
}

func newEnv(root string, st *lab.State) (*Env, error) {
	c, err := newCluster(st.Server, st.Kubeconfig, st.NoAccessKubeconfig)
	if err != nil {
		return nil, err
	}
	return &Env{Cluster: c, Root: root, State: st, installs: map[string]*installSlot{}}, nil
}

func newCluster(server, kubeconfig, noAccess string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	return &Cluster{Server: server, Kubeconfig: kubeconfig, NoAccessKubeconfig: noAccess,
		REST: cfg, Kube: kube, Dynamic: dyn, Mapper: mapper}, nil
}

// Get returns the test binary's lab; TestMain must have called Main.
func Get(t testing.TB) *Env {
	t.Helper()
	if shared == nil {
		t.Fatal("labtest: the lab is not running; call labtest.Main from TestMain")
	}
	return shared
}

// Context is a context bounded by the test's deadline.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// UniqueName returns prefix plus a random suffix: a leftover object that still carries tracking
// for an app name is adopted at once by a new app of that name, so names are never reused.
func UniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Install is one running Argo CD installation.
type Install struct {
	Env    *Env
	Config lab.ArgoCDConfig
	// State is what the lab recorded for it (ports, argocd-server's URL).
	State lab.ArgoCD

	mu       sync.Mutex
	clusters map[string]*Remote // remotes registered with it, by cluster name
	tokens   map[string]string  // argocd-server session tokens, by user
}

// Namespace is where the installation keeps its config and its own Applications.
func (i *Install) Namespace() string { return i.Config.Namespace }

// LogLines returns the last n lines of one of the installation's component logs (role:
// application-controller, repo-server …) that contain match: what a timed-out wait shows of why.
func (i *Install) LogLines(role, match string, n int) string {
	b, err := os.ReadFile(i.Config.LogFile(i.Env.State, role))
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, match) {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ArgoCD returns the installation for cfg, starting it when it is not running. Tests that ask for
// the same configuration share it until the last of them ends (installSlot); cfg.Namespace may be
// left empty to derive one.
func (e *Env) ArgoCD(t testing.TB, cfg lab.ArgoCDConfig) *Install {
	t.Helper()
	if cfg.Namespace == "" {
		cfg.Namespace = InstallNamespace(cfg)
	}
	keyed := cfg
	keyed.DeletionBudget = nil // a pointer: its value, not its address, tells configurations apart
	key := fmt.Sprintf("%+v", keyed)
	if cfg.DeletionBudget != nil {
		key += fmt.Sprintf(" budget %d", *cfg.DeletionBudget)
	}
	e.mu.Lock()
	slot, ok := e.installs[key]
	if !ok {
		slot = &installSlot{}
		e.installs[key] = slot
	}
	e.mu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.idle != nil {
		slot.idle.Stop() // if it fired already, it finds a user and leaves the installation running
		slot.idle = nil
	}
	if slot.install == nil {
		start := time.Now()
		e.mu.Lock() // lab.State is not safe for concurrent AddArgoCD
		a, err := e.State.AddArgoCD(context.Background(), e.Root, cfg)
		e.mu.Unlock()
		if err != nil {
			t.Fatalf("start Argo CD %+v: %v", cfg, err)
		}
		t.Logf("labtest: Argo CD %s in %s up in %.1fs", cfg.Version, cfg.Namespace, time.Since(start).Seconds())
		slot.install = &Install{Env: e, Config: cfg, State: *a}
	}
	slot.users++
	t.Cleanup(func() { e.release(slot) })
	return slot.install
}

// release ends one test's use of an installation; the last one's starts its linger.
func (e *Env) release(slot *installSlot) {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.users--; slot.users > 0 {
		return
	}
	slot.idle = time.AfterFunc(installLinger, func() {
		slot.mu.Lock()
		defer slot.mu.Unlock()
		if slot.users > 0 || slot.install == nil {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed {
			return // lab.Down stops it with everything else
		}
		if err := e.State.RemoveArgoCD(slot.install.Namespace()); err != nil {
			fmt.Fprintf(os.Stderr, "labtest: stop the idle Argo CD in %s: %v\n", slot.install.Namespace(), err)
		}
		slot.install = nil
	})
}

// MatrixEnv names the Argo CD releases `make test-matrix` runs the version-dependent tests on
// (space-separated, e.g. "v3.6.1 v3.2.11"). Unset, each such test runs on the releases CI runs it on.
const MatrixEnv = "UNPRUNE_LAB_MATRIX"

// Lines are the Argo CD releases a version-dependent test runs on: ci, the ones `make test` runs it
// on, unless UNPRUNE_LAB_MATRIX names others. Tests name their subtests by release first
// ("TestX/v3.2.11/…"), which is how hack/matrix reads a line's cell from `go test -json`.
func Lines(ci ...string) []string {
	if v := strings.Fields(os.Getenv(MatrixEnv)); len(v) > 0 {
		return v
	}
	return ci
}

// InstallNamespace derives a readable namespace from a configuration, e.g. argocd-v361-annotation-label.
func InstallNamespace(cfg lab.ArgoCDConfig) string {
	parts := []string{"argocd", strings.ReplaceAll(cfg.Version, ".", "")}
	tracking := cfg.Tracking
	if tracking == "" {
		tracking = "default"
	}
	parts = append(parts, strings.ReplaceAll(tracking, "+", "-"))
	if cfg.InstanceLabelKey != "" {
		parts = append(parts, "key")
	}
	if cfg.InstallationID != "" {
		parts = append(parts, "id")
	}
	if len(cfg.AppNamespaces) > 0 {
		parts = append(parts, "any")
	}
	if cfg.Server {
		parts = append(parts, "server")
	}
	if cfg.AppSetPolicy != "" {
		parts = append(parts, "appset-"+cfg.AppSetPolicy)
	}
	if cfg.AppSetPolicyOverride != "" {
		parts = append(parts, "override-"+cfg.AppSetPolicyOverride)
	}
	if cfg.Notifications {
		parts = append(parts, "notifications")
	}
	if cfg.ResourceSelectors != "" {
		parts = append(parts, "selectors")
	}
	if cfg.Hydrator {
		parts = append(parts, "hydrator")
	}
	if cfg.DeletionBudget != nil {
		parts = append(parts, fmt.Sprintf("budget%d", *cfg.DeletionBudget))
	}
	return strings.Join(parts, "-")
}

var (
	GVRApplication = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	GVRNamespace   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// CreateNamespace creates a namespace and deletes it (without waiting) when the test ends.
func (e *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	if _, err := e.Dynamic.Resource(GVRNamespace).Create(Context(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(GVRNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// Eventually polls cond until it returns true or the timeout passes, then fails with the last
// explanation cond gave.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, last := poll(timeout, cond); !ok {
		t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}

// poll calls cond until it holds or timeout passes; it returns whether it held and, if not, what
// cond said last.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return true, ""
		}
		if time.Now().After(deadline) {
			return false, why
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SortedKeys is a small helper for stable failure messages.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TempDir is t.TempDir under a short path: git and the repo-server put these paths in URLs and logs.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "unprune-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Clean(dir)
}

// DeleteNamespace deletes a namespace a test made, without waiting; a namespace already gone is fine.
func (e *Cluster) DeleteNamespace(name string) {
	_ = e.Dynamic.Resource(GVRNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
}

// Untrack removes Argo CD's default tracking metadata from a namespace that outlives the test (kube-system),
// so that no later Application can adopt it.
func (e *Cluster) Untrack(t testing.TB, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"app.kubernetes.io/instance":null},"annotations":{"argocd.argoproj.io/tracking-id":null,"argocd.argoproj.io/installation-id":null}}}`)
	if _, err := e.Kube.CoreV1().Namespaces().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("untrack namespace %s: %v", name, err)
	}
}

// Create creates an object given as a map, resolving its resource through discovery.
func (e *Cluster) Create(ctx context.Context, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind unknown to the cached discovery may be a CRD installed since: look again once.
		e.Mapper.Reset()
		m, err = e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("create %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	var ri dynamic.ResourceInterface = e.Dynamic.Resource(m.Resource)
	if u.GetNamespace() != "" {
		ri = e.Dynamic.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return nil
}

// PauseController stops the installation's application controller with SIGSTOP, as a controller
// with a long queue or one that is down looks to its users: Applications are not compared. The
// returned function continues it (SIGCONT); it also runs when the test ends.
func (i *Install) PauseController(t testing.TB) (resume func()) {
	t.Helper()
	pid := i.Env.State.ControllerPID(i.State)
	if pid == 0 {
		t.Fatalf("the application controller of %s is not running", i.Namespace())
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP the application controller (pid %d): %v", pid, err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT the application controller (pid %d): %v", pid, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// WaitDefaultObjects waits until kube-controller-manager has added its default objects
// (kube-root-ca.crt and the default ServiceAccount) to each namespace, so that tests counting a
// namespace's contents count the same on every run.
func (e *Cluster) WaitDefaultObjects(t testing.TB, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		Eventually(t, 60*time.Second, ns+"'s default objects", func() (bool, string) {
			_, e1 := e.Kube.CoreV1().ConfigMaps(ns).Get(Context(t), "kube-root-ca.crt", metav1.GetOptions{})
			_, e2 := e.Kube.CoreV1().ServiceAccounts(ns).Get(Context(t), "default", metav1.GetOptions{})
			return e1 == nil && e2 == nil, fmt.Sprint(e1, e2)
		})
	}
}
