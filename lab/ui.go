package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ExtensionsDir is where argocd-server reads UI extensions from: a fixed path in its code
// (server/server.go, extensionsSharedPath), the same for every argocd-server on the machine. One
// lab at a time may use it; extensionsLock says which.
const ExtensionsDir = "/tmp/extensions"

var extensionsLock = filepath.Join(ExtensionsDir, ".unprune-lab.json")

// labVersion is the version the lab stamps on the extension and the backend it builds.
const labVersion = "lab"

// UI is the UI extension of an installation with Config.UI: argocd-server serves the extension from
// /extensions.js, installed in ExtensionsDir as argocd-extension-installer lays a release's bundle
// out, with Argo CD's own UI where the lab builds it (OwnUI) and the host page (extension/host,
// standing in for the UI) from its static assets; the backend runs as a process with the
// least-privilege RBAC of deploy/ui-extension (the component's backend, and the journals' namespace).
type UI struct {
	// URL is the host page on argocd-server.
	URL string `json:"url"`
	// ArgoCDURL is Argo CD's own UI (its index.html at /, sign-in form and app pages), when the
	// lab built this release with it (OwnUI); empty otherwise.
	ArgoCDURL string `json:"argocdURL,omitempty"`
	// BackendURL is `unprune extension`, which argocd-server proxies /extensions/unprune/ to.
	BackendURL string `json:"backendURL"`
	// Token is what argocd-server sends the backend (argocd-secret's unprune.extension.token).
	Token string `json:"token"`
	// JournalNamespace holds the journals of UI releases (ConfigMaps): a namespace of the backend's
	// own, as deploy/ui-extension/journals makes it, one per installation.
	JournalNamespace string `json:"journalNamespace"`
	// Unprune is the binary the backend runs, built from this work tree.
	Unprune string `json:"unprune"`
}

// extensionsHolder is what the lock records: the lab (its installations share the bundle) and the
// installation whose argocd-server shows the lab is alive.
type extensionsHolder struct {
	Dir       string `json:"dir"`
	Namespace string `json:"namespace"`
}

