//go:build lab

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/watch"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/deploytest"
)

// Lease timings of the test: short, so that a takeover is seen in seconds.
const (
	testLeaseDuration = 4 * time.Second
	testRenewDeadline = 3 * time.Second
	testRetryPeriod   = 500 * time.Millisecond
)

// watchProc is one replica of the built binary.
type watchProc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	addr string
	done chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// applyShippedRBAC applies deploy/base's ServiceAccount and roles to Argo CD's namespace, under a
// unique name prefix, and returns the ServiceAccount's name. The Deployment is not applied: the lab
// runs no kubelet; the replicas run here, as that ServiceAccount.
func applyShippedRBAC(t *testing.T, env *labtest.Env, namespace string, components ...string) string {
	t.Helper()
	prefix := labtest.UniqueName("w") + "-"
	overlay := []string{"namespace: " + namespace, "namePrefix: " + prefix}
	if len(components) > 0 {
		overlay = append(overlay, "components:")
		for _, c := range components {
			overlay = append(overlay, "  - DEPLOYcomponents/"+c)
		}
	}
	objs := deploytest.Build(t, "base", overlay...)
	for _, o := range objs {
		switch o["kind"] {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if err := env.Create(labtest.Context(t), o); err != nil {
			t.Fatal(err)
		}
		if o["kind"] == "ClusterRole" || o["kind"] == "ClusterRoleBinding" {
			name := o["metadata"].(map[string]any)["name"].(string)
			res := map[any]string{"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}[o["kind"]]
			t.Cleanup(func() {
				_ = env.Dynamic.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}).
					Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		}
	}
	return prefix + "unprune-watch"
}

// serviceAccountKubeconfig mints a token for the ServiceAccount (TokenRequest) and writes a kubeconfig
// with nothing else in it.
func serviceAccountKubeconfig(t *testing.T, env *labtest.Env, namespace, name string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: env.REST.Host, CertificateAuthorityData: env.REST.CAData, CertificateAuthority: env.REST.CAFile}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: serviceAccountToken(t, env, namespace, name)}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "sa", Namespace: namespace}
	cfg.CurrentContext = "sa"
	path := filepath.Join(labtest.TempDir(t), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountToken mints an hour's token for the ServiceAccount (TokenRequest), as the kubelet
// does for a pod.
func serviceAccountToken(t *testing.T, env *labtest.Env, namespace, name string) string {
	t.Helper()
	seconds := int64(3600)
	tr, err := env.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(labtest.Context(t), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func buildUnprune(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "unprune")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/unprune/unprune/cmd/unprune").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var servingRE = regexp.MustCompile(`serving metrics on http://([0-9.:]+)/metrics`)

// startWatch runs a replica and waits until it serves metrics.
func startWatch(t *testing.T, bin, kubeconfig, namespace, name string, extra ...string) *watchProc {
	t.Helper()
	p := &watchProc{name: name, log: &syncBuffer{}, done: make(chan error, 1)}
	args := []string{"--kubeconfig", kubeconfig, "--argocd-namespace", namespace, "--argocd-version", "v3.6.1", "-n", namespace,
		"watch", "--metrics-bind-address", "127.0.0.1:0", "--identity", name,
		"--lease-duration", testLeaseDuration.String(), "--renew-deadline", testRenewDeadline.String(), "--retry-period", testRetryPeriod.String(),
		"--resync-period", "5s", "--live-cache-ttl", "2s"}
	p.cmd = exec.Command(bin, append(args, extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.start(t)
	return p
}

// start runs the replica's command, stops it at the test's end (SIGTERM, then SIGKILL after 10 s)
// and logs its output then, and waits until it serves metrics and is ready.
func (p *watchProc) start(t *testing.T) {
	t.Helper()
	p.launch(t)
	waitReady(t, p)
}

// launch is start without waiting for readiness: for a replica that is not to be ready yet.
func (p *watchProc) launch(t *testing.T) {
	t.Helper()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { err := p.cmd.Wait(); close(exited); p.done <- err }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
			}
		}
		t.Logf("--- log of %s\n%s", p.name, p.log.String())
	})
	labtest.Eventually(t, 30*time.Second, p.name+" to serve metrics", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("%s exited before serving metrics:\n%s", p.name, p.log.String())
		default:
		}
		m := servingRE.FindStringSubmatch(p.log.String())
		if m == nil {
			return false, p.log.String()
		}
		p.addr = m[1]
		return true, ""
	})
}

