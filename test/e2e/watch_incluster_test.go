//go:build lab

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/watch"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/deploytest"
)

// The kubelet's ServiceAccount volume, where rest.InClusterConfig and clientcmd's in-cluster namespace
// read it (/var/run is a symlink to /run here).
const serviceAccountDir = "/run/secrets/kubernetes.io/serviceaccount"

// podScript stands in for the kubelet, in a mount namespace of the watch's own: a tmpfs on /run
// holding the ServiceAccount volume and an empty HOME, the binary copied where the Deployment's user
// may run it, then exec as that user, so that the PID the test started is the watch's and its
// signals reach it. $0 is the folder holding token, ca.crt and namespace; $1 the binary; the rest its
// arguments.
const podScript = `set -eu
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p ` + serviceAccountDir + ` "$HOME"
cp "$0/token" "$0/ca.crt" "$0/namespace" ` + serviceAccountDir + `/
cp "$1" /run/unprune
shift
exec setpriv --reuid=%d --regid=%d --clear-groups /run/unprune "$@"`

// podContainer is the shipped Deployment's container as a kubelet would start it here.
type podContainer struct {
	args     []string
	env      map[string]string
	uid, gid int64
}

// TestWatchInCluster runs `unprune watch` the way deploy/base runs it in a pod: the Deployment's args
// and env, no kubeconfig, the ServiceAccount's token, the cluster's CA and the namespace where a
// kubelet mounts them, KUBERNETES_SERVICE_HOST/PORT, and the Deployment's user. The lab has no kubelet:
// a mount namespace gives the watch, and only it, the ServiceAccount volume.
func TestWatchInCluster(t *testing.T) {
	checkCanStandInForKubelet(t)
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-incluster"})
	ns := install.Namespace()
	host, port := apiServerAddress(t, env)
	saFiles := serviceAccountVolume(t, env, ns, applyShippedRBAC(t, env, ns))
	pod := shippedContainer(t, ns, labtest.UniqueName("unprune-watch"))
	for _, a := range pod.args {
		if a == "-n" || strings.HasPrefix(a, "--namespace") || strings.HasPrefix(a, "--kubeconfig") {
			t.Fatalf("the Deployment's args %q name %s: the test proves the in-cluster namespace and config", pod.args, a)
		}
	}
	bin := buildUnprune(t)
	p := startInPod(t, bin, saFiles, pod, host, port)
	waitLeading(t, env, p, ns, pod.env["POD_NAME"])

	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	precious := labtest.UniqueName("precious")
	t.Cleanup(func() { env.DeleteNamespace(precious) })
	app.Incident(t, precious, nil)
	high := map[string]string{"application": app.Name, "namespace": app.Namespace, "risk": "high"}
	took := p.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 1)
	t.Logf("metric at 1 %.2fs after the app showed the Namespace requiring pruning", took.Seconds())
	wantOneEvent(t, env, app, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+precious)
	checkOnlyEventsAndLeaseWritten(t, p)
	stopGracefully(t, env, p, ns)

	// client-go takes the in-cluster namespace from $POD_NAMESPACE first, which the Deployment
	// declares, and from the volume's namespace file only without it: a replica without the variable
	// (its args as expanded above) shows the file alone puts the Lease in the right namespace.
	delete(pod.env, "POD_NAMESPACE")
	pod.env["POD_NAME"] = labtest.UniqueName("unprune-watch")
	q := startInPod(t, bin, saFiles, pod, host, port)
	waitLeading(t, env, q, ns, pod.env["POD_NAME"])
	stopGracefully(t, env, q, ns)
}

// checkCanStandInForKubelet fails (not skips) when this machine cannot give a process a mount
// namespace of its own with a tmpfs on /run and drop to another user: the test would prove nothing.
func checkCanStandInForKubelet(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this machine lacks %s (util-linux): install util-linux to run the watch as in a pod: %v", tool, err)
		}
	}
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mount -t tmpfs tmpfs /run && exec setpriv --reuid=65532 --regid=65532 --clear-groups true").CombinedOutput()
	if err != nil {
		t.Fatalf("cannot mount a tmpfs on /run in a mount namespace (%v: %s): the test needs root with CAP_SYS_ADMIN "+
			"and util-linux's unshare and setpriv to stand in for the kubelet's ServiceAccount volume", err, out)
	}
}

