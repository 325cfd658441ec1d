// Package deploytest builds deploy/'s kustomizations with kustomize's own library, for the tests that
// lint the manifests and the lab test that applies the shipped RBAC.
package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Dir is deploy/ in this work tree: found from the working directory (a test's is its package's),
// not from the source file's path, which -trimpath builds do not keep.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "deploy", "base")); err == nil {
			return filepath.Join(dir, "deploy")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("deploytest: no deploy/base above the working directory")
		}
		dir = parent
	}
}

// Build renders deploy/<path> with the overlay lines added (namespace:, namePrefix:, components:
// with paths relative to deploy/), and returns its objects.
func Build(t testing.TB, path string, overlay ...string) []map[string]any {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(Dir(), path))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\n", rel)
	for _, line := range overlay {
		b.WriteString(strings.ReplaceAll(line, "DEPLOY", strings.TrimSuffix(rel, path)) + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %v", path, err)
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

// Kind returns the objects of a kind.
func Kind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}