// waitReady waits until the replica answers /readyz: its informers synced and argocd-cm read.
func waitReady(t *testing.T, p *watchProc) {
	t.Helper()
	labtest.Eventually(t, 60*time.Second, p.name+" to be ready", func() (bool, string) {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// sample is one line of a scrape.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var labelRE = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

func (p *watchProc) scrape(t *testing.T) ([]sample, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []sample
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		head, value, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(line, '}'); i >= 0 {
			head, value = line[:i+1], strings.TrimSpace(line[i+1:])
		}
		s.name, _, _ = strings.Cut(head, "{")
		for _, m := range labelRE.FindAllStringSubmatch(head, -1) {
			s.labels[m[1]] = m[2]
		}
		s.value, _ = strconv.ParseFloat(strings.Fields(value)[0], 64)
		out = append(out, s)
	}
	return out, string(body)
}

// value is the sample of name whose labels include want; -1 when there is none.
func value(samples []sample, name string, want map[string]string) float64 {
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value
	}
	return -1
}

// waitMetric polls a replica until the metric has the value, and returns how long it took.
func (p *watchProc) waitMetric(t *testing.T, timeout time.Duration, name string, labels map[string]string, want float64) time.Duration {
	t.Helper()
	start := time.Now()
	labtest.Eventually(t, timeout, fmt.Sprintf("%s: %s%v = %v", p.name, name, labels, want), func() (bool, string) {
		s, _ := p.scrape(t)
		got := value(s, name, labels)
		return got == want, fmt.Sprintf("%v", got)
	})
	return time.Since(start)
}

// appEvents lists the watch's Events of a reason on an Application.
func appEvents(t *testing.T, env *labtest.Env, app *labtest.App, reason string) []corev1.Event {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(app.Namespace).List(labtest.Context(t), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + app.Name + ",involvedObject.kind=Application,reason=" + reason,
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// wantOneEvent waits for the Event of a transition and checks it is the only one, sent once.
func wantOneEvent(t *testing.T, env *labtest.Env, app *labtest.App, reason, resource string, contains ...string) {
	t.Helper()
	labtest.Eventually(t, 10*time.Second, "Event "+reason+" on "+app.Name, func() (bool, string) {
		return len(appEvents(t, env, app, reason)) > 0, ""
	})
	events := appEvents(t, env, app, reason)
	if len(events) != 1 || events[0].Count > 1 || events[0].Source.Component != watch.EventComponent {
		t.Fatalf("events %s on %s: %+v; want exactly one, sent once by %s", reason, app.Name, events, watch.EventComponent)
	}
	msg := events[0].Message
	for _, c := range append([]string{resource + " requires pruning"}, contains...) {
		if !strings.Contains(msg, c) {
			t.Errorf("event message %q lacks %q", msg, c)
		}
	}
}

func leaders(t *testing.T, procs ...*watchProc) []*watchProc {
	var out []*watchProc
	for _, p := range procs {
		if p.cmd.ProcessState != nil {
			continue
		}
		if s, _ := p.scrape(t); value(s, "unprune_leader", nil) == 1 {
			out = append(out, p)
		}
	}
	return out
}

// TestWatch runs two replicas of `unprune watch` as the ServiceAccount of deploy/'s RBAC, scraped by
// a real Prometheus with the shipped rules, and checks the incident's metrics, alert and Events, a
// guarded control, detach, a leader's SIGKILL and SIGTERM.
func TestWatch(t *testing.T) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch"})
	ns := install.Namespace()
	installPolicy(t, env)
	sa := applyShippedRBAC(t, env, ns)
	kubeconfig := serviceAccountKubeconfig(t, env, ns, sa)
	bin := buildUnprune(t)
	// Neither a resync nor the live cache's expiry may stand in for what the watch watches: a guard
	// removed from a Namespace, Delete=false added to one, must show at once.
	slow := []string{"--resync-period", "10m", "--live-cache-ttl", "10m"}
	a := startWatch(t, bin, kubeconfig, ns, "replica-a", slow...)
	b := startWatch(t, bin, kubeconfig, ns, "replica-b", slow...)
	labtest.Eventually(t, 2*testLeaseDuration, "one leader", func() (bool, string) {
		l := leaders(t, a, b)
		return len(l) == 1, fmt.Sprintf("%d leaders", len(l))
	})
	leader := leaders(t, a, b)[0]
	follower := map[*watchProc]*watchProc{a: b, b: a}[leader]
	prom := startPrometheus(t, a, b)
	oneLeader := `sum(unprune_leader{job="` + prometheusJob + `"})`
	labtest.Eventually(t, 10*time.Second, "Prometheus to see one leader", func() (bool, string) {
		v := prom.query(t, oneLeader)
		return v == "1", v
	})

	exposed := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	guarded := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	exposedNS, guardedNS := labtest.UniqueName("precious"), labtest.UniqueName("guarded")
	t.Cleanup(func() {
		env.DeleteNamespace(exposedNS)
		unprotectNamespace(env, guardedNS)
		env.DeleteNamespace(guardedNS)
	})

	exposed.Incident(t, exposedNS, nil)
	high := map[string]string{"application": exposed.Name, "namespace": exposed.Namespace, "risk": "high"}
	took := leader.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 1)
	t.Logf("metric at 1 %.2fs after the app showed the Namespace requiring pruning", took.Seconds())
	follower.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 1)
	wantOneEvent(t, env, exposed, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+exposedNS,
		fmt.Sprintf("unprune detach %s/%s Namespace/%s --yes", exposed.Namespace, exposed.Name, exposedNS), "Nothing guards it")
	incident := map[string]string{"namespace": exposed.Namespace, "application": exposed.Name, "severity": "warning"}
	prom.waitAlert(t, 15*time.Second, "UnpruneHighRiskRequiresPruning", incident, "pending")

	guarded.Incident(t, guardedNS, map[string]string{"unprune.dev/protected": "true"})
	guardedHigh := map[string]string{"application": guarded.Name, "risk": "high"}
	leader.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", guardedHigh, 1)
	leader.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": guarded.Name, "risk": "high", "when": "now"}, 0)
	leader.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": exposed.Name, "risk": "high", "when": "now"}, 1)
	wantOneEvent(t, env, guarded, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+guardedNS, "It is guarded (AdmissionPolicy)")
	child, team := watchFamily(t, env, install, leader)
	saveScrape(t, leader)
	guardCascade(t, env, leader, child, team)

	// The leader dies without a word: the follower takes over once the lease runs out, and announces
	// nothing again.
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.done
	labtest.Eventually(t, testLeaseDuration+8*testRetryPeriod, "the follower to lead", func() (bool, string) {
		return len(leaders(t, follower)) == 1, ""
	})
	takeover := time.Since(killed)
	t.Logf("follower leads %.2fs after SIGKILL of the leader (lease %s, retry %s)", takeover.Seconds(), testLeaseDuration, testRetryPeriod)
	// client-go's bound (tools/leaderelection: the leader renews every retry period; the follower
	// looks every retry period stretched by up to JitterFactor 1.2, i.e. up to 2.2 periods apart, and
	// sees the lease expire a lease duration after it *saw* the last renewal). The last renewal was at
	// most one period before the kill, the follower may have seen it up to 2.2 periods late, and sees
	// the expiry up to 2.2 periods late: lease + 3.4 periods, plus the requests' latency — 4 periods.
	// (The old bound of 3 periods left the jitter out; a CI run took 5.57 s against 5.5 s.)
	if takeover > testLeaseDuration+4*testRetryPeriod {
		t.Errorf("takeover took %s, more than the lease duration %s + 3.4 retry periods (client-go's jitter) and latency", takeover, testLeaseDuration)
	}
	// Prometheus sees the killed replica down, one leader, and the incident's alert still pending
	// on the follower's series.
	labtest.Eventually(t, 10*time.Second, "Prometheus to see the killed replica down and one leader", func() (bool, string) {
		up, lead := prom.query(t, `up{job="`+prometheusJob+`",instance="`+leader.addr+`"}`), prom.query(t, oneLeader)
		return up == "0" && lead == "1", fmt.Sprintf("up %s, leaders %s", up, lead)
	})
	prom.waitAlert(t, 5*time.Second, "UnpruneHighRiskRequiresPruning", incident, "pending")

	// A transition after the takeover: one Event from the new leader.
	later := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	laterNS := labtest.UniqueName("later")
	t.Cleanup(func() { env.DeleteNamespace(laterNS) })
	later.Incident(t, laterNS, nil)
	follower.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", map[string]string{"application": later.Name, "risk": "high"}, 1)
	wantOneEvent(t, env, later, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+laterNS)
	wantOneEvent(t, env, exposed, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+exposedNS)
	wantOneEvent(t, env, guarded, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+guardedNS)

	// The guarded Namespace loses its protection: the new leader says so, once.
	unprotectNamespace(env, guardedNS)
	follower.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": guarded.Name, "risk": "high", "when": "now"}, 1)
	wantOneEvent(t, env, guarded, exposition.ReasonUnguardedHighRiskPrune, "Namespace/"+guardedNS, "nothing guards it any more",
		"unprune guard protect Namespace/"+guardedNS+" --yes")

	// Released with detach (as the admin): the metric returns to 0.
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+ns, "detach", exposed.Namespace+"/"+exposed.Name, "Namespace/"+exposedNS, "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	took = follower.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 0)
	t.Logf("metric back to 0 %.2fs after detach returned", took.Seconds())
	prom.waitAlert(t, 15*time.Second, "UnpruneHighRiskRequiresPruning", incident, "")

	checkOnlyEventsAndLeaseWritten(t, follower, leader)
	stopGracefully(t, env, follower, ns)
}

