//go:build lab

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestUIRemoteDestination: for an app deploying to the remote cluster, the UI's backend installed
// with deploy/ui-extension/remote-clusters (UIRemoteClusters: Argo CD's cluster Secrets) reads that
// cluster as it reads its own — the stuck Namespace's contents, the release's plan and diff — and a
// backend without it says plainly that it cannot, naming the component, in the answer the UI shows.
// Asked as the browser asks, through argocd-server's proxy extension; nothing changes either way.
func TestUIRemoteDestination(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	remote := env.Remote(t)
	for _, tc := range []struct {
		name    string
		cfg     lab.ArgoCDConfig
		reaches bool
	}{
		{"in-cluster only", uiLines[0].config(), false},
		{"remote clusters", lab.ArgoCDConfig{Version: uiLines[0].version, Namespace: "argocd-ui-remote", Server: true, UI: true, UIRemoteClusters: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, tc.cfg)
			install.RegisterRemote(t, remote, "remote")
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, DestName: "remote"})
			ns := labtest.UniqueName("uiremote")
			t.Cleanup(func() { app.Cluster.DeleteNamespace(ns) })
			app.Incident(t, ns, nil)
			ctx := labtest.Context(t)
			data := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Data: map[string]string{"k": "v"}}
			if _, err := app.Cluster.Kube.CoreV1().ConfigMaps(ns).Create(ctx, data, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			before, err := app.Cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			var a printer.UIApplication
			if code, body := askBackend(t, install, app, "/application", &a); code != http.StatusOK {
				t.Fatalf("GET /application: %d %s", code, body)
			}
			var item *printer.UIItem
			for i := range a.Items {
				if a.Items[i].Resource.Kind == "Namespace" && a.Items[i].Resource.Name == ns {
					item = &a.Items[i]
				}
			}
			if item == nil {
				t.Fatalf("the answer does not list Namespace %s: %+v", ns, a.Items)
			}
			var r printer.UIResource
			code, body := askBackend(t, install, app, "/resource?version=v1&kind=Namespace&name="+ns, &r)
			const plainly = "reads only the cluster Argo CD runs in"
			if tc.reaches {
				if item.LiveError != "" || len(a.Warnings) != 0 {
					t.Errorf("a backend reaching the remote cluster: live error %q, warnings %q", item.LiveError, a.Warnings)
				}
				if item.Contents == nil || item.Contents.Objects < 1 {
					t.Errorf("the Namespace's contents on the remote cluster: %+v, want ConfigMap data counted", item.Contents)
				}
				if code != http.StatusOK || r.Release.Outcome != "Planned" || !strings.Contains(r.Release.Diff, "-    "+argocd.AnnotationTrackingID+": ") {
					t.Errorf("the release's plan: %d %+v (%s)", code, r.Release, body)
				}
			} else {
				if len(a.Warnings) == 0 || !strings.Contains(a.Warnings[0], plainly) || !strings.Contains(a.Warnings[0], "deploy/ui-extension/remote-clusters") {
					t.Errorf("warnings %q: want first that the backend %s, naming deploy/ui-extension/remote-clusters", a.Warnings, plainly)
				}
				if !strings.Contains(item.LiveError, plainly) || strings.Contains(item.LiveError, "--") {
					t.Errorf("the row's live error %q: want it said plainly, with no flag", item.LiveError)
				}
				if code != http.StatusBadGateway || !strings.Contains(string(body), plainly) {
					t.Errorf("the release's plan: %d %s, want 502 saying it plainly", code, body)
				}
			}
			after, err := app.Cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != before.ResourceVersion {
				t.Errorf("asking changed the Namespace: resourceVersion %s, then %s", before.ResourceVersion, after.ResourceVersion)
			}
		})
	}
}

// askBackend asks unprune's backend as the UI does for app, through argocd-server's proxy extension
// as the admin, and decodes a 200 answer into into.
func askBackend(t *testing.T, install *labtest.Install, app *labtest.App, path string, into any) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(labtest.Context(t), http.MethodGet, install.ServerURL(t)+"/extensions/unprune/api/v1alpha1"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The proxy extension takes the session from the UI's cookie only (server/extension: "Auth
	// cookie not found" otherwise), as the browser sends it.
	req.AddCookie(&http.Cookie{Name: "argocd.token", Value: install.Token(t, lab.ServerAdmin)})
	req.Header.Set("Argocd-Application-Name", app.Namespace+":"+app.Name)
	req.Header.Set("Argocd-Project-Name", app.Project)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode, body
}