// apiServerAddress is the lab API server's IP and port, as KUBERNETES_SERVICE_HOST and _PORT give them
// to a pod. It checks first that the serving certificate is valid for that IP with the CA a pod gets,
// which is how rest.InClusterConfig connects (no server name: the IP is verified).
func apiServerAddress(t *testing.T, env *labtest.Env) (string, string) {
	t.Helper()
	u, err := url.Parse(env.REST.Host)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	if net.ParseIP(host) == nil || port == "" {
		t.Fatalf("the lab API server is %s: a pod reaches it by IP and port, KUBERNETES_SERVICE_HOST/PORT", env.REST.Host)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(clusterCA(t, env)) {
		t.Fatal("the lab's CA holds no PEM certificate")
	}
	conn, err := tls.Dial("tcp", net.JoinHostPort(host, port), &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("the lab API server's certificate does not verify for %s with the lab's CA, as rest.InClusterConfig would check it: %v", host, err)
	}
	conn.Close()
	return host, port
}

func clusterCA(t *testing.T, env *labtest.Env) []byte {
	t.Helper()
	if len(env.REST.CAData) > 0 {
		return env.REST.CAData
	}
	ca, err := os.ReadFile(env.REST.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// serviceAccountVolume writes what the kubelet mounts for a pod of the ServiceAccount: a TokenRequest
// token, the cluster's CA and the pod's namespace.
func serviceAccountVolume(t *testing.T, env *labtest.Env, namespace, name string) string {
	t.Helper()
	dir := labtest.TempDir(t)
	for file, content := range map[string][]byte{"token": []byte(serviceAccountToken(t, env, namespace, name)), "ca.crt": clusterCA(t, env), "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shippedContainer is deploy/base's container for the namespace, as the kubelet would start it for a
// pod named podName: its env with the downward API's fields filled in, its args expanded, and only
// what must differ here changed — metrics on loopback, and short lease timings as startWatch's.
func shippedContainer(t *testing.T, namespace, podName string) podContainer {
	t.Helper()
	deployments := deploytest.Kind(deploytest.Build(t, "base", "namespace: "+namespace), "Deployment")
	if len(deployments) != 1 {
		t.Fatalf("deploy/base has %d Deployments; want 1", len(deployments))
	}
	spec := deployments[0]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	containers := spec["containers"].([]any)
	if len(containers) != 1 {
		t.Fatalf("deploy/base's Deployment has %d containers; want 1", len(containers))
	}
	c := containers[0].(map[string]any)
	if c["command"] != nil {
		t.Fatalf("the container sets command %v: the test runs the image's entrypoint, the unprune binary", c["command"])
	}
	fields := map[string]string{"metadata.name": podName, "metadata.namespace": namespace}
	pod := podContainer{env: map[string]string{}}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		name := e["name"].(string)
		res, _, _ := unstructured.NestedString(e, "valueFrom", "resourceFieldRef", "resource")
		switch path, _, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath"); {
		case e["value"] != nil:
			pod.env[name] = expandLikeKubelet(t, e["value"].(string), pod.env)
		case fields[path] != "":
			pod.env[name] = fields[path]
		case res != "":
			pod.env[name] = resourceField(t, c, e, res)
		default:
			t.Fatalf("env %s of the Deployment is %v: the test does not emulate it; add it here", name, e)
		}
	}
	for _, a := range c["args"].([]any) {
		pod.args = append(pod.args, expandLikeKubelet(t, a.(string), pod.env))
	}
	for _, f := range [][2]string{{"--metrics-bind-address", "127.0.0.1:0"}, {"--lease-duration", testLeaseDuration.String()},
		{"--renew-deadline", testRenewDeadline.String()}, {"--retry-period", testRetryPeriod.String()}} {
		pod.args = setFlag(pod.args, f[0], f[1])
	}
	pod.uid, pod.gid = podUser(t, spec)
	return pod
}

// resourceField is a resourceFieldRef's value as the kubelet gives it: the container's own limit or
// request, divided by the divisor (1 by default), rounded up.
func resourceField(t *testing.T, c, env map[string]any, res string) string {
	t.Helper()
	if ref, _, _ := unstructured.NestedString(env, "valueFrom", "resourceFieldRef", "containerName"); ref != "" && ref != c["name"] {
		t.Fatalf("env %v names container %s, not its own %s", env, ref, c["name"])
	}
	kind, what, _ := strings.Cut(res, ".")
	raw, ok, _ := unstructured.NestedFieldNoCopy(c, "resources", kind, what)
	if !ok {
		t.Fatalf("env %v: the container sets no %s", env, res)
	}
	q := resource.MustParse(fmt.Sprint(raw))
	divisor := resource.MustParse("1")
	if d, ok, _ := unstructured.NestedFieldNoCopy(env, "valueFrom", "resourceFieldRef", "divisor"); ok {
		divisor = resource.MustParse(fmt.Sprint(d))
	}
	return strconv.FormatInt((q.Value()+divisor.Value()-1)/divisor.Value(), 10)
}

// podUser is the pod's runAsUser and runAsGroup: the watch must run as that user.
func podUser(t *testing.T, spec map[string]any) (int64, int64) {
	t.Helper()
	sc, _ := spec["securityContext"].(map[string]any)
	uid, errU := strconv.ParseInt(fmt.Sprint(sc["runAsUser"]), 10, 64)
	gid, errG := strconv.ParseInt(fmt.Sprint(sc["runAsGroup"]), 10, 64)
	if errU != nil || errG != nil {
		t.Fatalf("the Deployment's securityContext sets no numeric runAsUser/runAsGroup: %v", spec["securityContext"])
	}
	return uid, gid
}

var kubeletVarRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandLikeKubelet replaces $(VAR) with the container's variable, as the kubelet does in args and
// env values; an unknown variable stays as written.
func expandLikeKubelet(t *testing.T, s string, vars map[string]string) string {
	t.Helper()
	if strings.Contains(s, "$$") {
		t.Fatalf("%q escapes a $: expandLikeKubelet does not implement $$; add it", s)
	}
	return kubeletVarRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// setFlag replaces a flag's value in args (--flag=value or --flag value), or adds it.
func setFlag(args []string, flag, value string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == flag:
			i++
		case strings.HasPrefix(args[i], flag+"="):
		default:
			out = append(out, args[i])
		}
	}
	return append(out, flag+"="+value)
}

// startInPod starts the watch as the pod's container and waits until it serves metrics and is ready.
// Its environment is only what a pod's would be: nothing inherited from the test, so no KUBECONFIG,
// and a HOME with no .kube in it.
func startInPod(t *testing.T, bin, saFiles string, pod podContainer, host, port string) *watchProc {
	t.Helper()
	p := &watchProc{name: pod.env["POD_NAME"], log: &syncBuffer{}, done: make(chan error, 1)}
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/run/home", "KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}
	for _, k := range labtest.SortedKeys(pod.env) {
		env = append(env, k+"="+pod.env[k])
	}
	script := fmt.Sprintf(podScript, pod.uid, pod.gid)
	p.cmd = exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, saFiles, bin}, pod.args...)...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.log, p.log
	t.Logf("%s: %s %q", p.name, strings.Join(env, " "), pod.args)
	p.start(t)
	checkPodProcess(t, p, pod.uid)
	return p
}

