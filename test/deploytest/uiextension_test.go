package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// argoCDStandIn is the part of an Argo CD installation the component patches, as its install.yaml
// names them; policy.csv stands for the operator's own policy, which must stay as it is.
const argoCDStandIn = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-server
spec:
  template:
    spec:
      containers:
        - name: argocd-server
          image: quay.io/argoproj/argocd:v3.6.1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
data:
  url: https://argocd.example.com
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cmd-params-cm
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-rbac-cm
data:
  policy.csv: "g, platform, role:admin"
`

// buildUIExtension builds the component on top of the stand-in, in namespace argocd.
func buildUIExtension(t *testing.T) []map[string]any {
	t.Helper()
	dir := t.TempDir()
	comp, err := filepath.Rel(dir, filepath.Join(Dir(), "components", "ui-extension"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"argocd.yaml":        argoCDStandIn,
		"kustomization.yaml": fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\nresources:\n  - argocd.yaml\ncomponents:\n  - %s\n", comp),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build with deploy/components/ui-extension: %v", err)
	}
	var out []map[string]any
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func named(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range Kind(objs, kind) {
		if o["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	return nil
}

func data(t *testing.T, objs []map[string]any, name string) map[string]any {
	t.Helper()
	cm := named(objs, "ConfigMap", name)
	if cm == nil {
		t.Fatalf("no ConfigMap %s", name)
	}
	d, _ := cm["data"].(map[string]any)
	return d
}

func podSpec(d map[string]any) map[string]any {
	return d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

// TestUIExtensionComponent: the component installs the bundle into argocd-server's /tmp/extensions/
// with argocd-extension-installer, turns the proxy extension on and points it at the backend with
// the token from argocd-secret, lets role:readonly invoke it in a policy file of its own (the
// operator's policy.csv untouched), and runs the backend with the token it requires.
func TestUIExtensionComponent(t *testing.T) {
	objs := buildUIExtension(t)
	server := podSpec(named(objs, "Deployment", "argocd-server"))
	inits := asSlice(server["initContainers"])
	if len(inits) != 1 {
		t.Fatalf("init containers %v", inits)
	}
	init := inits[0].(map[string]any)
	env := map[string]string{}
	for _, e := range asSlice(init["env"]) {
		m := e.(map[string]any)
		env[fmt.Sprint(m["name"])] = fmt.Sprint(m["value"])
	}
	if !strings.HasSuffix(env["EXTENSION_URL"], "/extension-unprune.tar") || !strings.HasSuffix(env["EXTENSION_CHECKSUM_URL"], "/extension-unprune_checksums.txt") ||
		!strings.HasPrefix(fmt.Sprint(init["image"]), "quay.io/argoprojlabs/argocd-extension-installer:") {
		t.Errorf("installer %v with %v", init["image"], env)
	}
	mounted := func(c map[string]any) bool {
		for _, m := range asSlice(c["volumeMounts"]) {
			if mm := m.(map[string]any); mm["name"] == "extensions" && mm["mountPath"] == "/tmp/extensions/" {
				return true
			}
		}
		return false
	}
	container := asSlice(server["containers"])[0].(map[string]any)
	if !mounted(init) || !mounted(container) || container["image"] != "quay.io/argoproj/argocd:v3.6.1" {
		t.Errorf("/tmp/extensions/ is not shared by the installer and argocd-server: %v / %v", init["volumeMounts"], container)
	}

	if v := data(t, objs, "argocd-cmd-params-cm")["server.enable.proxy.extension"]; v != "true" {
		t.Errorf("server.enable.proxy.extension = %v", v)
	}
	cm := data(t, objs, "argocd-cm")
	var ext struct {
		Services []struct {
			URL     string `json:"url"`
			Headers []struct{ Name, Value string }
		} `json:"services"`
	}
	if err := yaml.Unmarshal([]byte(fmt.Sprint(cm["extension.config.unprune"])), &ext); err != nil || len(ext.Services) != 1 {
		t.Fatalf("extension.config.unprune: %v %+v", err, ext)
	}
	s := ext.Services[0]
	if s.URL != "http://unprune-extension:8080" || len(s.Headers) != 1 || s.Headers[0].Name != "Unprune-Token" || s.Headers[0].Value != "$unprune.extension.token" {
		t.Errorf("the proxy extension: %+v", s)
	}
	if cm["url"] != "https://argocd.example.com" {
		t.Errorf("argocd-cm's other keys: %v", cm)
	}
	rbac := data(t, objs, "argocd-rbac-cm")
	if rbac["policy.csv"] != "g, platform, role:admin" || !strings.Contains(fmt.Sprint(rbac["policy.unprune.csv"]), "p, role:readonly, extensions, invoke, unprune, allow") {
		t.Errorf("argocd-rbac-cm: %v", rbac)
	}

	backend := named(objs, "Deployment", "unprune-extension")
	if backend == nil {
		t.Fatal("no backend Deployment")
	}
	pod := podSpec(backend)
	c := asSlice(pod["containers"])[0].(map[string]any)
	args := fmt.Sprint(c["args"])
	if !strings.Contains(args, "extension") || !strings.Contains(args, "--token-file=/etc/unprune-extension/token") || !strings.Contains(args, "--listen=:8080") {
		t.Errorf("backend args %v", args)
	}
	if sc, _ := pod["securityContext"].(map[string]any); fmt.Sprint(sc["runAsUser"]) != distrolessNonroot || pod["serviceAccountName"] != "unprune-extension" {
		t.Errorf("backend pod %v", pod)
	}
	svc := named(objs, "Service", "unprune-extension")
	if svc == nil || named(objs, "Service", "unprune-extension")["metadata"].(map[string]any)["namespace"] != "argocd" {
		t.Errorf("backend Service %v", svc)
	}
}

// TestUIExtensionRBAC: the backend reads only (no wildcard, no Secrets) and writes nothing but
// ConfigMaps in Argo CD's namespace — its journals — which it never deletes.
func TestUIExtensionRBAC(t *testing.T) {
	objs := buildUIExtension(t)
	for _, role := range append(Kind(objs, "ClusterRole"), Kind(objs, "Role")...) {
		for _, r := range rules(t, role) {
			where := fmt.Sprintf("%s rule %+v", role["kind"], r)
			noWildcardNoSecrets(t, where, r)
			for _, v := range r.verbs {
				switch {
				case v == "get" || v == "list":
				case role["kind"] == "Role" && slices.Equal(r.resources, []string{"configmaps"}) && (v == "create" || v == "update"):
				default:
					t.Errorf("%s: verb %q", where, v)
				}
			}
		}
	}
	for _, b := range append(Kind(objs, "ClusterRoleBinding"), Kind(objs, "RoleBinding")...) {
		if s := asSlice(b["subjects"])[0].(map[string]any); s["name"] != "unprune-extension" || s["namespace"] != "argocd" {
			t.Errorf("%v binds %v", b["metadata"], s)
		}
	}
}
