package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// ControllerAccount is the ServiceAccount Argo CD's manifests run the application controller as
// (manifests/base/application-controller, manifests/cluster-rbac/application-controller).
const ControllerAccount = "argocd-application-controller"

var gvrClusterRole = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// serviceAccountTokenSeconds is how long the tokens the lab issues last: a year, longer than any lab
// session. The lab's API server sets no --service-account-max-token-expiration, so a TokenRequest
// gets what it asks for (pkg/registry/core/serviceaccount/storage/token.go shortens only to that
// maximum, and extends only tokens bound to pods).
const serviceAccountTokenSeconds = 365 * 24 * 3600

// bindServiceAccount applies a ServiceAccount and a ClusterRoleBinding that gives it clusterRole,
// for the Argo CD controller here and for the remote's argocd-manager.
func bindServiceAccount(ctx context.Context, dyn dynamic.Interface, namespace, name, binding, clusterRole string) error {
	if err := apply(ctx, dyn, gvrServiceAccount, map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": name, "namespace": namespace},
	}); err != nil {
		return err
	}
	return apply(ctx, dyn, gvrClusterRoleBinding, map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": binding},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": clusterRole},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": namespace}},
	})
}

// controllerClusterRole reads the application controller's ClusterRole from the release's own
// manifests (manifests/cluster-rbac/application-controller, which lab/build.sh copies beside the
// binary) and checks that they bind it to ControllerAccount.
func controllerClusterRole(dir string) (map[string]any, error) {
	folder := filepath.Join(dir, "cluster-rbac", "application-controller")
	role, err := releaseClusterRole(folder, ControllerAccount)
	if errors.Is(err, errNoManifests) {
		return nil, fmt.Errorf("%w: the build predates it; run lab/build.sh again", err)
	}
	return role, err
}

var errNoManifests = errors.New("no manifests")

// releaseClusterRole reads the ClusterRole a folder of the release's manifests/cluster-rbac holds
// and checks that its ClusterRoleBinding binds it to ServiceAccount account alone.
func releaseClusterRole(folder, account string) (map[string]any, error) {
	files, err := filepath.Glob(filepath.Join(folder, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("%w in %s", errNoManifests, folder)
	}
	sort.Strings(files)
	var role, binding map[string]any
	for _, f := range files {
		docs, err := yamlDocuments(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			switch d["kind"] {
			case "ClusterRole":
				role = d
			case "ClusterRoleBinding":
				binding = d
			}
		}
	}
	if role == nil || binding == nil {
		return nil, fmt.Errorf("%s holds no ClusterRole and ClusterRoleBinding for %s", folder, account)
	}
	subjects, _, _ := unstructured.NestedSlice(binding, "subjects")
	roleName, _, _ := unstructured.NestedString(binding, "roleRef", "name")
	var subject map[string]any
	if len(subjects) == 1 {
		subject, _ = subjects[0].(map[string]any)
	}
	if subject["kind"] != "ServiceAccount" || subject["name"] != account || roleName != (&unstructured.Unstructured{Object: role}).GetName() {
		return nil, fmt.Errorf("%s no longer binds the ClusterRole to ServiceAccount %s alone: update lab/controller.go", folder, account)
	}
	return role, nil
}

func yamlDocuments(path string) ([]map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) > 0 {
			docs = append(docs, obj)
		}
	}
}

// controllerKubeconfig gives an installation's controller the identity Argo CD's manifests give
// it: ServiceAccount ControllerAccount in the installation's namespace, bound to the release's
// ClusterRole. It returns the path of the controller's kubeconfig.
func controllerKubeconfig(ctx context.Context, st *State, dir, home string, cfg ArgoCDConfig) (string, error) {
	role, err := controllerClusterRole(dir)
	if err != nil {
		return "", err
	}
	return accountKubeconfig(ctx, st, role, ControllerAccount, filepath.Join(home, "controller.kubeconfig"), cfg)
}

// accountKubeconfig binds ServiceAccount account in the installation's namespace to role, a
// ClusterRole of the release, and writes a kubeconfig holding its token at path. The ClusterRole is
// named after the account and the namespace, as a Helm release prefixes it, so that installations
// of different releases in one cluster keep their own.
func accountKubeconfig(ctx context.Context, st *State, role map[string]any, account, path string, cfg ArgoCDConfig) (string, error) {
	dyn, err := st.Dynamic()
	if err != nil {
		return "", err
	}
	name := account + "-" + cfg.Namespace
	if err := unstructured.SetNestedField(role, name, "metadata", "name"); err != nil {
		return "", err
	}
	if err := apply(ctx, dyn, gvrClusterRole, role); err != nil {
		return "", err
	}
	return path, st.ServiceAccountKubeconfig(ctx, cfg.Namespace, account, name, path)
}

// ServiceAccountKubeconfig creates ServiceAccount namespace/name, binds it to clusterRole (binding
// <name>-<namespace>) and writes a kubeconfig at path whose credential is a token the API server
// issued for it (TokenRequest, valid a year): a real user with exactly the role's rights.
func (s *State) ServiceAccountKubeconfig(ctx context.Context, namespace, name, clusterRole, path string) error {
	restCfg, err := s.RESTConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	if err := bindServiceAccount(ctx, dyn, namespace, name, name+"-"+namespace, clusterRole); err != nil {
		return err
	}
	seconds := int64(serviceAccountTokenSeconds)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return writeKubeconfig(path, "lab", s.Server, restCfg.CAData, "system:serviceaccount:"+namespace+":"+name, tr.Status.Token)
}

// withEnv returns env with key set to value, replacing any earlier setting.
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	return append(out, key+"="+value)
}
