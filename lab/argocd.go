package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// ArgoCDConfig is one Argo CD installation: a namespace holding its config, plus an application
// controller, a repo-server and a redis running as local processes.
type ArgoCDConfig struct {
	Namespace string `json:"namespace"`
	// Version is the Argo CD release to run, e.g. "v3.6.1" or "v2.14.11".
	Version string `json:"version"`
	// Tracking is application.resourceTrackingMethod in argocd-cm; empty leaves it unset so that the
	// version's default applies.
	Tracking         string `json:"tracking,omitempty"`
	InstanceLabelKey string `json:"instanceLabelKey,omitempty"`
	InstallationID   string `json:"installationID,omitempty"`
	// AppNamespaces are extra namespaces the controller watches for Applications ("apps in any namespace").
	AppNamespaces []string `json:"appNamespaces,omitempty"`
	// Server also runs argocd-server (plain HTTP on 127.0.0.1, no dex) with the local users of
	// ServerUsers, for tests and operators who reach clusters only through Argo CD's API.
	Server bool `json:"server,omitempty"`
	// UI also runs unprune's UI extension with argocd-server (which it needs): see lab/ui.go.
	UI bool `json:"ui,omitempty"`
	// UIRemoteClusters installs the UI's backend with deploy/ui-extension/remote-clusters: it reads
	// Argo CD's cluster Secrets and answers for apps deploying to other clusters (with UI).
	UIRemoteClusters bool `json:"uiRemoteClusters,omitempty"`
	// AppSetPolicy and AppSetPolicyOverride start the ApplicationSet controller with a policy
	// (lab/appset.go): applicationsetcontroller.policy and .enable.policy.override in
	// argocd-cmd-params-cm, as a real installation configures it.
	AppSetPolicy         string `json:"appSetPolicy,omitempty"`
	AppSetPolicyOverride string `json:"appSetPolicyOverride,omitempty"`
	// Notifications also runs Argo CD's notifications controller (lab/notifications.go) with an
	// empty argocd-notifications-cm and argocd-notifications-secret, as install.yaml ships them.
	Notifications bool `json:"notifications,omitempty"`
	// Hydrator also runs Argo CD's commit-server (lab/hydrator.go) and enables the source hydrator
	// (hydrator.enabled in argocd-cmd-params-cm), as install-with-hydrator.yaml does: apps with
	// spec.sourceHydrator are rendered from their dry source and committed to their hydrated branch.
	Hydrator bool `json:"hydrator,omitempty"`
	// ResourceSelectors is argocd-cm's resource.selectors (v3.6+): label selectors that keep objects
	// out of the controller's cache.
	ResourceSelectors string `json:"resourceSelectors,omitempty"`
	// DeletionBudget, when set, runs unprune's watch with the deletion budget's admission webhook
	// (deploy/components/deletion-budget) for this installation's controller: lab/budget.go.
	DeletionBudget *int `json:"deletionBudget,omitempty"`
	// NoRepoServerTools starts the repo-server without the helm and kustomize of the release's image
	// (REPO_SERVER_TOOLS=0), which are then neither built nor put on its PATH: it renders plain
	// manifests alone, as `make demo`'s app is, and a Helm or Kustomize source fails to render (or
	// takes whatever helm or kustomize the machine's PATH has). Every test runs with the tools.
	NoRepoServerTools bool `json:"noRepoServerTools,omitempty"`
}

// ArgoCDVersions are the Argo CD releases the lab can build: CI's three lines (the Makefile's
// LAB_ARGOCD_VERSIONS) and the lines only `make test-matrix` runs (LAB_ARGOCD_MATRIX). v3.3.14,
// v3.4.7 and v3.5.1 take their in-tree gitops-engine from ../shared/third_party (lab/build.sh).
var ArgoCDVersions = []string{"v3.6.1", "v3.5.1", "v3.4.7", "v3.3.14", "v3.2.11", "v3.1.16", "v3.0.23", "v2.14.11"}

