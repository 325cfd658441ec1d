package podsecurity

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// here is this package's directory: a test runs in it (the source file's path is not kept by
// -trimpath builds).
func here() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return dir
}

// deploy is the repository's deploy/.
func deploy() string { return filepath.Join(here(), "..", "..", "deploy") }

// build runs kustomize on a kustomization of resources and components (absolute paths) in
// namespace ns, and returns the Deployments it renders.
func build(t *testing.T, ns string, resources, components []string) map[string]*appsv1.Deployment {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\n", ns)
	for _, list := range []struct {
		key   string
		paths []string
	}{{"resources", resources}, {"components", components}} {
		if len(list.paths) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s:\n", list.key)
		for _, p := range list.paths {
			if strings.HasSuffix(p, ".yaml") {
				// kustomize reads files only below the kustomization: copy them in.
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), raw, 0o600); err != nil {
					t.Fatal(err)
				}
				p = filepath.Base(p)
			} else if rel, err := filepath.Rel(dir, p); err == nil {
				p = rel
			}
			fmt.Fprintf(&b, "  - %s\n", p)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out := map[string]*appsv1.Deployment{}
	for _, r := range res.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(raw, &d); err != nil {
			t.Fatalf("Deployment %s: %v", r.GetName(), err)
		}
		out[d.Name] = &d
	}
	return out
}

// restricted evaluates a pod template against Pod Security "restricted" at the latest version, as
// the API server's PodSecurity admission does for a namespace labelled
// pod-security.kubernetes.io/enforce: restricted, and returns why it would refuse the pod.
func restricted(t *testing.T, tmpl corev1.PodTemplateSpec) string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec)
	agg := policy.AggregateCheckResults(results)
	if agg.Allowed {
		return ""
	}
	return agg.ForbiddenReason() + ": " + agg.ForbiddenDetail()
}

// argoCDReleases are the releases whose install.yaml the tests read: the oldest release line the
// extension supports and the newest the lab runs.
var argoCDReleases = []string{"v2.14.11", "v3.6.1"}

// TestArgoCDServerWithTheExtensionIsRestricted: argocd-server as Argo CD's own manifests ship it is
// admitted in a namespace enforcing "restricted", and stays admitted with the component's init
// containers (the installer and its check) — the pod a `restricted` Argo CD namespace would
// otherwise refuse to create. The backend's pod is admitted too.
func TestArgoCDServerWithTheExtensionIsRestricted(t *testing.T) {
	for _, release := range argoCDReleases {
		t.Run(release, func(t *testing.T) {
			install := installOf(t, release)
			plain := build(t, "argocd", []string{install}, nil)["argocd-server"]
			if why := restricted(t, plain.Spec.Template); why != "" {
				t.Fatalf("argocd-server of %s without the extension is refused (the stand-in is wrong): %s", release, why)
			}
			deps := build(t, "argocd", []string{install}, []string{filepath.Join(deploy(), "components", "ui-extension")})
			server := deps["argocd-server"]
			if n := len(server.Spec.Template.Spec.InitContainers); n != 2 {
				t.Fatalf("%d init containers: want the installer and its check", n)
			}
			if why := restricted(t, server.Spec.Template); why != "" {
				t.Errorf("argocd-server with the extension is refused under restricted: %s", why)
			}
			backend := deps["unprune-extension"]
			if backend == nil {
				t.Fatal("no backend Deployment")
			}
			if why := restricted(t, backend.Spec.Template); why != "" {
				t.Errorf("the backend is refused under restricted: %s", why)
			}
		})
	}
}

// TestTheCheckBites: the securityContext the installer's README gives (runAsUser and
// allowPrivilegeEscalation alone), which the component shipped before, is refused — so the test
// above would catch an init container that drops back to it.
func TestTheCheckBites(t *testing.T) {
	install := installOf(t, "v3.6.1")
	server := build(t, "argocd", []string{install}, []string{filepath.Join(deploy(), "components", "ui-extension")})["argocd-server"]
	user, no := int64(1000), false
	server.Spec.Template.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &user, AllowPrivilegeEscalation: &no}
	why := restricted(t, server.Spec.Template)
	for _, want := range []string{"unprune-extension", "capabilities", "runAsNonRoot", "seccompProfile"} {
		if !strings.Contains(why, want) {
			t.Errorf("the README's securityContext: %q does not name %s", why, want)
		}
	}
}

// TestTheWatchIsRestricted: deploy/base's pod is admitted under restricted too.
func TestTheWatchIsRestricted(t *testing.T) {
	watch := build(t, "argocd", []string{filepath.Join(deploy(), "base")}, nil)["unprune-watch"]
	if watch == nil {
		t.Fatal("no watch Deployment")
	}
	if why := restricted(t, watch.Spec.Template); why != "" {
		t.Errorf("the watch is refused under restricted: %s", why)
	}
}