// TestWatchAcrossReleases: the watch reads each release line's tracking as audit does. On Argo CD
// v2.14 with label tracking and v3.5 with annotation+label, one replica as the shipped
// ServiceAccount counts the incident's Namespace, announces it once, and counts it no more once
// detach released it.
func TestWatchAcrossReleases(t *testing.T) {
	bin := buildUnprune(t)
	cfgs := []lab.ArgoCDConfig{{Version: "v2.14.11", Tracking: "label"}, {Version: "v3.5.1", Tracking: "annotation+label"}}
	if versions := labtest.Lines(); len(versions) > 0 {
		cfgs = nil
		for _, v := range versions {
			cfgs = append(cfgs, lab.ArgoCDConfig{Version: v, Tracking: "annotation+label"})
		}
	}
	for _, cfg := range cfgs {
		t.Run(cfg.Version+"/"+cfg.Tracking, func(t *testing.T) {
			t.Parallel()
			env := labtest.Get(t)
			install := env.ArgoCD(t, cfg)
			ns := install.Namespace()
			p := startWatch(t, bin, serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns)), ns, "replica",
				"--leader-elect=false", "--argocd-version", cfg.Version)
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
			precious := labtest.UniqueName("precious")
			t.Cleanup(func() { env.DeleteNamespace(precious) })
			app.Incident(t, precious, nil)
			high := map[string]string{"application": app.Name, "namespace": app.Namespace, "risk": "high"}
			p.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 1)
			p.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": app.Name, "risk": "high", "when": "now"}, 1)
			wantOneEvent(t, env, app, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+precious,
				fmt.Sprintf("unprune detach %s/%s Namespace/%s --yes", app.Namespace, app.Name, precious))
			r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+ns, "detach", app.Namespace+"/"+app.Name, "Namespace/"+precious, "--yes")
			if r.Code != cli.ExitOK {
				t.Fatalf("detach exit %d", r.Code)
			}
			p.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 0)
			checkOnlyEventsAndLeaseWritten(t, p)
		})
	}
}

