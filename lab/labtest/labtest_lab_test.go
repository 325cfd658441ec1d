//go:build lab

package labtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

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

// TestArgoCDV3_5 runs the incident on the real Argo CD v3.5.1, built with its in-tree gitops-engine:
// its default tracking is the annotation, and the reverted Namespace requires pruning.
func TestArgoCDV3_5(t *testing.T) {
	env := labtest.Get(t)
	start := time.Now()
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.5.1"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	ns := labtest.UniqueName("incident")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	reverted := app.Incident(t, ns, nil)
	wantTracking(t, env.Kube, app, ns)
	s := app.Status(t)
	if r, ok := s.Find("Namespace", ns); !ok || !r.RequiresPruning || s.Sync != "OutOfSync" || s.Revision != reverted {
		t.Errorf("after the revert: %s; want OutOfSync at %.8s with Namespace %s requiring pruning", s, reverted, ns)
	}
	t.Logf("v3.5.1: installation, incident and checks in %.1fs", time.Since(start).Seconds())
}

// TestRemote has the real Argo CD v3.6.1 controller deploy to the remote cluster, by server URL
// and by cluster name: the resources land in the remote (not in the lab's own cluster), the revert
// leaves the Namespace requiring pruning, and a sync with prune deletes it in the remote, whose
// controller manager finishes the deletion.
func TestRemote(t *testing.T) {
	env := labtest.Get(t)
	start := time.Now()
	remote := env.Remote(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1"})
	install.RegisterRemote(t, remote, "remote")
	t.Logf("remote up and registered in %.1fs", time.Since(start).Seconds())

	t.Run("no-access user", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", remote.NoAccessKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		kube := kubernetes.NewForConfigOrDie(cfg)
		if _, err := kube.CoreV1().Namespaces().List(labtest.Context(t), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("list namespaces in the remote as the user without rights: %v, want Forbidden", err)
		}
	})

	for _, tc := range []struct {
		name string
		opts labtest.AppOptions
	}{
		{"by server", labtest.AppOptions{DestServer: remote.Server}},
		{"by name", labtest.AppOptions{DestName: "remote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Repo = labtest.NewRepo(t)
			app := install.CreateApp(t, opts)
			if app.Cluster != remote.Cluster {
				t.Fatalf("CreateApp(%+v) resolved another cluster than the remote", tc.opts)
			}
			ns := labtest.UniqueName("remote")
			t.Cleanup(func() { remote.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)

			ctx := labtest.Context(t)
			wantTracking(t, remote.Kube, app, ns)
			if _, err := remote.Kube.CoreV1().ConfigMaps(app.DestNamespace).Get(ctx, app.Name+"-config", metav1.GetOptions{}); err != nil {
				t.Errorf("the app's ConfigMap in the remote: %v", err)
			}
			if _, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s in the lab's own cluster: %v, want NotFound", ns, err)
			}
			s := app.Status(t)
			if r, ok := s.Find("Namespace", ns); !ok || !r.RequiresPruning || s.Revision != reverted {
				t.Fatalf("after the revert: %s; want Namespace %s requiring pruning at %.8s", s, ns, reverted)
			}

			if op := app.Sync(t, true); op.Phase != "Succeeded" {
				t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
			}
			labtest.Eventually(t, 90*time.Second, "namespace "+ns+" to be deleted in the remote", func() (bool, string) {
				got, err := remote.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, ""
				}
				if err != nil {
					return false, err.Error()
				}
				return false, fmt.Sprintf("phase %s", got.Status.Phase)
			})
			app.WaitSynced(t, reverted)
		})
	}
}

