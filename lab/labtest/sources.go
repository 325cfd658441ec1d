package labtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Sources other than a directory of manifests, as Argo CD's repo-server detects them: a path holding
// Chart.yaml is a Helm chart (rendered with the release's helm, `helm template`), one holding
// kustomization.yaml a kustomization (`kustomize build`). Both tools are on the lab's repo-server
// PATH at the versions each Argo CD release pins (lab/README.md).

// HelmChart is a chart a test writes into a Repo with WriteHelmChart.
type HelmChart struct {
	// Name is Chart.yaml's name (default "labtest"); Version its version (default "0.1.0").
	Name    string
	Version string
	// Values is values.yaml; empty writes none.
	Values string
	// Templates are the files of templates/, by file name; HelmConfigMap, HelmSecret and HelmHook
	// make the common ones.
	Templates map[string]string
}

// WriteHelmChart writes chart into dir of the working clone (not yet committed): Chart.yaml
// (apiVersion v2), values.yaml and templates/. Argo CD renders it with the Application's name as the
// release name unless spec.source.helm.releaseName says otherwise.
func (r *Repo) WriteHelmChart(t testing.TB, dir string, chart HelmChart) {
	t.Helper()
	if chart.Name == "" {
		chart.Name = "labtest"
	}
	if chart.Version == "" {
		chart.Version = "0.1.0"
	}
	r.Write(t, dir+"/Chart.yaml", fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ntype: application\n", chart.Name, chart.Version))
	if chart.Values != "" {
		r.Write(t, dir+"/values.yaml", chart.Values)
	}
	for _, name := range SortedKeys(chart.Templates) {
		r.Write(t, dir+"/templates/"+name, chart.Templates[name])
	}
}

// helmLabels are the labels `helm create`'s templates put on every object.
const helmLabels = `  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/managed-by: {{ .Release.Service }}
`

// HelmConfigMap is a chart template of ConfigMap <release name>-<suffix> with helm create's labels
// and data (values are written as given, so they may be template expressions; quote them).
func HelmConfigMap(suffix string, data map[string]string) string {
	return helmObject("ConfigMap", suffix, "", "data", data)
}

// HelmSecret is a chart template of an Opaque Secret <release name>-<suffix> with helm create's
// labels and stringData (written as given, like HelmConfigMap's data).
func HelmSecret(suffix string, stringData map[string]string) string {
	return helmObject("Secret", suffix, "", "stringData", stringData)
}

// HelmHook is a chart template of ConfigMap <release name>-<suffix> that Helm runs as a hook: hook is
// helm.sh/hook's value, which Argo CD maps to its own phases ("pre-install" and "pre-upgrade" to
// PreSync, "post-install" and "post-upgrade" to PostSync). A ConfigMap is healthy once created, so its
// hook completes in the lab, which has no kubelet to run a Job's pods. For the same reason a PostSync
// hook never runs in a chart whose Deployment must first become healthy.
func HelmHook(suffix, hook string) string {
	return helmObject("ConfigMap", suffix, "  annotations:\n    helm.sh/hook: "+hook+"\n", "data", map[string]string{"hook": hook})
}

func helmObject(kind, suffix, annotations, field string, data map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: %s\nmetadata:\n  name: {{ .Release.Name }}-%s\n%s%s", kind, suffix, helmLabels, annotations)
	if kind == "Secret" {
		b.WriteString("type: Opaque\n")
	}
	if len(data) > 0 {
		b.WriteString(field + ":\n")
		for _, k := range SortedKeys(data) {
			fmt.Fprintf(&b, "  %s: %s\n", k, data[k])
		}
	}
	return b.String()
}

// Kustomization is a kustomization.yaml a test writes into a Repo with WriteKustomization: a base
// (Files only) or an overlay of one (Bases, with the transformations overlays commonly apply).
type Kustomization struct {
	// Files are manifests written beside kustomization.yaml and listed as its resources, by file name.
	Files map[string]string
	// Bases are other kustomizations listed as resources, relative to this one ("../base").
	Bases []string
	// NamePrefix and NameSuffix are prepended and appended to every object's name.
	NamePrefix string
	NameSuffix string
	// Labels are added to every object's metadata (kustomize's labels, without selectors).
	Labels map[string]string
}

// WriteKustomization writes k into dir of the working clone (not yet committed).
func (r *Repo) WriteKustomization(t testing.TB, dir string, k Kustomization) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if k.NamePrefix != "" {
		fmt.Fprintf(&b, "namePrefix: %s\n", k.NamePrefix)
	}
	if k.NameSuffix != "" {
		fmt.Fprintf(&b, "nameSuffix: %s\n", k.NameSuffix)
	}
	if len(k.Labels) > 0 {
		b.WriteString("labels:\n- pairs:\n")
		for _, key := range SortedKeys(k.Labels) {
			fmt.Fprintf(&b, "    %s: %q\n", key, k.Labels[key])
		}
	}
	b.WriteString("resources:\n")
	for _, base := range k.Bases {
		fmt.Fprintf(&b, "- %s\n", base)
	}
	for _, name := range SortedKeys(k.Files) {
		fmt.Fprintf(&b, "- %s\n", name)
		r.Write(t, dir+"/"+name, k.Files[name])
	}
	r.Write(t, dir+"/kustomization.yaml", b.String())
}

// renderedSource reports whether dir of the working clone holds a Helm chart or a kustomization,
// which Argo CD renders instead of reading the directory's manifests.
func (r *Repo) renderedSource(dir string) bool {
	for _, f := range []string{"Chart.yaml", "kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(r.work, dir, f)); err == nil {
			return true
		}
	}
	return false
}
