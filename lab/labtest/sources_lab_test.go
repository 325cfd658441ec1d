//go:build lab

package labtest_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// The helm each release's repo-server runs (lab/modules/argocd-*/repo-server-tools), as a chart
// sees it in .Capabilities.HelmVersion.
var repoServerHelm = map[string]string{"v3.6.1": "v4.3.1", "v3.5.1": "v4.2.1", "v3.4.7": "v3.19.4", "v3.3.14": "v3.19.4", "v3.2.11": "v3.18.4", "v3.1.16": "v3.18.4", "v3.0.23": "v3.17.1", "v2.14.11": "v3.16.3"}

// TestHelmAndKustomize: on every Argo CD release the lab runs (CI's, or UNPRUNE_LAB_MATRIX's), the real repo-server renders a Helm
// chart with the release's own helm and a kustomize overlay with its kustomize, and the real
// controller syncs them: the chart's objects are named from the app's name through .Release.Name,
// its pre-install and post-install hooks run as PreSync and PostSync hooks, and every object is
// tracked by the app.
func TestHelmAndKustomize(t *testing.T) {
	env := labtest.Get(t)
	for _, version := range labtest.Lines(lab.CIArgoCDVersions...) {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version})
			t.Run("helm", func(t *testing.T) {
				t.Parallel()
				testHelmChart(t, env, install)
			})
			t.Run("kustomize", func(t *testing.T) {
				t.Parallel()
				testKustomizeOverlay(t, env, install)
			})
			t.Run("deployment", func(t *testing.T) {
				t.Parallel()
				testDeploymentWithoutKubelet(t, install)
			})
		})
	}
}