// watchFamily makes an app of apps whose parent prunes automatically and whose child, with the
// resources finalizer, deploys a team's Namespace: one commit to the parent deletes the child and,
// with it, the Namespace. The watch shows the child's whole-app row unguarded and the Namespace in
// its cascade, as audit does.
func watchFamily(t *testing.T, env *labtest.Env, install *labtest.Install, p *watchProc) (child, team string) {
	t.Helper()
	_, child, team = appOfApps(t, env, install, true)
	labels := map[string]string{"application": child, "namespace": install.Namespace()}
	// The child's status lists the Namespace once its controller compared it, which on a loaded
	// machine can take longer than the watch may: wait for Argo CD first, then hold the watch to
	// seeing it within seconds, with no other change needed.
	childApp := &labtest.App{Install: install, Name: child, Namespace: install.Namespace()}
	childApp.WaitStatus(t, 2*time.Minute, "to list its Namespace", func(s labtest.Status) bool {
		_, listed := s.Find("Namespace", team)
		return listed
	})
	p.waitMetric(t, 10*time.Second, "unprune_cascade_high_risk_resources", labels, 1)
	p.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": child, "risk": "high", "when": "app_deleted"}, 1)
	row, ok := familyAuditRow(t, env, install, child)
	if !ok || row.Cascade == nil || len(row.Cascade.HighRisk) != 1 || row.Guarded {
		t.Fatalf("audit of %s: %+v (found %v); want the same answer as the watch: one unguarded high-risk resource in its cascade", child, row, ok)
	}
	return child, team
}

