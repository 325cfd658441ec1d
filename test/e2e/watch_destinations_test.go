//go:build lab

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// blackHole is a TCP proxy on 127.0.0.1 in front of an API server that, once stopped, stops
// answering: the connections it holds and every new one stay open and silent — a destination
// black-holed by a firewall, not one that refuses.
type blackHole struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	stopped  bool
	held     []net.Conn
	uplinks  []net.Conn
}

func newBlackHole(t *testing.T, upstream string) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, upstream: upstream}
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range append(b.held, b.uplinks...) {
			c.Close()
		}
	})
	go b.serve()
	return b
}

func (b *blackHole) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.held = append(b.held, c)
		stopped := b.stopped
		b.mu.Unlock()
		if stopped {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", b.upstream)
		if err != nil {
			continue
		}
		b.mu.Lock()
		b.uplinks = append(b.uplinks, up)
		b.mu.Unlock()
		// Neither side closes the client's connection: once stopped, it stays open and silent.
		go func() { _, _ = io.Copy(up, c) }()
		go func() { _, _ = io.Copy(c, up) }()
	}
}

// stop cuts every connection from the API server, leaving the clients' open and unanswered.
func (b *blackHole) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for _, up := range b.uplinks {
		up.Close()
	}
}

func (b *blackHole) server() string { return "https://" + b.ln.Addr().String() }