// CIArgoCDVersions are the lines `make test` builds and runs: the newest, the newest with
// gitops-engine in tree and the settings of the v3.4/v3.5 lines, and the incident's v2.14 with its
// label tracking — three Argo CD builds at most.
var CIArgoCDVersions = []string{"v3.6.1", "v3.5.1", "v2.14.11"}

// MatrixOnlyArgoCDVersions are built and run only by `make test-matrix`.
var MatrixOnlyArgoCDVersions = []string{"v3.4.7", "v3.3.14", "v3.2.11", "v3.1.16", "v3.0.23"}

// ServerUser is a local user of argocd-server, with its password and what its role allows.
type ServerUser struct {
	Name     string
	Password string
	Role     string
}

// ServerProject is the extra AppProject every installation has; ServerDeployer's rights are limited
// to its applications.
const ServerProject = "team-a"

// The users of an installation's argocd-server. The passwords are fixed: the server listens on
// 127.0.0.1 only and the lab is disposable.
var (
	ServerAdmin    = ServerUser{Name: "admin", Password: "lab-admin-password", Role: "role:admin (built in)"}
	ServerViewer   = ServerUser{Name: "viewer", Password: "lab-viewer-password", Role: "role:readonly"}
	ServerDeployer = ServerUser{Name: "deployer", Password: "lab-deployer-password",
		Role: "role:" + ServerProject + "-deployer: get, update (with update/*) and sync applications of project " + ServerProject}
	ServerUsers = []ServerUser{ServerAdmin, ServerViewer, ServerDeployer}
)

// serverRBAC is argocd-rbac-cm's policy.csv; policy.default is empty, so a user without a line here
// may do nothing. From v3.0, updating a resource of an app needs update/<group>/<kind>/<ns>/<name>
// (server.rbac.disableApplicationFineGrainedRBACInheritance defaults to true): update/* grants it.
var serverRBAC = strings.Join([]string{
	"g, " + ServerViewer.Name + ", role:readonly",
	"p, role:" + ServerProject + "-deployer, applications, get, " + ServerProject + "/*, allow",
	"p, role:" + ServerProject + "-deployer, applications, update, " + ServerProject + "/*, allow",
	"p, role:" + ServerProject + "-deployer, applications, update/*, " + ServerProject + "/*, allow",
	"p, role:" + ServerProject + "-deployer, applications, sync, " + ServerProject + "/*, allow",
	"g, " + ServerDeployer.Name + ", role:" + ServerProject + "-deployer",
}, "\n") + "\n"

// Validate reports a configuration the lab cannot run, in words that say what to set instead.
func (c ArgoCDConfig) Validate() error {
	known := false
	for _, v := range ArgoCDVersions {
		known = known || v == c.Version
	}
	if !known {
		return fmt.Errorf("ARGOCD_VERSION=%q is not one the lab builds; use one of %s", c.Version, strings.Join(ArgoCDVersions, ", "))
	}
	switch c.Tracking {
	case "", "label", "annotation", "annotation+label":
	default:
		return fmt.Errorf("TRACKING=%q is not an Argo CD tracking method; use label, annotation or annotation+label (or leave it empty for the version's default)", c.Tracking)
	}
	if c.Namespace == "" {
		return fmt.Errorf("an Argo CD installation needs a namespace")
	}
	if c.UI && !c.Server {
		return fmt.Errorf("UI=1 needs argocd-server: set SERVER=1 too")
	}
	if c.UIRemoteClusters && !c.UI {
		return fmt.Errorf("UI_REMOTE_CLUSTERS=1 installs the UI's backend for remote clusters: set UI=1 (and SERVER=1) too")
	}
	if err := c.validateAppSet(); err != nil {
		return err
	}
	return c.validateHydrator()
}

// component names the processes of one installation; the namespace keeps installations apart.
func (c ArgoCDConfig) component(role string) string { return c.Namespace + "-" + role }

// LogFile is where the lab writes the log of the installation's component role
// (application-controller, repo-server …).
func (c ArgoCDConfig) LogFile(st *State, role string) string {
	return logFile(st.Dir, c.component(role))
}

