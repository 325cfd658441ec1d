package lab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
}

// ArgoCDVersions are the Argo CD releases the lab can build.
var ArgoCDVersions = []string{"v3.6.1", "v3.0.23", "v2.14.11"}

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
	return nil
}

// component names the processes of one installation; the namespace keeps installations apart.
func (c ArgoCDConfig) component(role string) string { return c.Namespace + "-" + role }

// ArgoCD describes a running installation.
type ArgoCD struct {
	Config         ArgoCDConfig `json:"config"`
	RedisPort      int          `json:"redisPort"`
	RepoServerPort int          `json:"repoServerPort"`
}

// repoServerTakesClientCAPath: v3.6.1's repo-server insists on a client CA file for mTLS unless
// --client-ca-path is given empty; v3.0.23's and v2.14.11's have no such flag (an unknown flag
// stops them). The releases in between are not built by the lab.
func repoServerTakesClientCAPath(version string) bool { return !newerVersion("v3.6.0", version) }

// startArgoCD installs an Argo CD's cluster-side objects and starts its processes.
func startArgoCD(ctx context.Context, st *State, restCfg *rest.Config, bins binaries, cfg ArgoCDConfig) (*ArgoCD, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := bins.ArgoCD[cfg.Version]
	if dir == "" {
		return nil, fmt.Errorf("argocd %s was not built", cfg.Version)
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
	if err := installArgoCDObjects(ctx, dyn, cfg); err != nil {
		return nil, fmt.Errorf("install Argo CD %s objects in %s: %w", cfg.Version, cfg.Namespace, err)
	}

	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{Config: cfg, RedisPort: ports[0], RepoServerPort: ports[1]}
	home := filepath.Join(st.Dir, "argocd", cfg.Namespace)
	for _, d := range []string{"tls", "ssh", "gnupg", "gpg", "tmp", "plugins", "home"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, err
		}
	}

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

	argocdBin := filepath.Join(dir, "argocd")
	// The repo-server execs helper scripts by name (git-verify-wrapper.sh in v3); they sit beside the
	// binary in the build cache.
	env := []string{
		"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"),
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
	repo := process{
		Name: cfg.component("repo-server"),
		Path: argocdBin,
		Args: repoArgs,
		Env:  append([]string{"ARGOCD_BINARY_NAME=argocd-repo-server"}, env...),
		Dir:  home,
	}
	if _, err := repo.start(st.Dir); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, st, repo.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2]), nil, "", 60*time.Second); err != nil {
		return nil, err
	}

	ctrlArgs := []string{
		"--namespace=" + cfg.Namespace,
		"--kubeconfig=" + st.Kubeconfig,
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
		Env:  append([]string{"ARGOCD_BINARY_NAME=argocd-application-controller"}, env...),
		Dir:  home,
	}
	if _, err := ctrl.start(st.Dir); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, st, ctrl.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3]), nil, "", 60*time.Second); err != nil {
		return nil, err
	}
	return a, nil
}

func stopArgoCD(st *State, a ArgoCD) error {
	var errs []string
	for _, role := range []string{"application-controller", "repo-server", "redis"} {
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
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			obj := map[string]any{}
			if err := dec.Decode(&obj); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(obj) == 0 {
				continue
			}
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

func installArgoCDObjects(ctx context.Context, dyn dynamic.Interface, cfg ArgoCDConfig) error {
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
	params := map[string]string{}
	if len(cfg.AppNamespaces) > 0 {
		params["application.namespaces"] = strings.Join(cfg.AppNamespaces, ",")
	}
	objects := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-cm", cm)},
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-rbac-cm", nil)},
		{gvrConfigMap, configMap(cfg.Namespace, "argocd-cmd-params-cm", params)},
		{gvrSecret, map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
			"metadata":   map[string]any{"name": "argocd-secret", "namespace": cfg.Namespace, "labels": partOfArgoCD("argocd-secret")},
			"stringData": map[string]any{"server.secretkey": "lab-only-secret-key"},
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
	sourceNamespaces := make([]any, 0, len(cfg.AppNamespaces))
	for _, ns := range cfg.AppNamespaces {
		sourceNamespaces = append(sourceNamespaces, ns)
	}
	project := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": cfg.Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
			"sourceNamespaces":         sourceNamespaces,
		},
	}
	return apply(ctx, dyn, gvrAppProject, project)
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
	restCfg, err := s.RESTConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
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