// checkPodProcess: the PID the test started is the watch itself (unshare, sh and setpriv exec'd it,
// so signals reach it), running as the pod's user.
func checkPodProcess(t *testing.T, p *watchProc, uid int64) {
	t.Helper()
	pid := p.cmd.Process.Pid
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if name := strings.TrimSpace(string(comm)); name != "unprune" {
		t.Errorf("PID %d is %q, not the watch: the script must exec it", pid, name)
	}
	if want := fmt.Sprintf("\nUid:\t%d\t%d\t", uid, uid); !strings.Contains(string(status), want) {
		t.Errorf("PID %d does not run as the pod's user %d:\n%s", pid, uid, status)
	}
}

// waitLeading checks the replica says it serves metrics and leads as its pod's name, and that the
// Lease in namespace — found with no -n, from the pod's namespace — is held by that name.
func waitLeading(t *testing.T, env *labtest.Env, p *watchProc, namespace, identity string) {
	t.Helper()
	if m := regexp.MustCompile(`serving metrics on http://\S+ \(identity (\S+), Argo CD in (\S+),`).FindStringSubmatch(p.log.String()); m == nil || m[1] != identity || m[2] != namespace {
		t.Errorf("the start line %v does not name identity %s and Argo CD in %s:\n%s", m, identity, namespace, p.log.String())
	}
	labtest.Eventually(t, 2*testLeaseDuration, p.name+" to lead", func() (bool, string) {
		return strings.Contains(p.log.String(), "leading as "+identity+": emitting Events"), p.log.String()
	})
	lease, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).
		Namespace(namespace).Get(labtest.Context(t), watch.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease %s/%s: %v", namespace, watch.DefaultLeaseName, err)
	}
	if holder, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity"); holder != identity {
		t.Errorf("Lease %s/%s held by %q; want the pod's name %q", namespace, watch.DefaultLeaseName, holder, identity)
	}
}
