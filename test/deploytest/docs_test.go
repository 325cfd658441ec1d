package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestDocumentedOverlay builds the overlay docs/watch.md's Deploy section shows, with this tree's
// deploy/ for the release's URLs: it builds, the release label reaches the ServiceMonitor, and
// everything namespaced is beside the watch in argocd.
func TestDocumentedOverlay(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(Dir(), "..", "docs", "watch.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "```yaml\n# kustomization.yaml: the watch")
	if i < 0 {
		t.Fatal("docs/watch.md shows no overlay of the watch")
	}
	block := doc[i+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, Dir())
	if err != nil {
		t.Fatal(err)
	}
	local := strings.ReplaceAll(strings.ReplaceAll(block, "https://github.com/unprune/unprune//deploy", rel), "?ref=vX.Y.Z", "")
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("the documented overlay does not build: %v\n%s", err, local)
	}
	kinds := map[string]bool{}
	for _, r := range res.Resources() {
		kinds[r.GetKind()] = true
		if ns := r.GetNamespace(); !clusterScoped[r.GetKind()] && ns != "argocd" {
			t.Errorf("%s %s in namespace %q, want argocd", r.GetKind(), r.GetName(), ns)
		}
		if r.GetKind() == "ServiceMonitor" && r.GetLabels()["release"] != "my-release" {
			t.Errorf("ServiceMonitor labels %v: the overlay's release label did not reach it", r.GetLabels())
		}
	}
	for _, k := range []string{"Deployment", "ServiceMonitor", "NetworkPolicy", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("the documented overlay has no %s", k)
		}
	}
}
