package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The ApplicationSet controller's parameters in argocd-cmd-params-cm, and the environment variables
// its Deployment maps them to (manifests/base/applicationset-controller/
// argocd-applicationset-controller-deployment.yaml: configMapKeyRef, optional).
var appSetParams = []cmdParam{
	{"applicationsetcontroller.policy", "ARGOCD_APPLICATIONSET_CONTROLLER_POLICY"},
	{"applicationsetcontroller.enable.policy.override", "ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_POLICY_OVERRIDE"},
	{"applicationsetcontroller.enable.new.git.file.globbing", "ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_NEW_GIT_FILE_GLOBBING"},
}

// appSetFieldManager owns the controller's keys of argocd-cmd-params-cm, apart from the keys the
// installation's own apply owns.
const appSetFieldManager = "unprune-lab-applicationset"

func (c ArgoCDConfig) validateAppSet() error {
	switch c.AppSetPolicy {
	case "", "sync", "create-only", "create-update", "create-delete":
	default:
		return fmt.Errorf("APPSET_POLICY=%q is not an ApplicationSet policy; use sync, create-only, create-update or create-delete (or leave it empty: sets choose)", c.AppSetPolicy)
	}
	switch c.AppSetPolicyOverride {
	case "", "true", "false":
	default:
		return fmt.Errorf("APPSET_POLICY_OVERRIDE=%q: use true or false (or leave it empty for the controller's default: on only without a policy)", c.AppSetPolicyOverride)
	}
	return nil
}

// startApplicationSetController runs Argo CD's ApplicationSet controller — the same argocd binary,
// named by ARGOCD_BINARY_NAME — out of the cluster beside the application controller, as
// install.yaml runs it beside it: the installation's namespace, the identity the release's
// manifests give it (ServiceAccount AppSetAccount bound to the release's ClusterRole, so that the
// API server, RBAC and admission see its requests as a real installation's: the deletion budget
// judges them by that name), and the installation's repo-server for git generators. Its metrics, probe and webhook servers bind to
// 127.0.0.1 (cmd/argocd-applicationset-controller/commands/applicationset_controller.go: they
// default to every interface). Its policy comes from argocd-cmd-params-cm, as the shipped
// Deployment passes it: the lab writes cfg's policy keys there, reads the ConfigMap back and maps
// each key it finds to the controller's environment. Without keys, the default: sync, which a
// set's syncPolicy.applicationsSync overrides.
func startApplicationSetController(ctx context.Context, st *State, cfg ArgoCDConfig, bin, home string, env []string, repoServerPort int) error {
	params, err := appSetEnvironment(ctx, st, cfg)
	if err != nil {
		return fmt.Errorf("ApplicationSet controller of %s: %w", cfg.Namespace, err)
	}
	kubeconfig, err := appSetKubeconfig(ctx, st, home, cfg)
	if err != nil {
		return fmt.Errorf("Argo CD %s ApplicationSet controller's ServiceAccount in %s: %w", cfg.Version, cfg.Namespace, err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	p := process{
		Name: cfg.component("applicationset-controller"),
		Path: bin,
		Args: []string{
			"--namespace=" + cfg.Namespace,
			"--kubeconfig=" + kubeconfig,
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--probe-addr=127.0.0.1:%d", ports[1]),
			fmt.Sprintf("--webhook-addr=127.0.0.1:%d", ports[2]),
			fmt.Sprintf("--argocd-repo-server=127.0.0.1:%d", repoServerPort),
			"--repo-server-plaintext",
			"--loglevel=info",
		},
		Env: append(append([]string{"ARGOCD_BINARY_NAME=argocd-applicationset-controller"}, withEnv(env, "KUBECONFIG", kubeconfig)...), params...),
		Dir: home,
	}
	if _, err := p.start(st.Dir); err != nil {
		return err
	}
	// Its probe server registers no check (HealthProbeBindAddress alone, no AddHealthzCheck), so
	// /healthz answers 404 for ever; the metrics server answers once the manager runs.
	return waitHTTP(ctx, st, p.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), 60*time.Second)
}

// AppSetAccount is the ServiceAccount Argo CD's manifests run the ApplicationSet controller as
// (manifests/base/applicationset-controller, manifests/cluster-rbac/applicationset-controller).
const AppSetAccount = "argocd-applicationset-controller"

// appSetKubeconfig gives the ApplicationSet controller its release's identity: AppSetAccount bound
// to the release's own ClusterRole, read from Argo CD's module (the lab builds the release from it,
// so Go's module cache holds it; it is downloaded again if the cache was emptied). The cluster-wide
// role, as install.yaml binds it, covers apps in any namespace; the namespaced Role of
// manifests/base grants a subset of it.
func appSetKubeconfig(ctx context.Context, st *State, home string, cfg ArgoCDConfig) (string, error) {
	dir, err := releaseModule(ctx, cfg.Version)
	if err != nil {
		return "", err
	}
	role, err := releaseClusterRole(filepath.Join(dir, "manifests", "cluster-rbac", "applicationset-controller"), AppSetAccount)
	if err != nil {
		return "", err
	}
	return accountKubeconfig(ctx, st, role, AppSetAccount, filepath.Join(home, "applicationset-controller.kubeconfig"), cfg)
}

// releaseModule is the folder of Argo CD's Go module at version in Go's module cache, downloading
// it when it is not there.
func releaseModule(ctx context.Context, version string) (string, error) {
	major := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0]
	path := "github.com/argoproj/argo-cd"
	if major != "1" {
		path += "/v" + major
	}
	cache, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(cache)), path+"@"+version)
	if _, err := os.Stat(filepath.Join(dir, "manifests")); err == nil {
		return dir, nil
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: the release's own go directive does not matter
	out, err := cmd.Output()
	var got struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &got); err != nil || jerr != nil || got.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", path, version, err, got.Error)
	}
	return got.Dir, nil
}