// ArgoCD describes a running installation.
type ArgoCD struct {
	Config         ArgoCDConfig `json:"config"`
	RedisPort      int          `json:"redisPort"`
	RepoServerPort int          `json:"repoServerPort"`
	// ServerURL is argocd-server's plain-HTTP address (http://127.0.0.1:PORT) when Config.Server.
	ServerURL  string `json:"serverURL,omitempty"`
	ServerPort int    `json:"serverPort,omitempty"`
	// UI is the UI extension, when Config.UI.
	UI *UI `json:"ui,omitempty"`
	// Budget is the deletion budget's webhook, when Config.DeletionBudget.
	Budget *Budget `json:"budget,omitempty"`
	// NotificationsMetricsURL is the notifications controller's /metrics on 127.0.0.1, when
	// Config.Notifications: argocd_notifications_trigger_eval_total and _deliveries_total say what
	// it evaluated and sent.
	NotificationsMetricsURL string `json:"notificationsMetricsURL,omitempty"`
	// ControllerKubeconfig is the application controller's own: ServiceAccount ControllerAccount's
	// token, whose rights are the release's ClusterRole for the controller.
	ControllerKubeconfig string `json:"controllerKubeconfig"`
}

// repoServerTakesClientCAPath: v3.6.1's repo-server insists on a client CA file for mTLS unless
// --client-ca-path is given empty; v3.5.1's has the flag too (it skips mTLS when the default file is
// missing; given empty, both run alike); v3.4.7's and older have no such flag (an unknown flag
// stops them; cmd/argocd-repo-server/commands/argocd_repo_server.go).
func repoServerTakesClientCAPath(version string) bool { return !newerVersion("v3.5.0", version) }

// RepoServerTools names the lab/build.sh components an Argo CD release's repo-server runs with: the
// helm and the kustomize its image carries, at the versions the release pins in hack/tool-versions.sh.
// They are listed in lab/modules/argocd-<version>/repo-server-tools, which the Makefile reads too.
func RepoServerTools(root, version string) ([]string, error) {
	file := filepath.Join(root, "lab", "modules", "argocd-"+version, "repo-server-tools")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("the helm and kustomize of Argo CD %s: %w", version, err)
	}
	var tools []string
	helm, kustomize := 0, 0
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(line, "helm-v"):
			helm++
		case strings.HasPrefix(line, "kustomize-v"):
			kustomize++
		default:
			return nil, fmt.Errorf("%s: %q is neither a helm-v… nor a kustomize-v… component", file, line)
		}
		tools = append(tools, line)
	}
	if helm != 1 || kustomize != 1 {
		return nil, fmt.Errorf("%s names %d helm and %d kustomize components; it must name one of each", file, helm, kustomize)
	}
	return tools, nil
}

