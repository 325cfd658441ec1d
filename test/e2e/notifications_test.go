//go:build lab

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/deploytest"
)

// delivery is one request a notification service made to the test's webhook.
type delivery struct {
	method, path, body string
	at                 time.Time
}

// webhook is an HTTP server on 127.0.0.1 that records every request and answers 200.
type webhook struct {
	*httptest.Server
	mu   sync.Mutex
	seen []delivery
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.seen = append(w.seen, delivery{method: r.Method, path: r.URL.Path, body: string(body), at: time.Now()})
		w.mu.Unlock()
	}))
	t.Cleanup(w.Close)
	return w
}

// resendWindow folds Argo CD's duplicate sends. The notifications controller records what it sent
// in the notified.notifications.argoproj.io annotation and writes the patched object into its
// informer's store (notifications-engine pkg/controller/controller.go, processResource), but a
// watch event of an earlier version of the app can overwrite that store, and the next processing,
// milliseconds later, sends the same message again: delivery is at least once. Seen in CI under
// load: the same body twice, 82 ms apart. A trigger that fired again on a later evaluation (a
// broken oncePer) sends after the refresh that evaluation waits for, seconds later, and still counts.
const resendWindow = time.Second

// requests returns every request made to path, in order, a message sent again included.
func (w *webhook) requests(path string) []delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []delivery
	for _, d := range w.seen {
		if d.path == path {
			out = append(out, d)
		}
	}
	return out
}

// to returns the messages sent to path, in order: a request with the method and body of the one
// before it to the same path, within resendWindow of it, is that message sent again and not counted.
func (w *webhook) to(path string) []delivery {
	var out []delivery
	for _, d := range w.requests(path) {
		if n := len(out); n > 0 && out[n-1].method == d.method && out[n-1].body == d.body && d.at.Sub(out[n-1].at) < resendWindow {
			continue
		}
		out = append(out, d)
	}
	return out
}

var (
	notificationsSampleRE = regexp.MustCompile(`^(\w+)\{([^}]*)\} (\S+)$`)
	notificationsLabelRE  = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// notificationsCounter reads a counter of the notifications controller's /metrics whose labels
// include want; 0 when it has no such sample yet (a counter vector has a series once it counted).
func notificationsCounter(t *testing.T, url, name string, want map[string]string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		m := notificationsSampleRE.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != name {
			continue
		}
		labels := map[string]string{}
		for _, l := range notificationsLabelRE.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		total += v
	}
	return total
}

// strand makes app leave a resource behind as the incident did: its manifest committed and synced
// (no prune), then the commit reverted. It returns once the app's comparison lists the resource as
// requiring pruning, and when the revert was pushed. Unlike App.Incident it does not need the app
// Synced in between, so that resources stranded before stay stranded.
func strand(t *testing.T, app *labtest.App, kind, name, manifest string) time.Time {
	t.Helper()
	app.Repo.Write(t, fmt.Sprintf("%s/%s-%s.yaml", app.Path, strings.ToLower(kind), name), manifest)
	added := app.Repo.Commit(t, "add "+kind+" "+name)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+added, func(s labtest.Status) bool { return s.Revision == added })
	if op := app.Sync(t, false); op.Phase != "Succeeded" {
		t.Fatalf("sync of %s: %s %s", added, op.Phase, op.Message)
	}
	app.WaitStatus(t, 90*time.Second, kind+" "+name+" to be synced", func(s labtest.Status) bool {
		r, ok := s.Find(kind, name)
		return s.Revision == added && ok && r.Status == "Synced" && !r.RequiresPruning
	})
	reverted := app.Repo.Revert(t)
	pushed := time.Now()
	app.RefreshUntil(t, labtest.ControllerTimeout, "to require pruning of "+kind+" "+name, func(s labtest.Status) bool {
		r, ok := s.Find(kind, name)
		return s.Revision == reverted && ok && r.RequiresPruning
	})
	return pushed
}

