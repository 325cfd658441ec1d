// Package lab runs a real local control plane for unprune's tests and demo: etcd, kube-apiserver and
// kube-controller-manager built from Kubernetes' Go module, and one or more Argo CD installations
// (application controller + repo-server + redis) built from Argo CD's Go module, all as processes
// on 127.0.0.1. Nothing here is a fake: what Argo CD decides in the lab is what it decides in production.
//
// State (data, logs, PIDs, kubeconfigs) lives in one directory; PIDs are recorded so that Down ends
// exactly the processes Up started.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is what `lab up` is asked for.
type Config struct {
	// Dir holds the lab's state; it is created if missing.
	Dir string `json:"dir"`
	// KCM runs kube-controller-manager, without which deleted namespaces stay Terminating forever.
	KCM bool `json:"kcm"`
	// ArgoCD is the installation `lab up` starts; nil starts only the control plane.
	ArgoCD *ArgoCDConfig `json:"argocd,omitempty"`
	// Remote also starts the remote cluster (see AddRemote) and registers it, named RemoteName,
	// with the installation.
	Remote bool `json:"remote,omitempty"`
}

// RemoteName is the cluster name `lab up` registers the remote under.
const RemoteName = "remote"

// State is what a running lab looks like; it is saved as lab.json in the state directory.
type State struct {
	Dir                string    `json:"dir"`
	Config             Config    `json:"config"`
	Server             string    `json:"server"`
	Kubeconfig         string    `json:"kubeconfig"`
	NoAccessKubeconfig string    `json:"noAccessKubeconfig"`
	Kubectl            string    `json:"kubectl"` // kubectl built with the API server
	EtcdPort           int       `json:"etcdPort"`
	APIServerPort      int       `json:"apiServerPort"`
	KCMPort            int       `json:"kcmPort,omitempty"`
	ArgoCD             []ArgoCD  `json:"argocd,omitempty"`
	CRDVersion         string    `json:"crdVersion,omitempty"` // Argo CD release whose CRDs are installed
	StartedAt          time.Time `json:"startedAt"`
	// Remote is the second cluster Argo CD can deploy to, once AddRemote started it.
	Remote *Remote `json:"remote,omitempty"`
}

// RESTConfig is the admin's client configuration.
func (s *State) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
}

// Dynamic is a dynamic client of the lab's API server.
func (s *State) Dynamic() (dynamic.Interface, error) {
	restCfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(restCfg)
}

func stateFile(dir string) string { return filepath.Join(dir, "lab.json") }

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := stateFile(s.Dir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, stateFile(s.Dir))
}

// Load reads the state of the lab in dir.
func Load(dir string) (*State, error) {
	b, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", stateFile(dir), err)
	}
	return s, nil
}

// Running lists the recorded components and whether each is alive.
func (s *State) Running() map[string]bool {
	out := map[string]bool{}
	for _, n := range recordedProcesses(s.Dir) {
		out[n] = runningPID(s.Dir, n) != 0
	}
	return out
}

func (s *State) healthy() bool {
	r := s.Running()
	if len(r) == 0 {
		return false
	}
	for _, alive := range r {
		if !alive {
			return false
		}
	}
	return true
}

// Up starts the lab, or returns the running one when it already matches cfg.
func Up(ctx context.Context, root string, cfg Config) (*State, error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if cfg.ArgoCD != nil {
		if err := cfg.ArgoCD.Validate(); err != nil {
			return nil, err
		}
	}
	if old, err := Load(dir); err == nil && old.healthy() {
		if reflect.DeepEqual(old.Config, cfg) {
			return old, nil
		}
		return nil, fmt.Errorf("a lab with another configuration is running in %s (%s); run `make lab-down` first",
			dir, describe(old.Config))
	}
	// Anything left from a crashed lab is stopped and wiped: the lab's data is disposable.
	if err := Down(dir); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	components := []string{"etcd", "kubernetes"}
	if cfg.ArgoCD != nil {
		argocd, _, err := argocdComponents(root, *cfg.ArgoCD)
		if err != nil {
			return nil, err
		}
		components = append(components, argocd...)
	}
	bins, err := Build(ctx, root, components...)
	if err != nil {
		return nil, err
	}
	st := &State{Dir: dir, Config: cfg, StartedAt: time.Now().UTC()}
	fail := func(err error) (*State, error) {
		_ = st.save()
		_ = Down(dir)
		return nil, err
	}
	if err := startControlPlane(ctx, st, bins, cfg.KCM); err != nil {
		return fail(err)
	}
	if err := st.save(); err != nil {
		return fail(err)
	}
	if cfg.ArgoCD != nil {
		if _, err := st.AddArgoCD(ctx, root, *cfg.ArgoCD); err != nil {
			return fail(err)
		}
	}
	if cfg.Remote {
		if _, err := st.AddRemote(ctx, root); err != nil {
			return fail(err)
		}
		if cfg.ArgoCD != nil {
			if _, err := st.RegisterRemote(ctx, cfg.ArgoCD.Namespace, RemoteName); err != nil {
				return fail(err)
			}
		}
	}
	return st, nil
}