// startArgoCD installs an Argo CD's cluster-side objects and starts its processes; tools are its
// repo-server's components (RepoServerTools), which bins holds.
func startArgoCD(ctx context.Context, st *State, restCfg *rest.Config, bins binaries, cfg ArgoCDConfig, tools []string) (*ArgoCD, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := bins.ArgoCD[cfg.Version]
	if d := bins.ArgoCDUI[cfg.Version]; cfg.UI && d != "" {
		dir = d
	}
	if dir == "" {
		return nil, fmt.Errorf("argocd %s was not built", cfg.Version)
	}
	toolDirs := make([]string, 0, len(tools))
	for _, t := range tools {
		if bins.Tools[t] == "" {
			return nil, fmt.Errorf("%s, for Argo CD %s's repo-server, was not built", t, cfg.Version)
		}
		toolDirs = append(toolDirs, bins.Tools[t])
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	// Installations of several versions share one cluster and so one set of CRDs: keep the newest,
	// whose schema is a superset, so that a newer controller's status fields are not pruned.
	if newerVersion(cfg.Version, st.CRDVersion) {
		if err := applyCRDs(ctx, dyn, dir); err != nil {
			return nil, err
		}
		st.CRDVersion = cfg.Version
	}
	home := filepath.Join(st.Dir, "argocd", cfg.Namespace)
	for _, d := range []string{"tls", "ssh", "gnupg", "gpg", "tmp", "plugins", "home", "static"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, err
		}
	}
	argocdBin := filepath.Join(dir, "argocd")
	var hashes map[string]string
	if cfg.Server {
		if hashes, err = hashPasswords(ctx, argocdBin, home); err != nil {
			return nil, err
		}
	}
	if err := installArgoCDObjects(ctx, dyn, cfg, hashes); err != nil {
		return nil, fmt.Errorf("install Argo CD %s objects in %s: %w", cfg.Version, cfg.Namespace, err)
	}
	ctrlKubeconfig, err := controllerKubeconfig(ctx, st, dir, home, cfg)
	if err != nil {
		return nil, fmt.Errorf("Argo CD %s controller's ServiceAccount in %s: %w", cfg.Version, cfg.Namespace, err)
	}

	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{Config: cfg, RedisPort: ports[0], RepoServerPort: ports[1], ControllerKubeconfig: ctrlKubeconfig}

	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server is not installed: run `make deps` (apt-get install redis-server)")
	}
	redis := process{
		Name: cfg.component("redis"),
		Path: redisBin,
		Args: []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(a.RedisPort), "--save", "", "--appendonly", "no", "--dir", home},
	}
	if _, err := redis.start(st.Dir); err != nil {
		return nil, err
	}
	redisAddr := fmt.Sprintf("127.0.0.1:%d", a.RedisPort)

	// The repo-server execs helper scripts by name (git-verify-wrapper.sh in v3); they sit beside the
	// binary in the build cache.
	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	env := []string{
		"PATH=" + path,
		"HOME=" + filepath.Join(home, "home"),
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + filepath.Join(home, "tls"),
		"ARGOCD_SSH_DATA_PATH=" + filepath.Join(home, "ssh"),
		"ARGOCD_GNUPGHOME=" + filepath.Join(home, "gnupg"),
		"ARGOCD_GPG_DATA_PATH=" + filepath.Join(home, "gpg"),
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(home, "askpass.sock"),
		"ARGOCD_PLUGINSOCKFILEPATH=" + filepath.Join(home, "plugins"),
		"KUBECONFIG=" + st.Kubeconfig,
		// Out of the cluster, the controller resolves https://kubernetes.default.svc to KUBECONFIG.
		"ARGOCD_FAKE_IN_CLUSTER=true",
	}
	repoArgs := []string{
		"--address=127.0.0.1",
		"--port=" + strconv.Itoa(a.RepoServerPort),
		"--metrics-address=127.0.0.1",
		"--metrics-port=" + strconv.Itoa(ports[2]),
		"--disable-tls",
		"--redis=" + redisAddr,
		"--loglevel=info",
	}
	if repoServerTakesClientCAPath(cfg.Version) {
		// It otherwise insists on a client CA file for mTLS; the empty value turns that off.
		repoArgs = append(repoArgs, "--client-ca-path=")
	}
	// Argo CD's image carries helm and kustomize on the PATH; the repo-server, which renders every
	// manifest, runs them by name (util/helm/cmd.go, util/kustomize/kustomize.go).
	repoEnv := withEnv(env, "PATH", strings.Join(append(toolDirs, path), string(os.PathListSeparator)))
	repo := process{
		Name: cfg.component("repo-server"),
		Path: argocdBin,
		Args: repoArgs,
		Env:  append([]string{"ARGOCD_BINARY_NAME=argocd-repo-server"}, repoEnv...),
		Dir:  home,
	}
	if _, err := repo.start(st.Dir); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, st, repo.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]), 60*time.Second); err != nil {
		return nil, err
	}

	// The commit-server runs before the controller, which is told where it is.
	var hydratorEnv []string
	if cfg.Hydrator {
		if hydratorEnv, err = startCommitServer(ctx, st, cfg, argocdBin, home, env); err != nil {
			return nil, err
		}
	}

	// The controller acts with its ServiceAccount's rights, as in a real installation; the
	// in-cluster destination resolves to KUBECONFIG (ARGOCD_FAKE_IN_CLUSTER), so it must be the same.
	ctrlArgs := []string{
		"--namespace=" + cfg.Namespace,
		"--kubeconfig=" + ctrlKubeconfig,
		"--redis=" + redisAddr,
		"--repo-server=" + fmt.Sprintf("127.0.0.1:%d", a.RepoServerPort),
		"--repo-server-plaintext",
		"--metrics-port=" + strconv.Itoa(ports[3]),
		"--loglevel=info",
	}
	if len(cfg.AppNamespaces) > 0 {
		ctrlArgs = append(ctrlArgs, "--application-namespaces="+strings.Join(cfg.AppNamespaces, ","))
	}
	ctrl := process{
		Name: cfg.component("application-controller"),
		Path: argocdBin,
		Args: ctrlArgs,
		Env:  append(append([]string{"ARGOCD_BINARY_NAME=argocd-application-controller"}, withEnv(env, "KUBECONFIG", ctrlKubeconfig)...), hydratorEnv...),
		Dir:  home,
	}
	if _, err := ctrl.start(st.Dir); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, st, ctrl.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3]), 60*time.Second); err != nil {
		return nil, err
	}
	if err := startApplicationSetController(ctx, st, cfg, argocdBin, home, env, a.RepoServerPort); err != nil {
		return nil, err
	}
	if cfg.Notifications {
		if err := startNotificationsController(ctx, st, a, argocdBin, home, env); err != nil {
			return nil, err
		}
	}
	if cfg.Server {
		if err := startServerOnFreePorts(ctx, st, a, argocdBin, home, append(slices.Clone(env), serverHydratorEnv(hydratorEnv)...), redisAddr); err != nil {
			return nil, err
		}
	}
	if cfg.DeletionBudget != nil {
		if err := startDeletionBudget(ctx, st, a, home); err != nil {
			return nil, fmt.Errorf("the deletion budget of %s: %w", cfg.Namespace, err)
		}
	}
	return a, nil
}