// holdExtensions takes ExtensionsDir for this lab's installation, or says who holds it.
func holdExtensions(st *State, cfg ArgoCDConfig) error {
	if err := os.MkdirAll(ExtensionsDir, 0o755); err != nil {
		return err
	}
	me := extensionsHolder{Dir: st.Dir, Namespace: cfg.Namespace}
	b, _ := json.Marshal(me)
	for attempt := 0; attempt < 2; attempt++ {
		f, err := os.OpenFile(extensionsLock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(b)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		var holder extensionsHolder
		data, rerr := os.ReadFile(extensionsLock)
		if rerr == nil {
			rerr = json.Unmarshal(data, &holder)
		}
		server := holder.Namespace + "-server"
		if rerr == nil && holder.Dir == me.Dir {
			// Another installation of this lab: both serve the same bundle.
			return nil
		}
		if rerr == nil {
			if pid := runningPID(holder.Dir, server); pid != 0 {
				return fmt.Errorf("%s, which argocd-server serves UI extensions from on this machine, is in use by the lab in %s (its argocd-server of %s, pid %d): "+
					"one lab at a time may run UI=1; stop that one first (make lab-down LAB_DIR=%s)", ExtensionsDir, holder.Dir, holder.Namespace, pid, holder.Dir)
			}
		}
		// Ours from an earlier run, or its holder is gone: take it over.
		if err := os.Remove(extensionsLock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fmt.Errorf("could not take %s", extensionsLock)
}

// releaseExtensions removes the extension and the lock when this lab holds them.
func releaseExtensions(dir string) {
	data, err := os.ReadFile(extensionsLock)
	if err != nil {
		return
	}
	var holder extensionsHolder
	if json.Unmarshal(data, &holder) != nil || holder.Dir != dir {
		return
	}
	_ = os.RemoveAll(extensionInstalled)
	// Where labs before the installer's layout put it.
	_ = os.RemoveAll(filepath.Join(ExtensionsDir, "unprune"))
	_ = os.Remove(extensionsLock)
}

// extensionInstalled is where argocd-extension-installer leaves unprune's bundle: it extracts the
// release's extension-unprune.tar (resources/unprune/extension-unprune.js) into /tmp/extensions/.
var extensionInstalled = filepath.Join(ExtensionsDir, "resources", "unprune")

// installExtension extracts the tarball a release ships into ExtensionsDir, as the installer does,
// replacing what an earlier run left there.
func installExtension(ctx context.Context, tarball string) error {
	if err := os.RemoveAll(extensionInstalled); err != nil {
		return err
	}
	// Where labs before the installer's layout put it: argocd-server would serve it twice.
	if err := os.RemoveAll(filepath.Join(ExtensionsDir, "unprune")); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xf", tarball, "-C", ExtensionsDir).CombinedOutput(); err != nil {
		return fmt.Errorf("tar -xf %s -C %s: %w: %s", tarball, ExtensionsDir, err, out)
	}
	if _, err := os.Stat(filepath.Join(extensionInstalled, "extension-unprune.js")); err != nil {
		return fmt.Errorf("%s holds no resources/unprune/extension-unprune.js: %w", tarball, err)
	}
	return nil
}

// OwnUI reports whether the lab builds this release with its own UI (lab/build.sh's
// argocd-ui-VERSION): its UI's argo-ui pin, named in lab/modules/argocd-VERSION/argo-ui, is among
// the commits ../shared/third_party/argo-ui holds.
func OwnUI(root, version string) bool {
	_, err := os.Stat(filepath.Join(root, "lab", "modules", "argocd-"+version, "argo-ui"))
	return err == nil
}

// OwnUIVersions are the releases of ArgoCDVersions that OwnUI builds.
func OwnUIVersions(root string) []string {
	var own []string
	for _, v := range ArgoCDVersions {
		if OwnUI(root, v) {
			own = append(own, v)
		}
	}
	return own
}

// ExactUIVersions are the releases of OwnUIVersions built with the argo-ui commit they pin: the
// browser tests' proof runs in those (and `make test` builds them). A release built with a stand-in
// commit (its argo-ui file says "instead-of <pin>": v3.6.1, whose pin ../shared/third_party lacks)
// serves its UI to `make lab-up SERVER=1 UI=1`, built on first use, and is no proof.
func ExactUIVersions(root string) []string {
	var exact []string
	for _, v := range OwnUIVersions(root) {
		b, err := os.ReadFile(filepath.Join(root, "lab", "modules", "argocd-"+v, "argo-ui"))
		if err == nil && !regexp.MustCompile(`(?m)^\s*instead-of `).Match(b) {
			exact = append(exact, v)
		}
	}
	return exact
}

// serverUIEnv is argocd-server's environment with the UI: the proxy extension is off by default
// (cmd/argocd-server: --enable-proxy-extension, $ARGOCD_SERVER_ENABLE_PROXY_EXTENSION).
func serverUIEnv(cfg ArgoCDConfig) []string {
	if !cfg.UI {
		return nil
	}
	return []string{"ARGOCD_SERVER_ENABLE_PROXY_EXTENSION=true"}
}

// prepareUI runs before argocd-server starts: it takes ExtensionsDir, builds the extension and the
// host page (npm and node, extension/build.mjs) and unprune, puts the bundle and the page where
// argocd-server serves them, and configures the proxy extension as deploy/components/ui-extension
// does, with a token made for this lab.
func prepareUI(ctx context.Context, st *State, a *ArgoCD, home string) error {
	cfg := a.Config
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	if err := holdExtensions(st, cfg); err != nil {
		return err
	}
	dist, err := buildExtension(ctx, root)
	if err != nil {
		return err
	}
	if err := installExtension(ctx, filepath.Join(dist, "extension-unprune.tar")); err != nil {
		return err
	}
	for _, f := range []string{"host.html", "unprune-host.js", "unprune-host.css"} {
		if err := copyFile(filepath.Join(dist, hostPage(cfg.Version), f), filepath.Join(home, "static", f)); err != nil {
			return err
		}
	}
	bin, err := buildUnprune(ctx, st, root)
	if err != nil {
		return err
	}
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	ui := &UI{BackendURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), Token: hex.EncodeToString(token), JournalNamespace: journalNamespace(cfg.Namespace), Unprune: bin}
	a.UI = ui
	dyn, err := st.Dynamic()
	if err != nil {
		return err
	}
	// The same keys as deploy/components/ui-extension (argocd-cm.yaml, argocd-rbac-cm.yaml), merged
	// into the lab's objects; the deployer may also invoke it (role:readonly is the viewer's).
	patches := []struct {
		gvr  schema.GroupVersionResource
		name string
		data map[string]any
	}{
		{gvrConfigMap, "argocd-cm", map[string]any{"data": map[string]any{"extension.config.unprune": fmt.Sprintf(
			"services:\n  - url: %s\n    headers:\n      - name: Unprune-Token\n        value: '$unprune.extension.token'\n", ui.BackendURL)}}},
		{gvrConfigMap, "argocd-rbac-cm", map[string]any{"data": map[string]any{"policy.unprune.csv": "p, role:readonly, extensions, invoke, unprune, allow\n" +
			"p, role:" + ServerProject + "-deployer, extensions, invoke, unprune, allow\n"}}},
		{gvrSecret, "argocd-secret", map[string]any{"stringData": map[string]any{"unprune.extension.token": ui.Token}}},
	}
	for _, p := range patches {
		body, _ := json.Marshal(p.data)
		if _, err := dyn.Resource(p.gvr).Namespace(cfg.Namespace).Patch(ctx, p.name, "application/merge-patch+json", body, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("configure the UI extension in %s/%s: %w", cfg.Namespace, p.name, err)
		}
	}
	return nil
}

// startUIBackend runs `unprune extension` as ServiceAccount unprune-extension of the installation's
// namespace, with the RBAC deploy/ui-extension ships, once argocd-server is up.
func startUIBackend(ctx context.Context, st *State, a *ArgoCD, home string) error {
	ui, cfg := a.UI, a.Config
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(home, "unprune-extension.kubeconfig")
	if err := applyExtensionRBAC(ctx, st, root, cfg.Namespace, ui.JournalNamespace, cfg.UIRemoteClusters, kubeconfig); err != nil {
		return err
	}
	port := ui.BackendURL[len("http://127.0.0.1:"):]
	p := process{
		Name: cfg.component("unprune-extension"),
		Path: ui.Unprune,
		Args: []string{"extension", "--listen=127.0.0.1:" + port, "--kubeconfig=" + kubeconfig, "--argocd-namespace=" + cfg.Namespace,
			"--journal-namespace=" + ui.JournalNamespace},
		Env: []string{"UNPRUNE_EXTENSION_TOKEN=" + ui.Token, "HOME=" + filepath.Join(home, "home")},
		Dir: home,
	}
	if cfg.UIRemoteClusters {
		// deploy/ui-extension/remote-clusters's flag (its Role: applyExtensionRBAC).
		p.Args = append(p.Args, "--cluster-credentials=argocd")
	}
	if _, err := p.start(st.Dir); err != nil {
		return err
	}
	if err := waitHTTP(ctx, st, p.Name, ui.BackendURL+"/healthz", 30*time.Second); err != nil {
		return err
	}
	ui.URL = a.ServerURL + "/host.html"
	if OwnUI(root, cfg.Version) {
		ui.ArgoCDURL = a.ServerURL + "/"
	}
	return nil
}

// journalNamespace is where an installation's backend journals: deploy/ui-extension/journals's
// unprune, named after the installation so that the lab's installations keep their own.
func journalNamespace(argoCDNamespace string) string { return argoCDNamespace + "-unprune" }

// applyExtensionRBAC applies the backend's ClusterRole and its Role in Argo CD's namespace from
// deploy/ui-extension/backend (the ClusterRole named after the installation's namespace, so that
// installations keep their own), the journals' namespace with its Role from
// deploy/ui-extension/journals, and writes a kubeconfig holding a token of its ServiceAccount.
func applyExtensionRBAC(ctx context.Context, st *State, root, namespace, journals string, remoteClusters bool, kubeconfig string) error {
	backend, err := yamlDocuments(filepath.Join(root, "deploy", "ui-extension", "backend", "rbac.yaml"))
	if err != nil {
		return err
	}
	if remoteClusters {
		remote, err := yamlDocuments(filepath.Join(root, "deploy", "ui-extension", "remote-clusters", "role.yaml"))
		if err != nil {
			return err
		}
		backend = append(backend, remote...)
	}
	journalDocs, err := yamlDocuments(filepath.Join(root, "deploy", "ui-extension", "journals", "rbac.yaml"))
	if err != nil {
		return err
	}
	dyn, err := st.Dynamic()
	if err != nil {
		return err
	}
	if err := apply(ctx, dyn, gvrNamespace, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": journals}}); err != nil {
		return err
	}
	const account = "unprune-extension"
	clusterRole := account + "-" + namespace
	if err := applyRoles(ctx, dyn, backend, clusterRole, namespace, account, namespace); err != nil {
		return err
	}
	if err := applyRoles(ctx, dyn, journalDocs, clusterRole, journals, account, namespace); err != nil {
		return err
	}
	return st.ServiceAccountKubeconfig(ctx, namespace, account, clusterRole, kubeconfig)
}

// hostPage is the host page with the React the release's UI pins: 19.2.6 for v3.5.1 and v3.6.1
// (ui/pnpm-lock.yaml), 16.14.0 for v2.14.11 through v3.4.7 (ui/yarn.lock; package.json's ^16.9.3).
func hostPage(version string) string {
	if newerVersion("v3.5.0", version) {
		return "host-react16"
	}
	return "host"
}

// buildExtension installs the extension's npm packages from its lockfile when missing and builds
// it; it returns extension/dist.
func buildExtension(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, "extension")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		ci := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		ci.Dir = dir
		if out, err := ci.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm ci in extension/: %w: %s", err, out)
		}
	}
	b := exec.CommandContext(ctx, "node", "build.mjs")
	b.Dir = dir
	b.Env = append(os.Environ(), "UNPRUNE_VERSION="+labVersion)
	if out, err := b.CombinedOutput(); err != nil {
		return "", fmt.Errorf("node extension/build.mjs: %w: %s", err, out)
	}
	return filepath.Join(dir, "dist"), nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// buildUnprune builds the unprune binary the lab runs (the UI's backend, the watch) into the lab's
// state, stamped labVersion so that bundle and backend say one version, as a release's do.
func buildUnprune(ctx context.Context, st *State, root string) (string, error) {
	bin := filepath.Join(st.Dir, "bin", "unprune")
	build := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X github.com/unprune/unprune/internal/version.version="+labVersion, "-o", bin, "./cmd/unprune")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/unprune: %w: %s", err, out)
	}
	return bin, nil
}