// AddArgoCD starts another Argo CD installation against the running control plane. Tests use one
// installation per configuration (version, tracking method …), each in its own namespace.
func (s *State) AddArgoCD(ctx context.Context, root string, cfg ArgoCDConfig) (*ArgoCD, error) {
	for _, a := range s.ArgoCD {
		if a.Config.Namespace == cfg.Namespace {
			return nil, fmt.Errorf("an Argo CD is already installed in namespace %s", cfg.Namespace)
		}
	}
	components, tools, err := argocdComponents(root, cfg)
	if err != nil {
		return nil, err
	}
	bins, err := Build(ctx, root, components...)
	if err != nil {
		return nil, err
	}
	restCfg, err := s.RESTConfig()
	if err != nil {
		return nil, err
	}
	a, err := startArgoCD(ctx, s, restCfg, bins, cfg, tools)
	if err != nil {
		_ = stopArgoCD(s, ArgoCD{Config: cfg})
		return nil, err
	}
	s.ArgoCD = append(s.ArgoCD, *a)
	return a, s.save()
}

// RemoveArgoCD stops the processes of the installation in namespace, by PID, and forgets it; what
// it wrote into the cluster stays, so that AddArgoCD can start it again over the same objects.
func (s *State) RemoveArgoCD(namespace string) error {
	for i, a := range s.ArgoCD {
		if a.Config.Namespace == namespace {
			err := stopArgoCD(s, a)
			s.ArgoCD = append(s.ArgoCD[:i], s.ArgoCD[i+1:]...)
			return errors.Join(err, s.save())
		}
	}
	return fmt.Errorf("no Argo CD is installed in namespace %s", namespace)
}

// Down stops every process recorded in dir, by PID, Argo CD first so that nothing reconciles
// against a control plane that is going away. The state directory is kept for post-mortems.
func Down(dir string) error {
	names := recordedProcesses(dir)
	order := func(n string) int {
		// The remote cluster's processes stop in the same passes as the lab's own.
		n = strings.TrimPrefix(n, remotePrefix)
		switch {
		case n == "kube-controller-manager":
			return 1
		case n == "kube-apiserver":
			return 2
		case n == "etcd":
			return 3
		}
		return 0
	}
	var errs []error
	defer releaseExtensions(dir)
	for pass := 0; pass <= 3; pass++ {
		for _, n := range names {
			if order(n) == pass {
				if err := stopProcess(dir, n, 15*time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func describe(c Config) string {
	if c.ArgoCD == nil {
		return fmt.Sprintf("control plane only, kcm=%t, remote=%t", c.KCM, c.Remote)
	}
	a := c.ArgoCD
	return fmt.Sprintf("argocd %s, tracking=%q, instanceLabelKey=%q, installationID=%q, appNamespaces=%v, server=%t, ui=%t, kcm=%t, remote=%t",
		a.Version, a.Tracking, a.InstanceLabelKey, a.InstallationID, a.AppNamespaces, a.Server, a.UI, c.KCM, c.Remote)
}

// argocdComponents are the lab/build.sh components an installation runs: its release (built with
// its own UI embedded when the installation runs unprune's UI and the lab can build that release's
// UI: OwnUI) and its repo-server's tools, unless it runs without them, which it returns apart too.
func argocdComponents(root string, cfg ArgoCDConfig) (components, tools []string, err error) {
	if !cfg.NoRepoServerTools {
		if tools, err = RepoServerTools(root, cfg.Version); err != nil {
			return nil, nil, err
		}
	}
	argocd := "argocd-" + cfg.Version
	if cfg.UI && OwnUI(root, cfg.Version) {
		argocd = "argocd-ui-" + cfg.Version
	}
	return append([]string{argocd}, tools...), tools, nil
}

// binaries are the folders holding each built component.
type binaries struct {
	Etcd       string
	Kubernetes string
	ArgoCD     map[string]string // by version
	// ArgoCDUI are the builds of a release with its own UI embedded (argocd-ui-VERSION), by version.
	ArgoCDUI map[string]string
	// Tools are the other components (helm-v3.17.1, kustomize-v5.6.0 …), by component name.
	Tools map[string]string
}

// Build runs lab/build.sh, which builds the components or finds them in the cache outside the work tree.
func Build(ctx context.Context, root string, components ...string) (binaries, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "lab", "build.sh"))
	cmd.Args = append(cmd.Args, components...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return binaries{}, fmt.Errorf("lab/build.sh %s: %w", strings.Join(components, " "), err)
	}
	b := binaries{ArgoCD: map[string]string{}, ArgoCDUI: map[string]string{}, Tools: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, path, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch {
		case name == "etcd":
			b.Etcd = path
		case name == "kubernetes":
			b.Kubernetes = path
		case strings.HasPrefix(name, "argocd-ui-"):
			b.ArgoCDUI[strings.TrimPrefix(name, "argocd-ui-")] = path
		case strings.HasPrefix(name, "argocd-"):
			b.ArgoCD[strings.TrimPrefix(name, "argocd-")] = path
		default:
			b.Tools[name] = path
		}
	}
	return b, nil
}

// RepoRoot finds the repository root from the working directory (tests run in their package folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "lab", "build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("lab/build.sh not found above the working directory")
		}
		dir = parent
	}
}