// guardCascade annotates the team's Namespace Delete=false: Argo CD's cascade keeps it, and the watch
// says so as soon as it sees the Namespace change.
func guardCascade(t *testing.T, env *labtest.Env, p *watchProc, child, team string) {
	t.Helper()
	if _, err := env.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), team, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/sync-options":"Delete=false"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, 10*time.Second, "unprune_cascade_high_risk_resources", map[string]string{"application": child}, 0)
	p.waitMetric(t, 10*time.Second, "unprune_unguarded_prune_candidates", map[string]string{"application": child, "risk": "high", "when": "app_deleted"}, 0)
}

// TestWatchRemoteDestination: Applications deploying to another cluster than Argo CD's are judged
// there. A replica given Argo CD's cluster credentials (the remote-clusters component's Secret
// access, --cluster-credentials=argocd) sees which remote Namespace a guard protects; a replica with
// the base RBAC only cannot read the remote cluster and counts both prunes' guards unknown.
func TestWatchRemoteDestination(t *testing.T) {
	env := labtest.Get(t)
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-remote"})
	install.RegisterRemote(t, remote, "remote")
	ns := install.Namespace()
	bin := buildUnprune(t)
	reaching := startWatch(t, bin, serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns, "remote-clusters")), ns, "reaching",
		"--leader-elect=false", "--cluster-credentials=argocd")
	blind := startWatch(t, bin, serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns)), ns, "blind", "--leader-elect=false")

	exposed := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
	guarded := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
	exposedNS, guardedNS := labtest.UniqueName("far"), labtest.UniqueName("farguarded")
	t.Cleanup(func() {
		remote.DeleteNamespace(exposedNS)
		remote.DeleteNamespace(guardedNS)
	})
	exposed.Incident(t, exposedNS, nil)
	guarded.Incident(t, guardedNS, nil)
	// The guard: Prune=false on the live Namespace, in the remote cluster (argo-cd
	// gitops-engine's sync: an object annotated so is never pruned).
	if _, err := remote.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), guardedNS, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/sync-options":"Prune=false"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, p := range []*watchProc{reaching, blind} {
		for _, app := range []*labtest.App{exposed, guarded} {
			p.waitMetric(t, 15*time.Second, "unprune_resources_requiring_pruning", map[string]string{"application": app.Name, "risk": "high"}, 1)
		}
	}
	unguarded := func(app *labtest.App) map[string]string {
		return map[string]string{"application": app.Name, "risk": "high", "when": "now"}
	}
	reaching.waitMetric(t, 15*time.Second, "unprune_unguarded_prune_candidates", unguarded(exposed), 1)
	reaching.waitMetric(t, 15*time.Second, "unprune_unguarded_prune_candidates", unguarded(guarded), 0)
	// The blind replica cannot read the remote cluster: both rows' guards are unknown — counted as
	// such, never as unguarded (issue 28: a failed read is "unknown").
	for _, app := range []*labtest.App{exposed, guarded} {
		blind.waitMetric(t, 15*time.Second, "unprune_unknown_guard_prune_candidates", map[string]string{"application": app.Name, "risk": "high"}, 1)
		blind.waitMetric(t, 15*time.Second, "unprune_unguarded_prune_candidates", unguarded(app), 0)
	}
	if samples, _ := reaching.scrape(t); value(samples, "unprune_resources_requiring_pruning", map[string]string{"application": exposed.Name, "risk": "high", "destination": "remote"}) != 1 {
		t.Errorf("the remote app's series does not name its destination cluster")
	}
	checkOnlyEventsAndLeaseWritten(t, reaching, blind)
}

