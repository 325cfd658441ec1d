//go:build lab

package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/watch"
	"github.com/unprune/unprune/internal/watch/exposition"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

var gvrClusterRole = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// setApplicationVerbs edits the shipped ClusterRole's rule on Applications, as an operator editing
// the watch's RBAC would, and waits until the ServiceAccount's own LIST of Applications is refused
// (or allowed) accordingly.
func setApplicationVerbs(t *testing.T, env *labtest.Env, clusterRole, kubeconfig, namespace string, verbs ...string) {
	t.Helper()
	ctx := labtest.Context(t)
	role, err := env.Dynamic.Resource(gvrClusterRole).Get(ctx, clusterRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	edited := false
	for _, r := range rules {
		m := r.(map[string]any)
		res, _ := m["resources"].([]any)
		if slices.Contains(res, any("applications")) {
			var v []any
			for _, verb := range verbs {
				v = append(v, verb)
			}
			m["verbs"] = v
			edited = true
		}
	}
	if !edited {
		t.Fatalf("ClusterRole %s has no rule on applications", clusterRole)
	}
	_ = unstructured.SetNestedSlice(role.Object, rules, "rules")
	if _, err := env.Dynamic.Resource(gvrClusterRole).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantForbidden := !slices.Contains(verbs, "list")
	labtest.Eventually(t, 10*time.Second, fmt.Sprintf("the ServiceAccount's LIST of Applications forbidden=%v", wantForbidden), func() (bool, string) {
		_, err := sa.Resource(labtest.GVRApplication).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		return apierrors.IsForbidden(err) == wantForbidden, fmt.Sprint(err)
	})
}

// watchEvents are the watch's Events on an app, by reason.
func watchEvents(t *testing.T, env *labtest.Env, app *labtest.App) map[string][]string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(app.Namespace).List(labtest.Context(t), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + app.Name + ",involvedObject.kind=Application",
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Source.Component == watch.EventComponent {
			out[e.Reason] = append(out[e.Reason], e.Message)
		}
	}
	return out
}

