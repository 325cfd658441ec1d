package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// installerImage is argocd-extension-installer by the digest its own README gives for v0.0.9.
var installerImage = regexp.MustCompile(`^quay\.io/argoprojlabs/argocd-extension-installer:v[0-9.]+@sha256:[0-9a-f]{64}$`)

func envOf(c map[string]any) map[string]string {
	env := map[string]string{}
	for _, e := range asSlice(c["env"]) {
		m := e.(map[string]any)
		env[fmt.Sprint(m["name"])] = fmt.Sprint(m["value"])
	}
	return env
}

func containerImageTag(t *testing.T, objs []map[string]any, deployment string) string {
	t.Helper()
	d := named(objs, "Deployment", deployment)
	if d == nil {
		t.Fatalf("no Deployment %s", deployment)
	}
	image := fmt.Sprint(asSlice(podSpec(d)["containers"])[0].(map[string]any)["image"])
	repo, tag, found := strings.Cut(image, ":")
	if !found || repo != "ghcr.io/unprune/unprune" {
		t.Fatalf("%s runs %s", deployment, image)
	}
	return tag
}

// TestUIExtensionComponent: the component installs the bundle into argocd-server's /tmp/extensions/
// with argocd-extension-installer (by digest), checks after it that the bundle is there, turns the
// proxy extension on and points it at the backend with the token from argocd-secret, lets
// role:readonly invoke it in a policy file of its own (the operator's policy.csv untouched), and runs
// the backend with the token it requires, journaling into namespace unprune.
func TestUIExtensionComponent(t *testing.T) {
	objs := buildUIExtension(t)
	server := podSpec(named(objs, "Deployment", "argocd-server"))
	inits := asSlice(server["initContainers"])
	if len(inits) != 2 {
		t.Fatalf("init containers %v; want the installer and its check", inits)
	}
	install, check := inits[0].(map[string]any), inits[1].(map[string]any)
	if install["name"] != "unprune-extension" || check["name"] != "unprune-extension-check" {
		t.Fatalf("init containers %v, %v: the check must run after the installer", install["name"], check["name"])
	}
	env := envOf(install)
	if !strings.HasSuffix(env["EXTENSION_URL"], "/extension-unprune.tar") || !strings.HasSuffix(env["EXTENSION_CHECKSUM_URL"], "/extension-unprune_checksums.txt") {
		t.Errorf("installer env %v", env)
	}
	for _, c := range []map[string]any{install, check} {
		if !installerImage.MatchString(fmt.Sprint(c["image"])) {
			t.Errorf("%s runs %v: want argocd-extension-installer by digest", c["name"], c["image"])
		}
	}
	// A failed download is visible: the installer exits 0 whatever happens, so the check fails the
	// pod when the file argocd-server would serve is not there.
	script := fmt.Sprint(check["command"])
	if !strings.Contains(script, "test -s /tmp/extensions/resources/unprune/extension-unprune.js") || !strings.Contains(script, "exit 1") {
		t.Errorf("the check %v does not fail without the bundle", script)
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
	if !mounted(install) || !mounted(check) || !mounted(container) || container["image"] != "quay.io/argoproj/argocd:v3.6.1" {
		t.Errorf("/tmp/extensions/ is not shared by the installer, its check and argocd-server: %v / %v", install["volumeMounts"], container)
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
	if !strings.Contains(args, "extension") || !strings.Contains(args, "--token-file=/etc/unprune-extension/token") || !strings.Contains(args, "--listen=:8080") ||
		!strings.Contains(args, "--journal-namespace=unprune ") {
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

// TestUIExtensionOneVersion: the release is written once. The backend image's tag is the tag
// deploy/base runs (hack/dist -pin-image writes both before a release, -check-image refuses a
// release where they differ), and the component downloads the bundle and its checksums of that
// very release, so the component's ?ref= decides all three.
func TestUIExtensionOneVersion(t *testing.T) {
	objs := buildUIExtension(t)
	tag := containerImageTag(t, objs, "unprune-extension")
	if !releaseTagRE.MatchString(tag) {
		t.Errorf("the backend runs tag %q: a release's tag, not latest", tag)
	}
	if base := containerImageTag(t, Build(t, "base"), "unprune-watch"); base != tag {
		t.Errorf("deploy/base runs %s, the UI extension's backend %s: one release pins both", base, tag)
	}
	standalone := containerImageTag(t, Build(t, "ui-extension/backend"), "unprune-extension")
	if standalone != tag {
		t.Errorf("deploy/ui-extension/backend alone runs %s, with the component %s", standalone, tag)
	}
	server := podSpec(named(objs, "Deployment", "argocd-server"))
	release := "https://github.com/unprune/unprune/releases/download/" + tag + "/"
	for _, ic := range asSlice(server["initContainers"]) {
		c := ic.(map[string]any)
		for name, v := range envOf(c) {
			switch name {
			case "EXTENSION_URL", "EXTENSION_CHECKSUM_URL":
				if !strings.HasPrefix(v, release) {
					t.Errorf("%s %s = %s: want the bundle of %s", c["name"], name, v, tag)
				}
			case "EXTENSION_VERSION":
				if v != tag {
					t.Errorf("%s %s = %s, want %s", c["name"], name, v, tag)
				}
			}
		}
	}
}

// argoCDNamespace is where buildUIExtension puts Argo CD.
const argoCDNamespace = "argocd"

// backendClusterRules are the backend's cluster-wide rules, exactly: reads of what the watch reads
// (deploy/base/clusterrole.yaml), never a watch, never a write, Pods and ConfigMaps by name only.
var backendClusterRules = []rule{
	{groups: []string{"argoproj.io"}, resources: []string{"applications", "appprojects", "applicationsets"}, verbs: []string{"get", "list"}},
	{groups: []string{""}, resources: []string{"namespaces", "persistentvolumes", "persistentvolumeclaims", "services", "serviceaccounts", "replicationcontrollers", "limitranges", "resourcequotas", "endpoints", "podtemplates"}, verbs: []string{"get", "list"}},
	{groups: []string{""}, resources: []string{"pods", "configmaps"}, verbs: []string{"get"}},
	{groups: []string{"apiextensions.k8s.io"}, resources: []string{"customresourcedefinitions"}, verbs: []string{"get", "list"}},
	{groups: []string{"storage.k8s.io"}, resources: []string{"storageclasses"}, verbs: []string{"get", "list"}},
	{groups: []string{"storage.k8s.io"}, resources: []string{"csistoragecapacities"}, verbs: []string{"list"}},
	{groups: []string{"rbac.authorization.k8s.io"}, resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, verbs: []string{"get", "list"}},
	{groups: []string{"admissionregistration.k8s.io"}, resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}, verbs: []string{"get", "list"}},
	{groups: []string{"apiregistration.k8s.io"}, resources: []string{"apiservices"}, verbs: []string{"get", "list"}},
	{groups: []string{"apps"}, resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets", "controllerrevisions"}, verbs: []string{"get", "list"}},
	{groups: []string{"batch"}, resources: []string{"jobs", "cronjobs"}, verbs: []string{"get", "list"}},
	{groups: []string{"networking.k8s.io"}, resources: []string{"ingresses", "networkpolicies"}, verbs: []string{"get", "list"}},
	{groups: []string{"policy"}, resources: []string{"poddisruptionbudgets"}, verbs: []string{"get", "list"}},
	{groups: []string{"autoscaling"}, resources: []string{"horizontalpodautoscalers"}, verbs: []string{"get", "list"}},
	{groups: []string{"discovery.k8s.io"}, resources: []string{"endpointslices"}, verbs: []string{"get", "list"}},
	{groups: []string{"coordination.k8s.io"}, resources: []string{"leases"}, verbs: []string{"list"}},
	{groups: []string{"resource.k8s.io"}, resources: []string{"resourceclaims", "resourceclaimtemplates"}, verbs: []string{"list"}},
}

// backendArgoCDRules are its rules in Argo CD's namespace: Argo CD's settings, by name, read only.
var backendArgoCDRules = []rule{
	{groups: []string{""}, resources: []string{"configmaps"}, verbs: []string{"get"}, names: []string{"argocd-cm", "argocd-cmd-params-cm"}},
}

// journalRules are its rules in the journals' namespace (unprune), which holds nothing else.
var journalRules = []rule{
	{groups: []string{""}, resources: []string{"configmaps"}, verbs: []string{"get", "list", "create", "update"}},
}

// grant is one (namespace, group, resource, verb, name) a role gives; namespace "" is every
// namespace, name "" every name.
type grant struct{ namespace, group, resource, verb, name string }

// grants flattens what the objects' roles give the subject, through the bindings that name it.
func grants(t *testing.T, objs []map[string]any, account, accountNS string) []grant {
	t.Helper()
	var out []grant
	for _, b := range append(Kind(objs, "ClusterRoleBinding"), Kind(objs, "RoleBinding")...) {
		bound := false
		for _, s := range asSlice(b["subjects"]) {
			m := s.(map[string]any)
			bound = bound || (m["kind"] == "ServiceAccount" && m["name"] == account && m["namespace"] == accountNS)
		}
		if !bound {
			continue
		}
		ref := b["roleRef"].(map[string]any)
		meta := b["metadata"].(map[string]any)
		where := "" // a ClusterRoleBinding grants everywhere
		if b["kind"] == "RoleBinding" {
			where = fmt.Sprint(meta["namespace"])
		}
		var role map[string]any
		for _, r := range Kind(objs, fmt.Sprint(ref["kind"])) {
			rm := r["metadata"].(map[string]any)
			if rm["name"] == ref["name"] && (ref["kind"] == "ClusterRole" || rm["namespace"] == where) {
				role = r
			}
		}
		if role == nil {
			t.Errorf("%s %v binds %v, which is not shipped", b["kind"], meta["name"], ref)
			continue
		}
		for _, r := range rules(t, role) {
			names := r.names
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.groups {
				for _, res := range r.resources {
					for _, v := range r.verbs {
						for _, n := range names {
							out = append(out, grant{where, g, res, v, n})
						}
					}
				}
			}
		}
	}
	return out
}

// writesArgoCDConfigMaps lists what of grants lets the subject change a ConfigMap in Argo CD's
// namespace (argocd-cm, argocd-rbac-cm: Argo CD admin for whoever holds the token).
func writesArgoCDConfigMaps(gs []grant) []grant {
	var out []grant
	for _, g := range gs {
		inArgoCD := g.namespace == "" || g.namespace == argoCDNamespace
		configMaps := (g.group == "" || g.group == "*") && (g.resource == "configmaps" || g.resource == "*")
		write := !slices.Contains([]string{"get", "list", "watch"}, g.verb)
		if inArgoCD && configMaps && write {
			out = append(out, g)
		}
	}
	return out
}

// TestUIExtensionRBAC: the backend's roles are exactly the ones above — cluster-wide reads that are
// the watch's, Argo CD's settings by name in its namespace, the journals in their own namespace —
// and bound to its ServiceAccount alone; nothing lets it write a ConfigMap of Argo CD's namespace.
func TestUIExtensionRBAC(t *testing.T) {
	objs := append(buildUIExtension(t), Build(t, "ui-extension/journals")...)
	var clusterRoles, argoRoles, journalRoles []map[string]any
	for _, r := range Kind(objs, "ClusterRole") {
		clusterRoles = append(clusterRoles, r)
	}
	for _, r := range Kind(objs, "Role") {
		switch ns := r["metadata"].(map[string]any)["namespace"]; ns {
		case argoCDNamespace:
			argoRoles = append(argoRoles, r)
		case "unprune":
			journalRoles = append(journalRoles, r)
		default:
			t.Errorf("a Role in namespace %v", ns)
		}
	}
	for _, c := range []struct {
		what  string
		roles []map[string]any
		want  []rule
	}{
		{"cluster-wide", clusterRoles, backendClusterRules},
		{"in Argo CD's namespace", argoRoles, backendArgoCDRules},
		{"in the journals' namespace", journalRoles, journalRules},
	} {
		if len(c.roles) != 1 {
			t.Errorf("%d roles %s, want 1", len(c.roles), c.what)
			continue
		}
		if got := rules(t, c.roles[0]); !slices.EqualFunc(got, c.want, equalRule) {
			t.Errorf("the backend's rules %s:\n got %+v\nwant %+v", c.what, got, c.want)
		}
	}
	gs := grants(t, objs, "unprune-extension", argoCDNamespace)
	if w := writesArgoCDConfigMaps(gs); len(w) > 0 {
		t.Errorf("the backend may change ConfigMaps of Argo CD's namespace: %+v", w)
	}
	for _, g := range gs {
		if g.resource == "secrets" || strings.Contains(g.group+g.resource+g.verb, "*") {
			t.Errorf("the backend is granted %+v", g)
		}
	}
	// Bound to the backend alone: the journals' binding names it in Argo CD's namespace.
	for _, b := range append(Kind(objs, "ClusterRoleBinding"), Kind(objs, "RoleBinding")...) {
		if s := asSlice(b["subjects"]); len(s) != 1 || s[0].(map[string]any)["name"] != "unprune-extension" || s[0].(map[string]any)["namespace"] != argoCDNamespace {
			t.Errorf("%v binds %v", b["metadata"], s)
		}
	}
	if ns := named(objs, "Namespace", "unprune"); ns == nil {
		t.Error("deploy/ui-extension/journals does not create namespace unprune")
	}
}

// TestUIExtensionRBACCatchesAWiderRole: the check above is not vacuous — the Role this backend had
// before (create and update of every ConfigMap in Argo CD's namespace), or any write verb added to
// its Role there, or a ClusterRole write on ConfigMaps, is caught.
func TestUIExtensionRBACCatchesAWiderRole(t *testing.T) {
	objs := buildUIExtension(t)
	for _, verbs := range [][]any{{"get", "list", "create", "update"}, {"get", "patch"}, {"delete"}, {"*"}} {
		wider := widen(t, objs, "Role", verbs)
		if w := writesArgoCDConfigMaps(grants(t, wider, "unprune-extension", argoCDNamespace)); len(w) == 0 {
			t.Errorf("a Role with verbs %v on ConfigMaps in Argo CD's namespace is not caught", verbs)
		}
		if got := rules(t, Kind(wider, "Role")[0]); slices.EqualFunc(got, backendArgoCDRules, equalRule) {
			t.Errorf("verbs %v: the exact rules do not differ", verbs)
		}
	}
	wider := widen(t, objs, "ClusterRole", []any{"update"})
	if w := writesArgoCDConfigMaps(grants(t, wider, "unprune-extension", argoCDNamespace)); len(w) == 0 {
		t.Error("a ClusterRole updating ConfigMaps is not caught")
	}
}

// widen returns a copy of objs whose first role of kind gets a rule on every ConfigMap with verbs.
func widen(t *testing.T, objs []map[string]any, kind string, verbs []any) []map[string]any {
	t.Helper()
	raw, err := yaml.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := yaml.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	role := Kind(out, kind)[0]
	role["rules"] = append(asSlice(role["rules"]), map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": verbs})
	return out
}

func equalRule(a, b rule) bool {
	return slices.Equal(a.groups, b.groups) && slices.Equal(a.resources, b.resources) && slices.Equal(a.verbs, b.verbs) && slices.Equal(a.names, b.names)
}

// TestUIExtensionReadsNoMoreThanTheWatch: every cluster-wide read of the backend is one the watch
// has (less its watches): the UI shows audit's answers, which need nothing the watch lacks.
func TestUIExtensionReadsNoMoreThanTheWatch(t *testing.T) {
	watch := map[grant]bool{}
	for _, g := range grants(t, Build(t, "base"), "unprune-watch", argoCDNamespace) {
		if g.namespace == "" {
			watch[g] = true
		}
	}
	for _, g := range grants(t, buildUIExtension(t), "unprune-extension", argoCDNamespace) {
		if g.namespace == "" && !watch[g] {
			t.Errorf("the backend may %s %s.%s cluster-wide; the watch may not", g.verb, g.resource, g.group)
		}
	}
}

// TestUIExtensionNetworkPolicy: the backend admits argocd-server's pods, on its port, and nothing
// else (no egress rule: it must reach the API server, whose address depends on the CNI's view).
func TestUIExtensionNetworkPolicy(t *testing.T) {
	objs := buildUIExtension(t)
	np := named(objs, "NetworkPolicy", "unprune-extension")
	if np == nil {
		t.Fatal("no NetworkPolicy for the backend")
	}
	spec := np["spec"].(map[string]any)
	podLabels := named(objs, "Deployment", "unprune-extension")["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	for k, v := range spec["podSelector"].(map[string]any)["matchLabels"].(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("the policy selects %s=%v; the backend's pods are %v", k, v, podLabels)
		}
	}
	if fmt.Sprint(spec["policyTypes"]) != "[Ingress]" {
		t.Errorf("policyTypes %v", spec["policyTypes"])
	}
	ingress := asSlice(spec["ingress"])
	if len(ingress) != 1 {
		t.Fatalf("ingress %v: want one rule", ingress)
	}
	in := ingress[0].(map[string]any)
	from := asSlice(in["from"])
	if len(from) != 1 {
		t.Fatalf("from %v: want argocd-server alone", from)
	}
	peer := from[0].(map[string]any)
	sel, _ := peer["podSelector"].(map[string]any)
	if len(peer) != 1 || fmt.Sprint(sel["matchLabels"]) != "map[app.kubernetes.io/name:argocd-server]" {
		t.Errorf("from %v: want argocd-server's pods of this namespace", peer)
	}
	if ports := fmt.Sprint(in["ports"]); ports != "[map[port:http protocol:TCP]]" {
		t.Errorf("ports %s", ports)
	}
}

// TestDocumentedHelmValues: the argo-helm values docs/ui.md gives run the component's installer and
// check — the same images, the same securityContext (Pod Security restricted), the same bundle of
// the release, in that order — and configure the proxy extension exactly as the component does.
func TestDocumentedHelmValues(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(Dir(), "..", "docs", "ui.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "```yaml\nserver:\n  extensions:")
	if i < 0 {
		t.Fatal("docs/ui.md shows no argo-helm values")
	}
	block := doc[i+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	objs := buildUIExtension(t)
	tag := containerImageTag(t, objs, "unprune-extension")
	var values struct {
		Server struct {
			Extensions     struct{ Enabled bool }
			InitContainers []map[string]any `json:"initContainers"`
		}
		Configs struct {
			Params map[string]any
			CM     map[string]any `json:"cm"`
			RBAC   map[string]any `json:"rbac"`
		}
	}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(block, "vX.Y.Z", tag)), &values); err != nil {
		t.Fatalf("the documented values: %v", err)
	}
	if !values.Server.Extensions.Enabled {
		t.Error("server.extensions.enabled: the chart's extensions volume is what the init containers mount")
	}
	component := asSlice(podSpec(named(objs, "Deployment", "argocd-server"))["initContainers"])
	if len(values.Server.InitContainers) != len(component) {
		t.Fatalf("%d init containers documented, the component has %d", len(values.Server.InitContainers), len(component))
	}
	for n, c := range component {
		want, got := c.(map[string]any), values.Server.InitContainers[n]
		if got["name"] != want["name"] || got["image"] != want["image"] || fmt.Sprint(got["securityContext"]) != fmt.Sprint(want["securityContext"]) {
			t.Errorf("documented init container %d: %v %v %v; the component's: %v %v %v", n, got["name"], got["image"], got["securityContext"], want["name"], want["image"], want["securityContext"])
		}
	}
	installer := envOf(values.Server.InitContainers[0])
	for k, v := range envOf(component[0].(map[string]any)) {
		if installer[k] != v {
			t.Errorf("documented %s = %q, the component's %q", k, installer[k], v)
		}
	}
	if check := fmt.Sprint(values.Server.InitContainers[1]["command"]); !strings.Contains(check, "test -s /tmp/extensions/resources/unprune/extension-unprune.js") || !strings.Contains(check, "exit 1") {
		t.Errorf("the documented check %s does not fail without the bundle", check)
	}
	if fmt.Sprint(values.Configs.Params["server.enable.proxy.extension"]) != "true" {
		t.Errorf("configs.params %v", values.Configs.Params)
	}
	if got, want := values.Configs.CM["extension.config.unprune"], data(t, objs, "argocd-cm")["extension.config.unprune"]; got != want {
		t.Errorf("configs.cm extension.config.unprune:\n%v\nthe component's:\n%v", got, want)
	}
	if got, want := values.Configs.RBAC["policy.unprune.csv"], data(t, objs, "argocd-rbac-cm")["policy.unprune.csv"]; got != want {
		t.Errorf("configs.rbac policy.unprune.csv %q, the component's %q", got, want)
	}
}

// TestUIExtensionRemoteClusters: the backend's opt-in for remote destinations adds exactly list and
// watch on Secrets in Argo CD's namespace (Argo CD's cluster Secrets), bound to the backend's
// ServiceAccount alone, and the flag that uses them; still nothing that writes a ConfigMap there.
func TestUIExtensionRemoteClusters(t *testing.T) {
	objs := Build(t, "ui-extension/backend", "components:", "  - DEPLOYui-extension/remote-clusters")
	var secretRules []rule
	for _, role := range Kind(objs, "Role") {
		for _, r := range rules(t, role) {
			if slices.Contains(r.resources, "secrets") {
				if ns := role["metadata"].(map[string]any)["namespace"]; ns != argoCDNamespace {
					t.Errorf("a rule on Secrets in namespace %v", ns)
				}
				secretRules = append(secretRules, r)
			}
		}
	}
	if len(secretRules) != 1 || !slices.Equal(secretRules[0].verbs, []string{"list", "watch"}) || !slices.Equal(secretRules[0].groups, []string{""}) || len(secretRules[0].names) != 0 {
		t.Errorf("rules on Secrets: %+v; want one, list and watch only", secretRules)
	}
	if b := named(objs, "RoleBinding", "unprune-extension-remote-clusters"); b == nil {
		t.Error("no RoleBinding unprune-extension-remote-clusters")
	} else if s := asSlice(b["subjects"]); len(s) != 1 || s[0].(map[string]any)["name"] != "unprune-extension" || s[0].(map[string]any)["namespace"] != argoCDNamespace {
		t.Errorf("the remote clusters' Role is bound to %v", s)
	}
	if w := writesArgoCDConfigMaps(grants(t, objs, "unprune-extension", argoCDNamespace)); len(w) > 0 {
		t.Errorf("the backend may change ConfigMaps of Argo CD's namespace: %+v", w)
	}
	dep := named(objs, "Deployment", "unprune-extension")
	c := asSlice(dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"])[0].(map[string]any)
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--cluster-credentials=argocd") || !strings.Contains(args, "--token-file=") {
		t.Errorf("args %s: want the backend's and --cluster-credentials=argocd", args)
	}
}