// startServerOnFreePorts picks argocd-server's ports just before it starts, and picks again when
// another process took one in between ("address already in use"): the lab's test binaries run side
// by side, and argocd-server starts seconds after the controller.
func startServerOnFreePorts(ctx context.Context, st *State, a *ArgoCD, bin, home string, env []string, redisAddr string) error {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		err = startServer(ctx, st, a, bin, home, env, redisAddr, ports[0], ports[1])
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
}

// startServer runs argocd-server out of the cluster like the controller: plain HTTP (--insecure)
// on 127.0.0.1, no dex, the installation's repo-server and redis.
func startServer(ctx context.Context, st *State, a *ArgoCD, bin, home string, env []string, redisAddr string, port, metricsPort int) error {
	cfg := a.Config
	args := []string{
		"--insecure",
		"--address=127.0.0.1",
		"--port=" + strconv.Itoa(port),
		"--metrics-address=127.0.0.1",
		"--metrics-port=" + strconv.Itoa(metricsPort),
		"--namespace=" + cfg.Namespace,
		"--kubeconfig=" + st.Kubeconfig,
		"--redis=" + redisAddr,
		"--repo-server=" + fmt.Sprintf("127.0.0.1:%d", a.RepoServerPort),
		"--repo-server-plaintext",
		// Argo CD's UI is compiled into the binary (with UI=1, the release's own: lab/build.sh's
		// argocd-ui-VERSION; index.html is served only from there). This folder stands for the
		// image's /shared/app, the additional static assets: with UI=1 the host page.
		"--staticassets=" + filepath.Join(home, "static"),
		"--loglevel=info",
	}
	if len(cfg.AppNamespaces) > 0 {
		args = append(args, "--application-namespaces="+strings.Join(cfg.AppNamespaces, ","))
	}
	if cfg.UI {
		if err := prepareUI(ctx, st, a, home); err != nil {
			return err
		}
	}
	server := process{
		Name: cfg.component("server"),
		Path: bin,
		Args: args,
		Env:  append(append([]string{"ARGOCD_BINARY_NAME=argocd-server"}, env...), serverUIEnv(cfg)...),
		Dir:  home,
	}
	if _, err := server.start(st.Dir); err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(ctx, st, server.Name, url+"/healthz", 60*time.Second); err != nil {
		return err
	}
	a.ServerURL, a.ServerPort = url, port
	if cfg.UI {
		return startUIBackend(ctx, st, a, home)
	}
	return nil
}

