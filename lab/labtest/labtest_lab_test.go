//go:build lab

package labtest_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }

const trackingAnnotation = "argocd.argoproj.io/tracking-id"

// wantTracking checks the metadata Argo CD's default tracking from v3.0 (annotation) writes on a
// Namespace an app synced: the tracking-id annotation naming the app and the object, and no label.
func wantTracking(t *testing.T, kube kubernetes.Interface, app *labtest.App, ns string) {
	t.Helper()
	got, err := kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace %s: %v", ns, err)
	}
	want := fmt.Sprintf("%s:/Namespace:%s/%s", app.Instance(), app.DestNamespace, ns)
	if a := got.Annotations[trackingAnnotation]; a != want {
		t.Errorf("namespace %s: %s = %q, want %q", ns, trackingAnnotation, a, want)
	}
	if l, ok := got.Labels["app.kubernetes.io/instance"]; ok {
		t.Errorf("namespace %s carries the instance label %q; annotation tracking writes none", ns, l)
	}
}

// TestArgoCDV3_0 runs the incident on the real Argo CD v3.0.23: its default tracking is the
// annotation, and the reverted Namespace requires pruning.
func TestArgoCDV3_0(t *testing.T) {
	env := labtest.Get(t)
	start := time.Now()
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.0.23"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	ns := labtest.UniqueName("incident")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	wantTracking(t, env.Kube, app, ns)
	s := app.Status(t)
	if r, ok := s.Find("Namespace", ns); !ok || !r.RequiresPruning || s.Sync != "OutOfSync" || s.Revision != reverted {
		t.Errorf("after the revert: %s; want OutOfSync at %.8s with Namespace %s requiring pruning", s, reverted, ns)
	}
	t.Logf("v3.0.23: installation, incident and checks in %.1fs", time.Since(start).Seconds())
}