// TestServer drives argocd-server's REST API as its users: viewer (role:readonly) sees every app
// and may change none; deployer sees and may patch resources of the team-a project's apps only.
func TestServer(t *testing.T) {
	env := labtest.Get(t)
	start := time.Now()
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Server: true})
	t.Logf("Argo CD with argocd-server up in %.1fs: %s", time.Since(start).Seconds(), install.ServerURL(t))

	repo := labtest.NewRepo(t)
	team := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "team-a", Project: lab.ServerProject})
	other := install.CreateApp(t, labtest.AppOptions{Repo: repo, Path: "default"})
	teamNS, otherNS := labtest.UniqueName("team-a"), labtest.UniqueName("default")
	t.Cleanup(func() { env.DeleteNamespace(teamNS); env.DeleteNamespace(otherNS) })
	team.Incident(t, teamNS, nil)
	other.Incident(t, otherNS, nil)

	admin, viewer, deployer := install.Token(t, lab.ServerAdmin), install.Token(t, lab.ServerViewer), install.Token(t, lab.ServerDeployer)

	list := func(t *testing.T, token string) []string {
		t.Helper()
		code, body := install.API(t, token, http.MethodGet, "/api/v1/applications", nil)
		if code != http.StatusOK {
			t.Fatalf("list applications: HTTP %d %s", code, body)
		}
		var resp struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatalf("list applications: %v: %s", err, body)
		}
		var names []string
		for _, it := range resp.Items {
			names = append(names, it.Metadata.Name)
		}
		return names
	}
	t.Run("list", func(t *testing.T) {
		for _, tc := range []struct {
			user         string
			token        string
			team, others bool
		}{
			{"admin", admin, true, true},
			{"viewer", viewer, true, true},
			{"deployer", deployer, true, false},
		} {
			names := list(t, tc.token)
			if slices.Contains(names, team.Name) != tc.team || slices.Contains(names, other.Name) != tc.others {
				t.Errorf("%s lists %v; want %s: %t, %s: %t", tc.user, names, team.Name, tc.team, other.Name, tc.others)
			}
		}
	})

	tree := func(token string, app *labtest.App) (int, string) {
		code, body := install.API(t, token, http.MethodGet, "/api/v1/applications/"+app.Name+"/resource-tree", nil)
		return code, string(body)
	}
	t.Run("resource-tree", func(t *testing.T) {
		for _, tc := range []struct {
			user  string
			token string
			app   *labtest.App
			ns    string
			want  int
		}{
			{"viewer", viewer, team, teamNS, http.StatusOK},
			{"viewer", viewer, other, otherNS, http.StatusOK},
			{"deployer", deployer, team, teamNS, http.StatusOK},
			{"deployer", deployer, other, otherNS, http.StatusForbidden},
		} {
			code, body := tree(tc.token, tc.app)
			if code != tc.want {
				t.Errorf("%s: resource tree of %s: HTTP %d %.200s; want %d", tc.user, tc.app.Name, code, body, tc.want)
			}
			if code == http.StatusOK && !strings.Contains(body, `"name":"`+tc.ns+`"`) {
				t.Errorf("%s: resource tree of %s lacks Namespace %s: %.300s", tc.user, tc.app.Name, tc.ns, body)
			}
		}
	})

	// patch is argocd app patch-resource's request: the body is the JSON encoding of the request's
	// string field "patch" (body: "patch" in application.proto), i.e. a JSON string.
	patch := func(token string, app *labtest.App, ns, value string) (int, string) {
		q := url.Values{"namespace": {""}, "resourceName": {ns}, "version": {"v1"}, "kind": {"Namespace"},
			"patchType": {"application/merge-patch+json"}}
		body := fmt.Sprintf(`{"metadata":{"labels":{"lab.unprune.dev/patched-by":%q}}}`, value)
		code, out := install.API(t, token, http.MethodPost, "/api/v1/applications/"+app.Name+"/resource?"+q.Encode(), body)
		return code, string(out)
	}
	t.Run("patch-resource", func(t *testing.T) {
		for _, tc := range []struct {
			user  string
			token string
			app   *labtest.App
			ns    string
			want  int
		}{
			{"viewer", viewer, team, teamNS, http.StatusForbidden},
			{"deployer", deployer, other, otherNS, http.StatusForbidden},
			{"deployer", deployer, team, teamNS, http.StatusOK},
		} {
			code, body := patch(tc.token, tc.app, tc.ns, tc.user)
			if code != tc.want {
				t.Errorf("%s patches Namespace %s of %s: HTTP %d %.300s; want %d", tc.user, tc.ns, tc.app.Name, code, body, tc.want)
			}
			if code == http.StatusForbidden && !strings.Contains(body, "permission denied") {
				t.Errorf("%s patches Namespace %s of %s: %s; want permission denied", tc.user, tc.ns, tc.app.Name, body)
			}
			got, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), tc.ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if by, patched := got.Labels["lab.unprune.dev/patched-by"]; patched != (tc.want == http.StatusOK) || (patched && by != tc.user) {
				t.Errorf("after %s's patch of %s: labels %v", tc.user, tc.ns, got.Labels)
			}
		}
	})
}

// TestControllerActsAsItsServiceAccount: the lab runs each application controller as
// ServiceAccount argocd-application-controller of its installation, with the release's ClusterRole,
// as Argo CD's manifests do. The API server says so itself: a ValidatingAdmissionPolicy that names
// the requesting user refuses the Namespace the controller syncs, and its message names the account.
func TestControllerActsAsItsServiceAccount(t *testing.T) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1"})
	account := "system:serviceaccount:" + install.Namespace() + ":" + lab.ControllerAccount
	ctx := labtest.Context(t)

	// Its kubeconfig authenticates as the account.
	cfg, err := clientcmd.BuildConfigFromFlags("", install.State.ControllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Username; got != account {
		t.Fatalf("the controller's kubeconfig authenticates as %q, want %q", got, account)
	}

	// And the running controller uses it.
	const policy = "labtest-whoami"
	for _, obj := range []map[string]any{
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": policy},
			"spec": map[string]any{
				"failurePolicy": "Fail",
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
					"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"namespaces"}}}},
				"matchConditions": []any{map[string]any{"name": "whoami", "expression": `object.metadata.name.startsWith("whoami-")`}},
				"validations":     []any{map[string]any{"expression": "false", "messageExpression": `"created by " + request.userInfo.username`}},
			}},
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": policy},
			"spec": map[string]any{"policyName": policy, "validationActions": []any{"Deny"}}},
	} {
		if err := env.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), policy, metav1.DeleteOptions{})
		_ = env.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), policy, metav1.DeleteOptions{})
	})
	// A new policy takes a moment to be enforced: poll with a dry-run, never sleep.
	labtest.Eventually(t, 60*time.Second, "the whoami policy to be enforced", func() (bool, string) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: labtest.UniqueName("whoami-admin")}}
		_, err := env.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "created by "+lab.AdminUser), fmt.Sprint(err)
	})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
	ns := labtest.UniqueName("whoami")
	app.Repo.Write(t, app.Path+"/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
	added := app.Repo.Commit(t, "add namespace "+ns)
	app.RefreshUntil(t, labtest.ControllerTimeout, "to see commit "+added, func(s labtest.Status) bool { return s.Revision == added })
	op := app.Sync(t, false)
	var messages []string
	for _, r := range op.Results {
		messages = append(messages, r.Message)
	}
	all := op.Message + " " + strings.Join(messages, " ")
	if op.Phase == "Succeeded" || !strings.Contains(all, "created by "+account) {
		t.Fatalf("sync: %s %q; want the policy's refusal naming %s", op.Phase, all, account)
	}
}
