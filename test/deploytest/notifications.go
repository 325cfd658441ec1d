package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// NotificationsComponent is the component that adds unprune's trigger and template to Argo CD's
// notifications, relative to deploy/.
const NotificationsComponent = "components/argocd-notifications"

// The names the component gives its trigger and template in argocd-notifications-cm.
const (
	NotificationsTrigger  = "on-unprune-high-risk-requires-pruning"
	NotificationsTemplate = "unprune-high-risk-requires-pruning"
)

// BuildNotifications builds the component, with kustomize's own library, on top of standIn — the
// argocd-notifications-cm of an installation (YAML) — in namespace, and returns the ConfigMap's
// data as the build leaves it.
func BuildNotifications(t testing.TB, namespace, standIn string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	comp, err := filepath.Rel(dir, filepath.Join(Dir(), NotificationsComponent))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"argocd-notifications-cm.yaml": standIn,
		"kustomization.yaml": fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\n"+
			"resources:\n  - argocd-notifications-cm.yaml\ncomponents:\n  - %s\n", namespace, comp),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build with deploy/%s: %v", NotificationsComponent, err)
	}
	if n := len(res.Resources()); n != 1 {
		t.Fatalf("kustomize build with deploy/%s: %d objects, want the one ConfigMap", NotificationsComponent, n)
	}
	r := res.Resources()[0]
	if r.GetKind() != "ConfigMap" || r.GetName() != "argocd-notifications-cm" || r.GetNamespace() != namespace {
		t.Fatalf("kustomize build with deploy/%s: %s %s/%s, want ConfigMap %s/argocd-notifications-cm",
			NotificationsComponent, r.GetKind(), r.GetNamespace(), r.GetName(), namespace)
	}
	return r.GetDataMap()
}

// EmptyNotificationsConfigMap is argocd-notifications-cm as Argo CD's install.yaml ships it: no data.
const EmptyNotificationsConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-notifications-cm
`
