//go:build lab

package bench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// BenchmarkAdmission times the deletion budget's webhook as the API server calls it: N Applications
// × 50 rows are seeded as for BenchmarkWatch, `unprune watch --deletion-budget` serves the webhook,
// and dry-run DELETEs of the apps' ConfigMaps are sent as Argo CD's controller would send them (a
// ServiceAccount's token, matched by the webhook's matchConditions). The baseline, in the same run,
// is the same DELETE sent as a second ServiceAccount that a no-op webhook (allow everything, same
// TLS, same API server) is registered for: the ratio is what the budget's work costs over any
// webhook's. The two are interleaved, so that the machine's noise falls on both.
func BenchmarkAdmission(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	apps := watchApps(b)
	ns := labtest.UniqueName("argocd-budget")
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "argocd-cm", "namespace": ns},
			"data": map[string]any{"application.resourceTrackingMethod": "annotation"}},
		{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": map[string]any{"name": "default", "namespace": ns},
			"spec": map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}}}},
	} {
		if err := env.Create(context.Background(), obj); err != nil {
			b.Fatal(err)
		}
	}
	namespaces := make([]string, 40)
	for i := range namespaces {
		namespaces[i] = labtest.UniqueName("budget")
		env.CreateNamespace(b, namespaces[i])
	}
	start := time.Now()
	seedWatchApps(b, env, ns, namespaces, apps)
	fmt.Fprintf(os.Stdout, "\nseeded %d Applications × %d rows in %.0fs\n", apps, watchRows, time.Since(start).Seconds())

	dir := b.TempDir()
	certFile, keyFile, caBundle, err := lab.ServingCertificate(filepath.Join(dir, "tls"))
	if err != nil {
		b.Fatal(err)
	}
	port := freePort(b)
	// A budget of 100: every app's 50 rows are within it, so each DELETE is judged in full and allowed.
	w := startBenchWatch(b, bin, env.State.Kubeconfig, ns, "--deletion-budget=100", fmt.Sprintf("--admission-bind-address=127.0.0.1:%d", port),
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile, "--deletion-budget-users=system:serviceaccount:"+ns+":budgeted")
	waitFor(b, 30*time.Minute, "the watch to evaluate every app", func() bool {
		s := w.scrape(b)
		return s["unprune_applications_watched"] == float64(apps) && s["unprune_evaluations_total"] >= float64(apps)
	})

	noop := noopWebhook(b, certFile, keyFile)
	budgeted, baseline := deleter(b, env, ns, "budgeted"), deleter(b, env, ns, "baseline")
	registerWebhook(b, env, "unprune-bench-budget", fmt.Sprintf("https://127.0.0.1:%d/validate-deletion", port), caBundle, "system:serviceaccount:"+ns+":budgeted")
	registerWebhook(b, env, "unprune-bench-noop", noop, caBundle, "system:serviceaccount:"+ns+":baseline")

	del := func(c kubernetes.Interface, i int) float64 {
		app, r := i%apps, (i/apps)%watchRows
		name, cmNS := fmt.Sprintf("watch-%05d-%02d", app, r), namespaces[app%len(namespaces)]
		t0 := time.Now()
		if err := c.CoreV1().ConfigMaps(cmNS).Delete(context.Background(), name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			b.Fatalf("dry-run DELETE of %s/%s: %v", cmNS, name, err)
		}
		return time.Since(t0).Seconds()
	}
	// Until both webhooks answer (the API server reads new configurations within a second or so).
	waitFor(b, time.Minute, "both webhooks to be called", func() bool {
		del(budgeted, 0)
		del(baseline, 0)
		return w.scrapeLine(b, "unprune_admission_duration_seconds_count", `allowed="true"`) > 0 && noopCalls.Load() > 0
	})
	const requests = 400
	order := rand.Perm(apps * watchRows)
	var withBudget, withNoop []float64
	b.ResetTimer()
	for k := range requests {
		i := order[k%len(order)]
		if k%2 == 0 {
			withBudget = append(withBudget, del(budgeted, i))
			withNoop = append(withNoop, del(baseline, i))
		} else {
			withNoop = append(withNoop, del(baseline, i))
			withBudget = append(withBudget, del(budgeted, i))
		}
	}
	b.StopTimer()
	refused := w.scrapeLine(b, "unprune_admission_duration_seconds_count", `allowed="false"`)
	if refused > 0 {
		b.Fatalf("the budget refused %v requests within the budget", refused)
	}
	fmt.Fprintf(os.Stdout, "\n%s: %d apps × %d rows, %d dry-run DELETEs each way, interleaved\n", b.Name(), apps, watchRows, requests)
	fmt.Fprintf(os.Stdout, "  %-44s median %.1f ms, p99 %.1f ms\n", "DELETE through the deletion budget", 1000*percentile(withBudget, 50), 1000*percentile(withBudget, 99))
	fmt.Fprintf(os.Stdout, "  %-44s median %.1f ms, p99 %.1f ms\n", "DELETE through a no-op webhook", 1000*percentile(withNoop, 50), 1000*percentile(withNoop, 99))
	fmt.Fprintf(os.Stdout, "  %-44s %.2f (p99), %.2f (median)\n", "budget ÷ no-op", percentile(withBudget, 99)/percentile(withNoop, 99), percentile(withBudget, 50)/percentile(withNoop, 50))
	b.ReportMetric(1000*percentile(withBudget, 99), "budget-p99-ms")
	b.ReportMetric(1000*percentile(withNoop, 99), "noop-p99-ms")
	b.ReportMetric(percentile(withBudget, 99)/percentile(withNoop, 99), "p99-ratio")
}

// noopCalls counts the no-op webhook's reviews.
var noopCalls atomic.Int64

// noopWebhook serves a webhook that allows every request, over the same TLS as the budget's; it
// returns its URL.
func noopWebhook(b *testing.B, certFile, keyFile string) string {
	b.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(rw, "not a review", http.StatusBadRequest)
			return
		}
		noopCalls.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(rw).Encode(review)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String() + "/"
}

// deleter is a client acting as a ServiceAccount of ns that may delete ConfigMaps.
func deleter(b *testing.B, env *labtest.Env, ns, name string) kubernetes.Interface {
	b.Helper()
	ctx := context.Background()
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	role := ns + "-" + name
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	seconds := int64(3600)
	tr, err := env.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.REST)
	cfg.BearerToken, cfg.QPS, cfg.Burst = tr.Status.Token, -1, 0
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// registerWebhook registers a ValidatingWebhookConfiguration like deploy/components/deletion-budget's
// for DELETEs of user, served at url; it is deleted when the benchmark ends.
func registerWebhook(b *testing.B, env *labtest.Env, name, url, caBundle, user string) {
	b.Helper()
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	conf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": name},
		"webhooks": []any{map[string]any{
			"name": "deletions.unprune.dev", "admissionReviewVersions": []any{"v1"}, "sideEffects": "NoneOnDryRun",
			"failurePolicy": "Fail", "timeoutSeconds": int64(10), "matchPolicy": "Equivalent",
			"rules":           []any{map[string]any{"operations": []any{"DELETE"}, "apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "resources": []any{"*"}, "scope": "*"}},
			"matchConditions": []any{map[string]any{"name": "user", "expression": fmt.Sprintf("request.userInfo.username == '%s'", user)}},
			"clientConfig":    map[string]any{"url": url, "caBundle": caBundle},
		}},
	}}
	if _, err := env.Dynamic.Resource(gvr).Create(context.Background(), conf, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func freePort(b *testing.B) int {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