func testHelmChart(t *testing.T, env *labtest.Env, install *labtest.Install) {
	version := install.Config.Version
	repo := labtest.NewRepo(t)
	name := labtest.UniqueName("helm")
	repo.WriteHelmChart(t, "chart", labtest.HelmChart{
		Name:   "shop",
		Values: "greeting: from-values\npassword: lab-only\n",
		Templates: map[string]string{
			"config.yaml": labtest.HelmConfigMap("config", map[string]string{
				"release":     "{{ .Release.Name | quote }}",
				"greeting":    "{{ .Values.greeting | quote }}",
				"helm":        "{{ .Capabilities.HelmVersion.Version | quote }}",
				"kubeVersion": "{{ .Capabilities.KubeVersion.Version | quote }}",
			}),
			"secret.yaml":    labtest.HelmSecret("secret", map[string]string{"password": "{{ .Values.password | quote }}"}),
			"pre-hook.yaml":  labtest.HelmHook("pre", "pre-install"),
			"post-hook.yaml": labtest.HelmHook("post", "post-install"),
		},
	})
	app := install.CreateApp(t, labtest.AppOptions{Name: name, Repo: repo, Path: "chart",
		Helm: &labtest.HelmSource{Parameters: map[string]string{"greeting": "from-parameter"}}})
	head := repo.Head(t)
	config, secret, pre, post := name+"-config", name+"-secret", name+"-pre", name+"-post"

	// Before any sync the controller compares the rendered chart: Helm, and the objects named from
	// the release name missing. The hooks are no target of the comparison.
	s := app.WaitStatus(t, 90*time.Second, "to compare the chart", func(s labtest.Status) bool {
		_, ok := s.Find("ConfigMap", config)
		return s.Revision == head && ok
	})
	if s.SourceType != "Helm" || s.Sync != "OutOfSync" {
		t.Errorf("%s before its first sync: %s; want source Helm, OutOfSync", version, s)
	}
	if _, ok := s.Find("ConfigMap", pre); ok {
		t.Errorf("%s before its first sync lists hook %s: %s", version, pre, s)
	}

	op := app.Sync(t, false)
	if op.Phase != "Succeeded" {
		t.Fatalf("%s: sync of the chart: %s %s", version, op.Phase, op.Message)
	}
	wantResult := map[string]struct{ phase, hookType string }{
		pre: {"PreSync", "PreSync"}, config: {"Sync", ""}, secret: {"Sync", ""}, post: {"PostSync", "PostSync"},
	}
	for obj, want := range wantResult {
		found := false
		for _, r := range op.Results {
			if r.Name != obj {
				continue
			}
			found = true
			if r.SyncPhase != want.phase || r.HookType != want.hookType || (want.hookType != "" && r.HookPhase != "Succeeded") {
				t.Errorf("%s: sync result of %s %s: phase %s, hook %q %q; want phase %s, hook %q Succeeded",
					version, r.Kind, obj, r.SyncPhase, r.HookType, r.HookPhase, want.phase, want.hookType)
			}
		}
		if !found {
			t.Errorf("%s: the sync's results %+v have no row for %s", version, op.Results, obj)
		}
	}

	// Every live hook is listed, requiring pruning, and counts for nothing in the sync status. The
	// PostSync hook is created after the sync's last comparison: the controller lists it at its next.
	rows := []labtest.Resource{
		{Kind: "ConfigMap", Name: config, Status: "Synced"},
		{Kind: "Secret", Name: secret, Status: "Synced"},
		{Kind: "ConfigMap", Name: pre, Hook: true, RequiresPruning: true},
		{Kind: "ConfigMap", Name: post, Hook: true, RequiresPruning: true},
	}
	listed := func(s labtest.Status, want labtest.Resource) bool {
		r, ok := s.Find(want.Kind, want.Name)
		return ok && r.Status == want.Status && r.Hook == want.Hook && r.RequiresPruning == want.RequiresPruning
	}
	s = app.RefreshUntil(t, labtest.ControllerTimeout, "to be Synced at "+head+" listing every live hook", func(s labtest.Status) bool {
		if s.Sync != "Synced" || s.Revision != head {
			return false
		}
		for _, want := range rows {
			if !listed(s, want) {
				return false
			}
		}
		return true
	})
	if s.SourceType != "Helm" {
		t.Errorf("%s: source type %q, want Helm", version, s.SourceType)
	}

	ctx := labtest.Context(t)
	cm, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, config, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the chart's ConfigMap: %v", version, err)
	}
	for k, want := range map[string]string{"release": name, "greeting": "from-parameter", "helm": repoServerHelm[version]} {
		if cm.Data[k] != want {
			t.Errorf("%s: ConfigMap %s data %s = %q, want %q", version, config, k, cm.Data[k], want)
		}
	}
	// Argo CD gives helm the destination cluster's version (the lab's Kubernetes v1.35.4).
	if !strings.HasPrefix(cm.Data["kubeVersion"], "v1.35.") {
		t.Errorf("%s: the chart saw Kubernetes %q, want the lab's v1.35", version, cm.Data["kubeVersion"])
	}
	if cm.Labels["app.kubernetes.io/managed-by"] != "Helm" || cm.Labels["helm.sh/chart"] != "shop-0.1.0" {
		t.Errorf("%s: ConfigMap %s labels %v, want the chart's", version, config, cm.Labels)
	}
	wantTrackedBy(t, version, cm.Labels, cm.Annotations, app, "ConfigMap", config)
	sec, err := env.Kube.CoreV1().Secrets(app.DestNamespace).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the chart's Secret: %v", version, err)
	}
	if string(sec.Data["password"]) != "lab-only" {
		t.Errorf("%s: Secret %s password = %q, want the values' lab-only", version, secret, sec.Data["password"])
	}
	wantTrackedBy(t, version, sec.Labels, sec.Annotations, app, "Secret", secret)
	for hook, kind := range map[string]string{pre: "pre-install", post: "post-install"} {
		h, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, hook, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: hook %s: %v", version, hook, err)
			continue
		}
		if h.Annotations["helm.sh/hook"] != kind {
			t.Errorf("%s: hook %s annotations %v", version, hook, h.Annotations)
		}
		wantTrackedBy(t, version, h.Labels, h.Annotations, app, "ConfigMap", hook)
	}
}

func testKustomizeOverlay(t *testing.T, env *labtest.Env, install *labtest.Install) {
	version := install.Config.Version
	repo := labtest.NewRepo(t)
	repo.WriteKustomization(t, "kustomize/base", labtest.Kustomization{Files: map[string]string{
		"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  level: base\n",
	}})
	repo.WriteKustomization(t, "kustomize/prod", labtest.Kustomization{
		Bases:      []string{"../base"},
		NamePrefix: "prod-",
		Labels:     map[string]string{"env": "prod"},
	})
	app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "kustomize/prod"})
	head := repo.Head(t)
	app.WaitStatus(t, 90*time.Second, "to compare the overlay", func(s labtest.Status) bool {
		_, ok := s.Find("ConfigMap", "prod-settings")
		return s.Revision == head && ok
	})
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("%s: sync of the overlay: %s %s", version, op.Phase, op.Message)
	}
	s := app.WaitSynced(t, head)
	if r, ok := s.Find("ConfigMap", "prod-settings"); s.SourceType != "Kustomize" || !ok || r.Status != "Synced" || len(s.Resources) != 1 {
		t.Errorf("%s: after the sync: %s; want source Kustomize and the one ConfigMap prod-settings Synced", version, s)
	}
	cm, err := env.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(labtest.Context(t), "prod-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the overlay's ConfigMap: %v", version, err)
	}
	if cm.Labels["env"] != "prod" || cm.Data["level"] != "base" {
		t.Errorf("%s: ConfigMap prod-settings labels %v data %v; want env=prod from the overlay, level=base from the base", version, cm.Labels, cm.Data)
	}
	wantTrackedBy(t, version, cm.Labels, cm.Annotations, app, "ConfigMap", "prod-settings")
}