// hashPasswords bcrypts the passwords of ServerUsers with the installation's own binary
// (`argocd account bcrypt`), as an operator would.
func hashPasswords(ctx context.Context, bin, home string) (map[string]string, error) {
	out := map[string]string{}
	for _, u := range ServerUsers {
		cmd := exec.CommandContext(ctx, bin, "account", "bcrypt", "--password", u.Password)
		cmd.Env = append(os.Environ(), "ARGOCD_BINARY_NAME=argocd", "HOME="+filepath.Join(home, "home"))
		b, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return nil, fmt.Errorf("argocd account bcrypt: %w: %s", err, stderr)
		}
		out[u.Name] = strings.TrimSpace(string(b))
	}
	return out, nil
}

func stopArgoCD(st *State, a ArgoCD) error {
	var errs []string
	for _, role := range []string{"unprune-extension", "server", "notifications-controller", "applicationset-controller", "application-controller", "commit-server", "repo-server", "redis"} {
		if err := stopProcess(st.Dir, a.Config.component(role), 10*time.Second); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func versionParts(version string) [3]int {
	var p [3]int
	for i, f := range strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3) {
		p[i], _ = strconv.Atoi(f)
	}
	return p
}

// newerVersion reports whether a is a later release than b ("" is older than anything).
func newerVersion(a, b string) bool {
	if b == "" {
		return true
	}
	pa, pb := versionParts(a), versionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] > pb[i]
		}
	}
	return false
}

var (
	gvrNamespace   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrConfigMap   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrSecret      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrCRD         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrAppProject  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	gvrStatefulSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

	gvrServiceAccount     = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrClusterRoleBinding = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
)

const fieldManager = "unprune-lab"

// apply server-side applies obj, so that re-running lab up converges instead of failing on conflicts.
func apply(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = dyn.Resource(gvr).Namespace(ns)
	}
	force := true
	_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvr.Resource, u.GetName(), err)
	}
	return nil
}