func (p *watchProc) ready() (bool, string) {
	resp, err := http.Get("http://" + p.addr + "/readyz")
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// TestWatchBlind: a replica says when it cannot see. Started while its ServiceAccount may not list
// Applications, it is not ready, does not stand for the Lease, emits no Event — though an app's
// Namespace requires pruning — and shows its Application informer failing. Given the right back, it
// syncs, leads and announces the Namespace once. When the right is taken away again while it runs,
// the failing informer shows within the watch timeout, and what it showed stays (the last answer).
func TestWatchBlind(t *testing.T) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-blind"})
	ns := install.Namespace()
	sa := applyShippedRBAC(t, env, ns)
	clusterRole := sa // the base names its ServiceAccount and ClusterRole alike; the prefix is shared
	kubeconfig := serviceAccountKubeconfig(t, env, ns, sa)
	bin := buildUnprune(t)

	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	precious := labtest.UniqueName("blind")
	t.Cleanup(func() { env.DeleteNamespace(precious) })
	app.Incident(t, precious, nil)

	setApplicationVerbs(t, env, clusterRole, kubeconfig, ns, "get")
	p := &watchProc{name: "blind", log: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = watchCommand(bin, kubeconfig, ns, p.name, "--watch-timeout", "4s")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.launch(t)
	// NS/applications, or applications when application.namespaces makes it cluster-wide.
	var apps map[string]string
	labtest.Eventually(t, 10*time.Second, "the Application informer's series", func() (bool, string) {
		s, body := p.scrape(t)
		for _, x := range s {
			if x.name == "unprune_informer_healthy" && strings.HasSuffix(x.labels["informer"], "applications") {
				apps = map[string]string{"informer": x.labels["informer"]}
				return true, ""
			}
		}
		return false, body
	})
	labtest.Eventually(t, 30*time.Second, "the Application informer's failures to show", func() (bool, string) {
		s, _ := p.scrape(t)
		errs, healthy := value(s, "unprune_informer_errors_total", apps), value(s, "unprune_informer_healthy", apps)
		return errs >= 2 && healthy == 0, fmt.Sprintf("errors %v healthy %v", errs, healthy)
	})
	if ok, status := p.ready(); ok {
		t.Errorf("/readyz answers %s before the informers synced", status)
	}
	s, _ := p.scrape(t)
	if l := value(s, "unprune_leader", nil); l != 0 {
		t.Errorf("unprune_leader %v before the informers synced", l)
	}
	if lease, err := env.Kube.CoordinationV1().Leases(ns).Get(labtest.Context(t), watch.DefaultLeaseName, metav1.GetOptions{}); err == nil &&
		lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == p.name {
		t.Errorf("the Lease is held by %s before its informers synced", p.name)
	}
	if ev := watchEvents(t, env, app); len(ev) != 0 {
		t.Errorf("Events before the informers synced: %v", ev)
	}

	setApplicationVerbs(t, env, clusterRole, kubeconfig, ns, "get", "list", "watch")
	waitReady(t, p)
	p.waitMetric(t, 30*time.Second, "unprune_leader", nil, 1)
	p.waitMetric(t, 10*time.Second, "unprune_informer_healthy", apps, 1)
	high := map[string]string{"application": app.Name, "risk": "high"}
	p.waitMetric(t, 10*time.Second, "unprune_resources_requiring_pruning", high, 1)
	wantOneEvent(t, env, app, exposition.ReasonHighRiskRequiresPruning, "Namespace/"+precious, "Nothing guards it")

	// The right taken away while the replica runs: the running watch goes on until it ends (at most
	// --watch-timeout), the next one is refused, and the metric says so.
	s, _ = p.scrape(t)
	before := value(s, "unprune_informer_errors_total", apps)
	revoked := time.Now()
	setApplicationVerbs(t, env, clusterRole, kubeconfig, ns, "get")
	took := p.waitMetric(t, 30*time.Second, "unprune_informer_healthy", apps, 0)
	t.Logf("informer failing shown %.2fs after the ClusterRole lost list/watch on applications (%.2fs after the edit)", took.Seconds(), time.Since(revoked).Seconds())
	s, _ = p.scrape(t)
	if after := value(s, "unprune_informer_errors_total", apps); after <= before {
		t.Errorf("unprune_informer_errors_total %v, was %v", after, before)
	}
	// What it saw stays shown, and nothing is announced because it stopped seeing.
	if v := value(s, "unprune_resources_requiring_pruning", high); v != 1 {
		t.Errorf("unprune_resources_requiring_pruning %v while blind, want the last answer 1", v)
	}
	if ev := watchEvents(t, env, app); len(ev) != 1 || len(ev[exposition.ReasonHighRiskRequiresPruning]) != 1 {
		t.Errorf("Events %v; want the one %s", ev, exposition.ReasonHighRiskRequiresPruning)
	}
	if !strings.Contains(p.log.String(), "error: informer "+apps["informer"]+":") {
		t.Errorf("the log does not say the informer fails:\n%s", p.log.String())
	}
}

// watchCommand is the replica's command line as startWatch builds it.
func watchCommand(bin, kubeconfig, namespace, name string, extra ...string) *exec.Cmd {
	args := []string{"--kubeconfig", kubeconfig, "--argocd-namespace", namespace, "--argocd-version", "v3.6.1", "-n", namespace,
		"watch", "--metrics-bind-address", "127.0.0.1:0", "--identity", name,
		"--lease-duration", testLeaseDuration.String(), "--renew-deadline", testRenewDeadline.String(), "--retry-period", testRetryPeriod.String(),
		"--resync-period", "5s", "--live-cache-ttl", "2s"}
	return exec.Command(bin, append(args, extra...)...)
}

// TestWatchManyTransitions: 30 Namespaces of one app start requiring pruning at once (one commit of
// 30 manifests, synced, then reverted; Argo CD's controller decides): 30 Events, each naming its
// Namespace, none merged — client-go's correlator would have merged all but 10 — and
// unprune_events_total counts the 30 the API server accepted. Released with detach, each is
// announced back to normal: 30 Normal Events.
func TestWatchManyTransitions(t *testing.T) {
	const n = 30
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-many"})
	ns := install.Namespace()
	kubeconfig := serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns))
	p := startWatch(t, buildUnprune(t), kubeconfig, ns, "many", "--leader-elect=false")

	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	var names []string
	for i := range n {
		name := labtest.UniqueName(fmt.Sprintf("many%02d", i))
		names = append(names, name)
		app.Repo.Write(t, app.Path+"/namespace-"+name+".yaml", fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name))
	}
	t.Cleanup(func() {
		for _, name := range names {
			env.DeleteNamespace(name)
		}
	})
	added := app.Repo.Commit(t, fmt.Sprintf("add %d namespaces", n))
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+added, func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of %s: %s %s", added, op.Phase, op.Message)
	}
	app.WaitSynced(t, added)
	reverted := app.Repo.Revert(t)
	app.RefreshUntil(t, labtest.ControllerTimeout, fmt.Sprintf("to require pruning of %d Namespaces", n), func(s labtest.Status) bool {
		for _, name := range names {
			if !labtest.RequiresPruningAt(reverted, "Namespace", name)(s) {
				return false
			}
		}
		return true
	})

	p.waitMetric(t, 20*time.Second, "unprune_resources_requiring_pruning", map[string]string{"application": app.Name, "risk": "high"}, n)
	var messages []string
	labtest.Eventually(t, 30*time.Second, fmt.Sprintf("%d Events", n), func() (bool, string) {
		messages = watchEvents(t, env, app)[exposition.ReasonHighRiskRequiresPruning]
		return len(messages) >= n, fmt.Sprintf("%d Events", len(messages))
	})
	wantEach(t, "Warning", messages, names, " requires pruning")
	for _, e := range appEvents(t, env, app, exposition.ReasonHighRiskRequiresPruning) {
		if e.Count > 1 || strings.Contains(e.Message, "combined from similar events") {
			t.Errorf("a merged Event: count %d, %q", e.Count, e.Message)
		}
	}
	p.waitMetric(t, 10*time.Second, "unprune_events_total", map[string]string{"reason": exposition.ReasonHighRiskRequiresPruning}, n)

	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+ns, "detach", app.Namespace+"/"+app.Name, "--all", "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	p.waitMetric(t, 30*time.Second, "unprune_resources_requiring_pruning", map[string]string{"application": app.Name, "risk": "high"}, 0)
	labtest.Eventually(t, 30*time.Second, fmt.Sprintf("%d Normal Events", n), func() (bool, string) {
		messages = watchEvents(t, env, app)[exposition.ReasonHighRiskPruneResolved]
		return len(messages) >= n, fmt.Sprintf("%d Events", len(messages))
	})
	wantEach(t, "Normal", messages, names, " no longer requires pruning")
	checkOnlyEventsAndLeaseWritten(t, p)
}

// wantEach checks the messages name each Namespace exactly once, each at its start.
func wantEach(t *testing.T, kind string, messages, names []string, what string) {
	t.Helper()
	if len(messages) != len(names) {
		t.Errorf("%d %s Events, want %d", len(messages), kind, len(names))
	}
	for _, name := range names {
		found := 0
		for _, m := range messages {
			if strings.HasPrefix(m, "Namespace/"+name+what) {
				found++
			}
		}
		if found != 1 {
			t.Errorf("%d %s Events name Namespace/%s, want 1", found, kind, name)
		}
	}
}