// checkOnlyEventsAndLeaseWritten: the replicas sent no write but Events and the Lease, and nothing
// they sent was forbidden but reads of kinds the ClusterRole leaves out (counted, not logged).
func checkOnlyEventsAndLeaseWritten(t *testing.T, p *watchProc, others ...*watchProc) {
	t.Helper()
	// What the watch reads to judge a Namespace row and to watch: never forbidden.
	needed := map[string]bool{"namespaces": true, "applications.argoproj.io": true, "configmaps": true, "events": true,
		"validatingadmissionpolicies.admissionregistration.k8s.io": true, "validatingadmissionpolicybindings.admissionregistration.k8s.io": true}
	samples, _ := p.scrape(t)
	for _, s := range samples {
		if s.name != "unprune_kubernetes_requests_total" {
			continue
		}
		method, res, code := s.labels["method"], s.labels["resource"], s.labels["code"]
		read := method == "GET" || method == "WATCH"
		if !read && res != "events" && res != "leases.coordination.k8s.io" {
			t.Errorf("%s sent %s to %s (%s) ×%v: a write beyond Events and its Lease", p.name, method, res, code, s.value)
		}
		if code == "403" && !read {
			t.Errorf("%s: a %s of %s was forbidden ×%v", p.name, method, res, s.value)
		}
		if code == "403" && needed[res] {
			t.Errorf("%s: %s of %s was forbidden ×%v: the shipped ClusterRole must grant what audit reads", p.name, method, res, s.value)
		}
		if code == "403" {
			t.Logf("%s: GET %s forbidden ×%v (a kind the ClusterRole does not grant; counts say \"at least\")", p.name, res, s.value)
		}
	}
	for _, q := range append(others, p) {
		if strings.Contains(strings.ToLower(q.log.String()), "forbidden") {
			t.Errorf("%s logged a Forbidden:\n%s", q.name, q.log.String())
		}
	}
}

// stopGracefully sends SIGTERM: the replica exits 0 and gives up its Lease at once.
func stopGracefully(t *testing.T, env *labtest.Env, p *watchProc, namespace string) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit 15s after SIGTERM")
	}
	lease, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).
		Namespace(namespace).Get(labtest.Context(t), watch.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity"); holder != "" {
		t.Errorf("lease still held by %q after SIGTERM", holder)
	}
}

// saveScrape keeps the leader's metrics for test/prometheus, which evaluates the alerts on them,
// when UNPRUNE_WATCH_SCRAPE names a file.
func saveScrape(t *testing.T, p *watchProc) {
	path := os.Getenv("UNPRUNE_WATCH_SCRAPE")
	if path == "" {
		return
	}
	_, body := p.scrape(t)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