// notificationBody is the JSON the component's template posts to a webhook service named unprune.
type notificationBody struct {
	Reason      string `json:"reason"`
	Application struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"application"`
	Resources []struct {
		Group, Kind, Namespace, Name string
		Resource, Detach, Guard      string
	} `json:"resources"`
	Preview string `json:"preview"`
}

// TestNotifications proves deploy/components/argocd-notifications with Argo CD's own notifications
// controller (v3.6.1, the same argocd binary), posting to a webhook on 127.0.0.1. The trigger and the
// template are read from the component as kustomize builds it; the app subscribes to two webhook
// services: `unprune`, which gets the template's JSON body (POST), and `unprune-test`, which gets its
// message (what Slack-style services send; a webhook without a body of its own sends it with GET).
// The real application controller decides what requires pruning: a ConfigMap stranded alone sends
// nothing, a Namespace stranded beside it one message per service naming the Namespace only,
// however often the app is evaluated again; a second Namespace changes the set and sends one more
// naming both; detaching both sends nothing.
func TestNotifications(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Notifications: true})
	argocdNS := install.Namespace()
	metrics := install.State.NotificationsMetricsURL
	if metrics == "" {
		t.Fatal("the installation runs no notifications controller")
	}
	hook := newWebhook(t)

	data := deploytest.BuildNotifications(t, argocdNS, deploytest.EmptyNotificationsConfigMap)
	data["service.webhook.unprune"] = "url: " + hook.URL + "/unprune\n"
	data["service.webhook.unprune-test"] = "url: " + hook.URL + "/unprune-test\n"
	cms := env.Kube.CoreV1().ConfigMaps(argocdNS)
	cm, err := cms.Get(labtest.Context(t), "argocd-notifications-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if _, err := cms.Update(labtest.Context(t), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
	subscribe := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		"notifications.argoproj.io/subscribe." + deploytest.NotificationsTrigger + ".unprune":      "",
		"notifications.argoproj.io/subscribe." + deploytest.NotificationsTrigger + ".unprune-test": "",
	}}}
	b, _ := json.Marshal(subscribe)
	if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(app.Namespace).
		Patch(labtest.Context(t), app.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := app.Namespace + "/" + app.Name
	evaluated := func(triggered bool) float64 {
		return notificationsCounter(t, metrics, "argocd_notifications_trigger_eval_total",
			map[string]string{"name": deploytest.NotificationsTrigger, "triggered": strconv.FormatBool(triggered)})
	}
	// reevaluated asks the application controller for a comparison (a refresh: updates of the app,
	// all after everything before) until the notifications controller has evaluated the trigger
	// twice more. It processes an app's updates one at a time, and the first of those evaluations —
	// with everything it sends — has finished once the second starts: a message it was to send
	// again has arrived.
	reevaluated := func() {
		t.Helper()
		total := func() float64 { return evaluated(true) + evaluated(false) }
		before := total()
		app.RefreshAndWait(t)
		asked := time.Now()
		labtest.Eventually(t, 60*time.Second, "the trigger evaluated again", func() (bool, string) {
			n := total()
			if n < before+2 && time.Since(asked) > 5*time.Second {
				// Updates that arrive together are processed once: ask again.
				app.RefreshAndWait(t)
				asked = time.Now()
			}
			return n >= before+2, fmt.Sprintf("evaluations: %v, before the refresh %v", n, before)
		})
	}
	wantDeliveries := func(n int, why string) {
		t.Helper()
		for _, path := range []string{"/unprune", "/unprune-test"} {
			if got := hook.to(path); len(got) != n {
				t.Fatalf("%s: %d messages to %s, want %d: %+v", why, len(got), path, n, got)
			}
		}
	}

	// The control: a ConfigMap requiring pruning is of normal risk.
	config := labtest.UniqueName("settings")
	strand(t, app, "ConfigMap", config, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  k: v\n", config, app.DestNamespace))
	reevaluated()
	if n := evaluated(true); n != 0 {
		t.Fatalf("the trigger held %v times for a ConfigMap requiring pruning", n)
	}
	wantDeliveries(0, "a ConfigMap requiring pruning")

	// The incident: a Namespace committed, synced and reverted, beside the ConfigMap.
	first := labtest.UniqueName("precious")
	t.Cleanup(func() { env.DeleteNamespace(first) })
	reverted := strand(t, app, "Namespace", first, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+first+"\n")
	labtest.Eventually(t, 60*time.Second, "a message to each webhook service", func() (bool, string) {
		return len(hook.to("/unprune")) > 0 && len(hook.to("/unprune-test")) > 0,
			fmt.Sprintf("%d and %d messages", len(hook.to("/unprune")), len(hook.to("/unprune-test")))
	})
	t.Logf("messages %.2fs and %.2fs after the revert was pushed (the refresh, Argo CD's comparison and the notification)",
		hook.to("/unprune")[0].at.Sub(reverted).Seconds(), hook.to("/unprune-test")[0].at.Sub(reverted).Seconds())
	reevaluated()
	wantDeliveries(1, "the Namespace requiring pruning, evaluated again")
	checkNotification(t, hook.to("/unprune")[0], hook.to("/unprune-test")[0], ref, []string{first}, config)
	notified := app.Get(t).GetAnnotations()["notified.notifications.argoproj.io"]
	if !strings.Contains(notified, "Namespace/"+first+":") {
		t.Errorf("notified.notifications.argoproj.io = %s; want its key to begin with the oncePer value, the Namespace", notified)
	}

	// A second high-risk resource changes the set: one more message, naming both.
	second := labtest.UniqueName("precious")
	t.Cleanup(func() { env.DeleteNamespace(second) })
	strand(t, app, "Namespace", second, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+second+"\n")
	labtest.Eventually(t, 60*time.Second, "a second message to each webhook service", func() (bool, string) {
		return len(hook.to("/unprune")) > 1 && len(hook.to("/unprune-test")) > 1,
			fmt.Sprintf("%d and %d messages", len(hook.to("/unprune")), len(hook.to("/unprune-test")))
	})
	reevaluated()
	wantDeliveries(2, "a second Namespace requiring pruning")
	checkNotification(t, hook.to("/unprune")[1], hook.to("/unprune-test")[1], ref, []string{first, second}, config)

	// Released with unprune: the ConfigMap still requires pruning, and nothing is sent.
	r := unprune(t, env, labtest.TempDir(t), "--argocd-namespace="+argocdNS, "detach", ref, "Namespace/"+first, "Namespace/"+second, "--yes")
	if r.Code != cli.ExitOK {
		t.Fatalf("detach exit %d", r.Code)
	}
	s := app.Status(t)
	if _, listed := s.Find("Namespace", first); listed {
		t.Fatalf("after detach the app still lists %s: %s", first, s)
	}
	if c, ok := s.Find("ConfigMap", config); !ok || !c.RequiresPruning {
		t.Fatalf("after detach the ConfigMap should still require pruning: %s", s)
	}
	held := evaluated(true)
	reevaluated()
	if n := evaluated(true); n != held {
		t.Errorf("the trigger held %v more times after detach", n-held)
	}
	wantDeliveries(2, "after detach")
	// The controller counts every send, a message sent again too (resendWindow): its counter is the
	// number of requests the webhook received, of which the two messages to two services are the rest.
	received := len(hook.requests("/unprune")) + len(hook.requests("/unprune-test"))
	if n := notificationsCounter(t, metrics, "argocd_notifications_deliveries_total",
		map[string]string{"trigger": deploytest.NotificationsTrigger, "succeeded": "true"}); n != float64(received) {
		t.Errorf("argocd_notifications_deliveries_total of the trigger = %v, want %d: the requests the webhook received (4 messages, %d sent again)",
			n, received, received-4)
	}
}

// checkNotification checks one message of each service: the JSON body names exactly the
// namespaces (in status order) with their commands, and the message names them and not the ConfigMap.
func checkNotification(t *testing.T, post, get delivery, ref string, namespaces []string, configMap string) {
	t.Helper()
	if post.method != http.MethodPost {
		t.Errorf("webhook service unprune: %s, want POST", post.method)
	}
	var body notificationBody
	if err := json.Unmarshal([]byte(post.body), &body); err != nil {
		t.Fatalf("webhook service unprune: body is not JSON: %v\n%s", err, post.body)
	}
	if body.Reason != "HighRiskRequiresPruning" || body.Application.Namespace+"/"+body.Application.Name != ref ||
		body.Preview != "unprune detach "+ref+" --all" || len(body.Resources) != len(namespaces) {
		t.Fatalf("webhook body %+v; want %s and the namespaces %v", body, ref, namespaces)
	}
	got := map[string]bool{}
	for _, r := range body.Resources {
		got[r.Name] = true
		want := "Namespace/" + r.Name
		if r.Kind != "Namespace" || r.Group != "" || r.Namespace != "" || r.Resource != want ||
			r.Detach != "unprune detach "+ref+" "+want+" --yes" || r.Guard != "unprune guard protect "+want+" --yes" {
			t.Errorf("webhook body resource %+v", r)
		}
	}
	for _, ns := range namespaces {
		if !got[ns] {
			t.Errorf("webhook body does not name Namespace %s: %s", ns, post.body)
		}
		for _, want := range []string{
			"• Namespace/" + ns + " requires pruning.",
			"unprune detach " + ref + " Namespace/" + ns + " --yes",
			"unprune guard protect Namespace/" + ns + " --yes (with unprune guard policy --merge --kinds namespaces --apply)",
		} {
			if !strings.Contains(get.body, want) {
				t.Errorf("message lacks %q:\n%s", want, get.body)
			}
		}
	}
	if strings.Contains(post.body, configMap) || strings.Contains(get.body, configMap) {
		t.Errorf("the ConfigMap %s, of normal risk, is named:\n%s\n%s", configMap, post.body, get.body)
	}
	if !strings.HasPrefix(get.body, "Application "+ref+": ") {
		t.Errorf("message does not begin with the app:\n%s", get.body)
	}
	t.Logf("webhook service unprune-test got (%s):\n%s", get.method, get.body)
}