// wantTrackedBy checks the tracking the release's default method writes: the instance label in
// v2.14 (label), the tracking-id annotation from v3.0 (annotation, and no label of Argo CD's; a
// chart's own app.kubernetes.io/instance label is the chart's).
func wantTrackedBy(t *testing.T, version string, labels, annotations map[string]string, app *labtest.App, kind, name string) {
	t.Helper()
	if version == "v2.14.11" {
		if labels["app.kubernetes.io/instance"] != app.Instance() {
			t.Errorf("%s: %s %s labels %v; want app.kubernetes.io/instance=%s", version, kind, name, labels, app.Instance())
		}
		if id, ok := annotations[trackingAnnotation]; ok {
			t.Errorf("%s: %s %s carries %s=%q; label tracking writes none", version, kind, name, trackingAnnotation, id)
		}
		return
	}
	want := fmt.Sprintf("%s:/%s:%s/%s", app.Instance(), kind, app.DestNamespace, name)
	if annotations[trackingAnnotation] != want {
		t.Errorf("%s: %s %s: %s = %q, want %q", version, kind, name, trackingAnnotation, annotations[trackingAnnotation], want)
	}
}

// TestRepoServerToolVersions: the helm and kustomize components say the versions they are named
// for, as the releases do; Argo CD reads kustomize's (`kustomize version --short`) to choose flags.
func TestRepoServerToolVersions(t *testing.T) {
	env := labtest.Get(t)
	for _, version := range labtest.Lines(lab.CIArgoCDVersions...) {
		tools, err := lab.RepoServerTools(env.Root, version)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tools {
			dirs, err := lab.Build(labtest.Context(t), env.Root, c)
			if err != nil {
				t.Fatal(err)
			}
			tool, want, _ := strings.Cut(c, "-")
			args := []string{"version", "--short"}
			if tool == "kustomize" {
				want = "{kustomize/" + want + " "
			}
			out, err := exec.Command(filepath.Join(dirs.Tools[c], tool), args...).Output()
			if err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("Argo CD %s's %s %s: %q, %v; want it to start with %q", version, tool, strings.Join(args, " "), out, err, want)
			}
		}
	}
}

// testDeploymentWithoutKubelet shows what the lab's lack of a kubelet (and scheduler) means for
// syncs: a Deployment never becomes healthy. The last step of a sync does not wait for health, so a
// sync of the Deployment alone, or after a PreSync hook, succeeds; a step after it (a PostSync hook)
// waits until the Deployment is healthy (gitops-engine pkg/sync/sync_context.go, multiStep and "all
// tasks run"), and so for ever here.
func testDeploymentWithoutKubelet(t *testing.T, install *labtest.Install) {
	version := install.Config.Version
	repo := labtest.NewRepo(t)
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
`
	repo.WriteHelmChart(t, "chart", labtest.HelmChart{Templates: map[string]string{"deployment.yaml": deployment}})
	app := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "chart"})
	web := app.Name + "-web"
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("%s: one-step sync of a Deployment: %s %s; want Succeeded", version, op.Phase, op.Message)
	}
	s := app.WaitSynced(t, repo.Head(t))
	if r, ok := s.Find("Deployment", web); !ok || r.Status != "Synced" || s.Health != "Progressing" {
		t.Errorf("%s: after the one-step sync: %s health %s; want Deployment %s Synced, the app Progressing", version, s, s.Health, web)
	}

	repo.WriteHelmChart(t, "chart", labtest.HelmChart{Templates: map[string]string{
		"deployment.yaml": deployment, "pre.yaml": labtest.HelmHook("pre", "pre-install")}})
	head := repo.Commit(t, "add a PreSync hook")
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+head, func(s labtest.Status) bool { return s.Revision == head })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("%s: sync of a PreSync hook and a Deployment: %s %s; want Succeeded", version, op.Phase, op.Message)
	}

	repo.WriteHelmChart(t, "chart", labtest.HelmChart{Templates: map[string]string{
		"deployment.yaml": deployment, "post.yaml": labtest.HelmHook("post", "post-install")}})
	head = repo.Commit(t, "a PostSync hook instead")
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+head, func(s labtest.Status) bool { return s.Revision == head })
	initiator := app.RequestSync(t, false)
	want := "healthy state of apps/Deployment/" + web
	app.WaitStatus(t, 90*time.Second, "to wait for "+web+" to be healthy", func(s labtest.Status) bool {
		return s.Operation.Initiator == initiator && s.Operation.Phase == "Running" && strings.Contains(s.Operation.Message, want)
	})
}