// applyCRDs installs Argo CD's CRDs from the module and waits until they are served.
func applyCRDs(ctx context.Context, dyn dynamic.Interface, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "crds", "*-crd.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/crds", dir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		docs, err := yamlDocuments(f)
		if err != nil {
			return err
		}
		for _, obj := range docs {
			if err := apply(ctx, dyn, gvrCRD, obj); err != nil {
				return err
			}
			names = append(names, (&unstructured.Unstructured{Object: obj}).GetName())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range names {
		for {
			crd, err := dyn.Resource(gvrCRD).Get(ctx, n, metav1.GetOptions{})
			if err == nil && crdEstablished(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after 30s", n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func partOfArgoCD(name string) map[string]any {
	return map[string]any{"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": name}
}

// installArgoCDObjects applies an installation's namespace, config and projects. hashes, the bcrypt
// hashes of ServerUsers' passwords by name, configure argocd-server's users when cfg.Server.
func installArgoCDObjects(ctx context.Context, dyn dynamic.Interface, cfg ArgoCDConfig, hashes map[string]string) error {
	for _, ns := range append([]string{cfg.Namespace}, cfg.AppNamespaces...) {
		if err := apply(ctx, dyn, gvrNamespace, map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
		}); err != nil {
			return err
		}
	}
	cm := map[string]string{}
	if cfg.Tracking != "" {
		cm["application.resourceTrackingMethod"] = cfg.Tracking
	}
	if cfg.InstanceLabelKey != "" {
		cm["application.instanceLabelKey"] = cfg.InstanceLabelKey
	}
	if cfg.InstallationID != "" {
		cm["installationID"] = cfg.InstallationID
	}
	if cfg.ResourceSelectors != "" {
		cm["resource.selectors"] = cfg.ResourceSelectors
	}
	params := map[string]string{}
	if len(cfg.AppNamespaces) > 0 {
		params["application.namespaces"] = strings.Join(cfg.AppNamespaces, ",")
	}
	secret := map[string]any{"server.secretkey": "lab-only-secret-key"}
	var rbac map[string]string
	if cfg.Server {
		mtime := time.Now().UTC().Format(time.RFC3339)
		for _, u := range ServerUsers {
			key := "accounts." + u.Name
			if u.Name == ServerAdmin.Name {
				key = "admin"
			} else {
				cm[key] = "apiKey, login"
			}
			secret[key+".password"] = hashes[u.Name]
			secret[key+".passwordMtime"] = mtime
		}
		rbac = map[string]string{"policy.default": "", "policy.csv": serverRBAC}
	}
	objects := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-cm", cm)},
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-rbac-cm", rbac)},
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-cmd-params-cm", params)},
		{gvrSecret, map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata":   map[string]any{"name": "argocd-secret", "namespace": cfg.Namespace, "labels": partOfArgoCD("argocd-secret")},
			"stringData": secret,
		}},
		// Real installations run the controller as a StatefulSet whose image tag tells the Argo CD
		// version; unprune reads it from there. Here the controller is a local process, so the lab
		// records an equivalent object with no replicas.
		{gvrStatefulSet, map[string]any{
			"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{
				"name": "argocd-application-controller", "namespace": cfg.Namespace,
				"labels": map[string]any{
					"app.kubernetes.io/part-of": "argocd", "app.kubernetes.io/name": "argocd-application-controller",
					"app.kubernetes.io/component": "application-controller",
				},
				"annotations": map[string]any{"lab.unprune.dev/stand-in": "the controller runs as a local process"},
			},
			"spec": map[string]any{
				"replicas":    int64(0),
				"serviceName": "argocd-application-controller",
				"selector":    map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "argocd-application-controller"}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "argocd-application-controller"}},
					"spec": map[string]any{"containers": []any{map[string]any{
						"name": "argocd-application-controller", "image": "quay.io/argoproj/argocd:" + cfg.Version,
					}}},
				},
			},
		}},
	}
	for _, o := range objects {
		if err := apply(ctx, dyn, o.gvr, o.obj); err != nil {
			return err
		}
	}
	if cfg.Notifications {
		if err := notificationsObjects(ctx, dyn, cfg); err != nil {
			return err
		}
	}
	sourceNamespaces := make([]any, 0, len(cfg.AppNamespaces))
	for _, ns := range cfg.AppNamespaces {
		sourceNamespaces = append(sourceNamespaces, ns)
	}
	// default, and ServerProject permitting the same, so that RBAC can tell apps apart by project.
	// Destinations: any server, the lab's own or the remote (whether an app names it by server or
	// by name, Argo CD checks the server it resolves to).
	for _, name := range []string{"default", ServerProject} {
		project := map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
			"metadata": map[string]any{"name": name, "namespace": cfg.Namespace},
			"spec": map[string]any{
				"sourceRepos":              []any{"*"},
				"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
				"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
				"sourceNamespaces":         sourceNamespaces,
			},
		}
		if err := apply(ctx, dyn, gvrAppProject, project); err != nil {
			return err
		}
	}
	return nil
}

func configMap(ns, name string, data map[string]string) map[string]any {
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": partOfArgoCD(name)},
		"data":     d,
	}
}

// InstallCRDs installs the Argo CD CRDs of version without running Argo CD, for tests that seed
// Applications (with their status) themselves.
func (s *State) InstallCRDs(ctx context.Context, root, version string) error {
	bins, err := Build(ctx, root, "argocd-"+version)
	if err != nil {
		return err
	}
	dyn, err := s.Dynamic()
	if err != nil {
		return err
	}
	if !newerVersion(version, s.CRDVersion) {
		return nil
	}
	if err := applyCRDs(ctx, dyn, bins.ArgoCD[version]); err != nil {
		return err
	}
	s.CRDVersion = version
	return s.save()
}

// ControllerPID is the PID of the installation's running application controller, 0 when it is not
// running. Tests stop and continue it (SIGSTOP, SIGCONT) to play a busy or stopped controller.
func (s *State) ControllerPID(a ArgoCD) int {
	return runningPID(s.Dir, a.Config.component("application-controller"))
}