// kubeconfigWithContext adds to a kubeconfig a context for a cluster at server, as the remote's
// admin: the watch reaches the remote through it (--cluster-context) while Argo CD reaches it
// directly.
func kubeconfigWithContext(t *testing.T, base string, remote *labtest.Remote, context, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(base)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(remote.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c := admin.Contexts[admin.CurrentContext]
	cluster := admin.Clusters[c.Cluster].DeepCopy()
	cluster.Server = server
	cfg.Clusters[context] = cluster
	cfg.AuthInfos[context] = admin.AuthInfos[c.AuthInfo]
	cfg.Contexts[context] = &clientcmdapi.Context{Cluster: context, AuthInfo: context}
	path := filepath.Join(labtest.TempDir(t), "kubeconfig-"+context)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWatchDestinationStopsAnswering is issue 28's acceptance for a destination that stops
// answering: the watch reaches the remote cluster through a loopback proxy that then black-holes
// every connection (Argo CD still reaches the remote directly). Its apps' rows keep their last good
// answer — the guarded one never turns unguarded — no Event is emitted for them, and an app of the
// cluster Argo CD runs in, changed meanwhile, reaches its metric within a deadline: the black-holed
// destination holds only its own lane.
func TestWatchDestinationStopsAnswering(t *testing.T) {
	env := labtest.Get(t)
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-blackhole"})
	install.RegisterRemote(t, remote, "remote")
	ns := install.Namespace()
	u, err := url.Parse(remote.Lab.Server)
	if err != nil {
		t.Fatal(err)
	}
	hole := newBlackHole(t, u.Host)
	kubeconfig := kubeconfigWithContext(t, serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns)), remote, "far", hole.server())
	p := startWatch(t, buildUnprune(t), kubeconfig, ns, "lanes", "--leader-elect=false",
		"--cluster-context", "remote=far", "--request-timeout", "2s", "--workers", "1")

	exposed := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
	guarded := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
	near := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	exposedNS, guardedNS, nearNS := labtest.UniqueName("hole"), labtest.UniqueName("holeguarded"), labtest.UniqueName("near")
	t.Cleanup(func() {
		remote.DeleteNamespace(exposedNS)
		remote.DeleteNamespace(guardedNS)
		env.DeleteNamespace(nearNS)
	})
	exposed.Incident(t, exposedNS, nil)
	guarded.Incident(t, guardedNS, nil)
	if _, err := remote.Kube.CoreV1().Namespaces().Patch(labtest.Context(t), guardedNS, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/sync-options":"Prune=false"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	unguarded := func(app *labtest.App) map[string]string {
		return map[string]string{"application": app.Name, "risk": "high", "when": "now"}
	}
	p.waitMetric(t, 30*time.Second, "unprune_unguarded_prune_candidates", unguarded(exposed), 1)
	// Both at once, in one scrape: the guarded row requires pruning and the watch has seen its guard
	// (the incident is evaluated before the Prune=false patch can be, so either alone can hold early).
	labtest.Eventually(t, 60*time.Second, guarded.Name+"'s row requiring pruning and guarded", func() (bool, string) {
		s, _ := p.scrape(t)
		pruning := value(s, "unprune_resources_requiring_pruning", map[string]string{"application": guarded.Name, "risk": "high"})
		open := value(s, "unprune_unguarded_prune_candidates", unguarded(guarded))
		return pruning == 1 && open == 0, fmt.Sprintf("requiring pruning %v, unguarded %v", pruning, open)
	})
	for _, app := range []*labtest.App{exposed, guarded} {
		labtest.Eventually(t, 15*time.Second, "the Event of "+app.Name+"'s Namespace", func() (bool, string) {
			return len(watchEvents(t, env, app)["HighRiskRequiresPruning"]) == 1, ""
		})
	}
	before := map[string]map[string][]string{exposed.Name: watchEvents(t, env, exposed), guarded.Name: watchEvents(t, env, guarded)}

	hole.stop()
	stopped := time.Now()
	// Evaluate the remote apps again now (the resync would, within 5 s): their reads hang until
	// --request-timeout.
	for _, app := range []*labtest.App{exposed, guarded} {
		if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(ns).Patch(labtest.Context(t), app.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"unprune-test/poke":"1"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	near.Incident(t, nearNS, nil)
	took := p.waitMetric(t, 20*time.Second, "unprune_resources_requiring_pruning", map[string]string{"application": near.Name, "risk": "high"}, 1)
	t.Logf("the in-cluster app's change reached its metric %.1fs after the destination stopped answering (%.1fs after its incident)",
		time.Since(stopped).Seconds(), took.Seconds())

	// The remote apps' reads fail and their last good answers are served, stale; meanwhile the
	// guarded row never turns unguarded.
	labtest.Eventually(t, 30*time.Second, "stale answers served for the black-holed destination", func() (bool, string) {
		s, _ := p.scrape(t)
		if g := value(s, "unprune_unguarded_prune_candidates", unguarded(guarded)); g != 0 {
			t.Fatalf("the guarded row of the black-holed destination turned unguarded (%v)", g)
		}
		if g := value(s, "unprune_resources_requiring_pruning", map[string]string{"application": guarded.Name, "risk": "high"}); g != 1 {
			t.Fatalf("the black-holed destination's row reads %v requiring pruning, want its last answer, 1", g)
		}
		// Served stale for longer than the resync period (5 s): evaluated again meanwhile.
		stale := value(s, "unprune_live_answer_stale_seconds", nil)
		return stale > 6, fmt.Sprintf("stale %vs", stale)
	})
	for _, app := range []*labtest.App{exposed, guarded} {
		if got := watchEvents(t, env, app); len(got) != len(before[app.Name]) || !sameEvents(got, before[app.Name]) {
			t.Errorf("Events on %s changed while its destination did not answer: %v, before %v", app.Name, got, before[app.Name])
		}
	}
}

func sameEvents(a, b map[string][]string) bool {
	for k, v := range a {
		if len(b[k]) != len(v) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestWatchClusterSecretChanges: the watch reaches the remote with Argo CD's cluster Secret, which
// it watches: the Secret removed, its cluster's rows become unknown (never unguarded, no Event);
// added again, the same process judges them again; its token rotated to a user without rights
// there, they are unknown again (the new token is used); rotated back, judged again — no restart.
func TestWatchClusterSecretChanges(t *testing.T) {
	env := labtest.Get(t)
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation", Namespace: "argocd-watch-secrets"})
	install.RegisterRemote(t, remote, "remote")
	ns := install.Namespace()
	p := startWatch(t, buildUnprune(t), serviceAccountKubeconfig(t, env, ns, applyShippedRBAC(t, env, ns, "remote-clusters")), ns, "secrets",
		"--leader-elect=false", "--cluster-credentials=argocd", "--request-timeout", "5s")
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
	appNS := labtest.UniqueName("sec")
	t.Cleanup(func() { remote.DeleteNamespace(appNS) })
	app.Incident(t, appNS, nil)
	unguarded := map[string]string{"application": app.Name, "risk": "high", "when": "now"}
	unknown := map[string]string{"application": app.Name, "risk": "high"}
	p.waitMetric(t, 30*time.Second, "unprune_unguarded_prune_candidates", unguarded, 1)
	labtest.Eventually(t, 15*time.Second, "the Event of the app's Namespace", func() (bool, string) {
		return len(watchEvents(t, env, app)["HighRiskRequiresPruning"]) == 1, ""
	})
	before := watchEvents(t, env, app)

	secrets := env.Kube.CoreV1().Secrets(ns)
	secret, err := secrets.Get(labtest.Context(t), "cluster-remote", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		fresh := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret.Name, Namespace: ns, Labels: secret.Labels}, Type: secret.Type, Data: secret.Data}
		if _, err := secrets.Create(context.Background(), fresh, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restore the cluster Secret: %v", err)
		}
		if _, err := secrets.Update(context.Background(), fresh, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("restore the cluster Secret: %v", err)
		}
	}
	t.Cleanup(restore)

	if err := secrets.Delete(labtest.Context(t), secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took := p.waitMetric(t, 20*time.Second, "unprune_unknown_guard_prune_candidates", unknown, 1)
	t.Logf("Secret removed: rows unknown after %.1fs", took.Seconds())
	p.waitMetric(t, 5*time.Second, "unprune_unguarded_prune_candidates", unguarded, 0)

	restore()
	took = p.waitMetric(t, 20*time.Second, "unprune_unguarded_prune_candidates", unguarded, 1)
	t.Logf("Secret added again: rows judged after %.1fs", took.Seconds())
	p.waitMetric(t, 5*time.Second, "unprune_unknown_guard_prune_candidates", unknown, 0)

	// A token rotated to the remote's user without rights: what it reads is Forbidden.
	noAccess, err := clientcmd.LoadFromFile(remote.NoAccessKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	token := noAccess.AuthInfos[noAccess.Contexts[noAccess.CurrentContext].AuthInfo].Token
	// The Secret was created again above: rotate the one that exists now (its uid, its version).
	current, err := secrets.Get(labtest.Context(t), secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rotated := current.DeepCopy()
	rotated.Data = map[string][]byte{"name": secret.Data["name"], "server": secret.Data["server"],
		"config": []byte(`{"bearerToken":"` + token + `","tlsClientConfig":{"insecure":false,"caData":"` + caData(t, secret) + `"}}`)}
	if _, err := secrets.Update(labtest.Context(t), rotated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took = p.waitMetric(t, 20*time.Second, "unprune_unknown_guard_prune_candidates", unknown, 1)
	t.Logf("token rotated to a user without rights: rows unknown after %.1fs", took.Seconds())
	p.waitMetric(t, 5*time.Second, "unprune_unguarded_prune_candidates", unguarded, 0)
	restore()
	took = p.waitMetric(t, 20*time.Second, "unprune_unguarded_prune_candidates", unguarded, 1)
	t.Logf("token rotated back: rows judged after %.1fs", took.Seconds())

	if got := watchEvents(t, env, app); !sameEvents(got, before) {
		t.Errorf("Events changed while the cluster Secret was removed or rotated: %v, before %v", got, before)
	}
}

// caData is the CA of a lab cluster Secret's config, as its JSON holds it (base64).
func caData(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	var cfg struct {
		TLS struct {
			CAData []byte `json:"caData"`
		} `json:"tlsClientConfig"`
	}
	if err := json.Unmarshal(s.Data["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(cfg.TLS.CAData)
}