// appSetEnvironment writes cfg's controller parameters into argocd-cmd-params-cm and returns the
// environment the Deployment would give the controller from the ConfigMap as it now is.
func appSetEnvironment(ctx context.Context, st *State, cfg ArgoCDConfig) ([]string, error) {
	dyn, err := st.Dynamic()
	if err != nil {
		return nil, err
	}
	data := map[string]any{}
	if cfg.AppSetPolicy != "" {
		data[appSetParams[0].key] = cfg.AppSetPolicy
	}
	if cfg.AppSetPolicyOverride != "" {
		data[appSetParams[1].key] = cfg.AppSetPolicyOverride
	}
	return applyParams(ctx, dyn, cfg.Namespace, data, appSetFieldManager, appSetParams)
}

// cmdParam is a key of argocd-cmd-params-cm and the environment variable Argo CD's manifests map it
// to for a component.
type cmdParam struct{ key, env string }

// applyParams server-side applies data into argocd-cmd-params-cm as manager, and returns the
// environment params give a component from the ConfigMap as it now is (other managers' values
// included, as the Deployment's configMapKeyRef would read them).
func applyParams(ctx context.Context, dyn dynamic.Interface, namespace string, data map[string]any, manager string, params []cmdParam) ([]string, error) {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "argocd-cmd-params-cm", "namespace": namespace}, "data": data}
	if err := applyAs(ctx, dyn, gvrConfigMap, cm, manager); err != nil {
		return nil, err
	}
	live, err := dyn.Resource(gvrConfigMap).Namespace(namespace).Get(ctx, "argocd-cmd-params-cm", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	have, _ := live.Object["data"].(map[string]any)
	var out []string
	for _, p := range params {
		if v, ok := have[p.key].(string); ok {
			out = append(out, p.env+"="+v)
		}
	}
	return out, nil
}

// applyAs server-side applies obj as manager, which owns exactly the fields obj sets: a key it set
// before and leaves out now is removed.
func applyAs(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj map[string]any, manager string) error {
	u := &unstructured.Unstructured{Object: obj}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = dyn.Resource(gvr).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply %s %s as %s: %w", gvr.Resource, u.GetName(), manager, err)
	}
	return nil
}
