package podsecurity

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// patched are the objects of Argo CD's install.yaml that deploy/components/ui-extension patches.
var patched = map[string]bool{"ConfigMap/argocd-cm": true, "ConfigMap/argocd-cmd-params-cm": true, "ConfigMap/argocd-rbac-cm": true, "Deployment/argocd-server": true}

// installOf writes those objects, exactly as the release's manifests/install.yaml ships them, to a
// file of the test: read from the module zip the Go module proxy serves for the release (`go mod
// download` fetches the zip alone; nothing of Argo CD is copied into the project).
func installOf(t *testing.T, release string) string {
	t.Helper()
	major := "v3"
	if strings.HasPrefix(release, "v2.") {
		major = "v2"
	}
	module := "github.com/argoproj/argo-cd/" + major
	// GOTOOLCHAIN=local: v3.6.1 asks for a newer Go than the machine's; the zip is fetched all the same.
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+release)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	out, _ := cmd.Output()
	var m struct{ Zip, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Zip == "" {
		t.Fatalf("go mod download %s@%s: %v %s %s", module, release, err, m.Error, out)
	}
	z, err := zip.OpenReader(m.Zip)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	f, err := z.Open(module + "@" + release + "/manifests/install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var keep [][]byte
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if yaml.Unmarshal(doc, &meta) == nil && patched[meta.Kind+"/"+meta.Metadata.Name] {
			keep = append(keep, doc)
		}
	}
	if len(keep) != len(patched) {
		t.Fatalf("%s's install.yaml holds %d of the %d objects the component patches", release, len(keep), len(patched))
	}
	path := filepath.Join(t.TempDir(), "argocd-"+release+".yaml")
	if err := os.WriteFile(path, bytes.Join(keep, []byte("\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
