package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/session/sessiontest"
)

// setWorld is an Argo CD whose ApplicationSet "teams" generates payments and search from a list;
// payments tracks Namespace payments (and, through a copied tracking-id, Namespace payments-copy),
// and every app has the resources finalizer.
type setWorld struct {
	*world
	live   map[string]any
	owned  []argocd.Whole
	params map[string]string
}

// setArgo is the fake installation with the ApplicationSet reads and argocd-cmd-params-cm.
type setArgo struct {
	*clustertest.ArgoCD
	w *setWorld
}

func (a setArgo) GetApplicationSet(context.Context, string, string) (map[string]any, error) {
	return a.w.live, nil
}

func (a setArgo) OwnedApplications(context.Context, string, string) ([]argocd.Whole, error) {
	return a.w.owned, nil
}

func (a setArgo) ClusterSecrets(context.Context) ([]appset.Cluster, error) {
	return []appset.Cluster{}, nil
}

func (a setArgo) CmdParams(context.Context) (map[string]string, error) { return a.w.params, nil }

func (a setArgo) Destination(ctx context.Context, app argocd.Application) (cluster.Objects, error) {
	o, err := a.ArgoCD.Destination(ctx, app)
	if c, ok := o.(*clustertest.Cluster); ok {
		return searching{c}, err
	}
	return o, err
}

// setSession hands out the installation with its ApplicationSet.
type setSession struct {
	*sessiontest.Session
	argo setArgo
}

func (s setSession) ArgoCD(context.Context) (cluster.ArgoCD, error) { return s.argo, nil }

// searching lets the fake cluster list every object, as the Kubernetes backend does for copies.
type searching struct{ *clustertest.Cluster }

func (s searching) EachObject(ctx context.Context, fn func(*cluster.Object)) ([]string, error) {
	for _, k := range []string{"Namespace", "ConfigMap"} {
		for _, name := range []string{"payments", "payments-copy", "search"} {
			ref, err := s.Resolve(ctx, "", k, "", name, name)
			if err != nil {
				continue
			}
			if o, err := s.Get(ctx, ref); err == nil {
				fn(o)
			}
		}
	}
	return nil, nil
}

func teamsSet(extra, name string, teams ...string) map[string]any {
	var elements []string
	for _, t := range teams {
		elements = append(elements, "{team: "+t+"}")
	}
	doc := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: teams, namespace: argocd}
spec:
` + extra + `
  generators:
  - list:
      elements: [` + strings.Join(elements, ", ") + `]
  template:
    metadata: {name: "` + name + `"}
    spec:
      project: default
      source: {repoURL: "https://git.example.com/teams", path: "{{team}}"}
      destination: {server: "https://kubernetes.default.svc", namespace: "{{team}}"}
`
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		panic(err)
	}
	return m
}

func newSetWorld(t *testing.T) *setWorld {
	t.Helper()
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &goldenVersion)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer, append([]clustertest.Kind{
		{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true}}, clustertest.DefaultKinds...)...)
	argo := clustertest.NewArgoCD("argocd", home, s)
	argo.Now = func() time.Time { return goldenTime.Add(time.Second) }
	w := &setWorld{world: &world{t: t, dir: fixedLengthDir(t), argo: argo, home: home, env: map[string]string{}, rand: sessiontest.Counter(),
		refs: map[string]cluster.Ref{}, now: func() time.Time { return goldenTime }}, live: teamsSet("", "{{team}}", "payments", "search"), params: map[string]string{}}
	for _, team := range []string{"payments", "search"} {
		ref := home.Add("argoproj.io", "Application", "argocd", team, nil, nil)
		w.refs[team] = ref
		home.Update(ref, func(o *cluster.Object) {
			o.Content = map[string]any{"metadata": map[string]any{"namespace": "argocd", "name": team, "finalizers": []any{argocd.FinalizerResources}},
				"spec": map[string]any{"source": map[string]any{"repoURL": "https://git.example.com/teams", "path": team},
					"destination": map[string]any{"server": argocd.InClusterServer, "namespace": team}},
				"status": map[string]any{"sourceType": "Directory"}}
		})
		w.owned = append(w.owned, argocd.ParseWhole(home.Object(ref).Content))
		home.Add("", "Namespace", "", team, nil, map[string]string{argocd.AnnotationTrackingID: team + ":/Namespace:" + team + "/" + team})
		argo.AddApp(argocd.Application{Namespace: "argocd", Name: team, Project: "default", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: team},
			Resources: []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: team}}})
	}
	// A Namespace cloned from payments', tracking-id and all: payments' cascade deletes it too.
	home.Add("", "Namespace", "", "payments-copy", nil, map[string]string{argocd.AnnotationTrackingID: "payments:/Namespace:payments/payments"})
	return w
}

// postDeleteHook gives the set's app a PostDelete hook: the hook finalizers Argo CD's controller
// keeps on it, and the live hook object its status lists (as after a deletion that ran it).
func (w *setWorld) postDeleteHook(team string) {
	ref := w.refs[team]
	w.home.Update(ref, func(o *cluster.Object) {
		o.Content["metadata"].(map[string]any)["finalizers"] = []any{argocd.FinalizerResources, argocd.FinalizerPostDelete, argocd.FinalizerPostDelete + "/cleanup"}
	})
	w.home.Add("", "ConfigMap", team, team+"-cleanup", nil, map[string]string{argocd.AnnotationHook: argocd.HookPostDelete,
		argocd.AnnotationTrackingID: team + ":/ConfigMap:" + team + "/" + team + "-cleanup"})
	app, err := w.argo.GetApplication(context.Background(), "argocd", team)
	if err != nil {
		w.t.Fatal(err)
	}
	app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: team, Name: team + "-cleanup", Hook: true, RequiresPruning: true})
	w.argo.AddApp(app)
}

// hydratorSpec is a team's app spec rendered by the source hydrator from a Helm chart (helm options
// without a release name), synced from the hydrated branch.
func hydratorSpec(team string) map[string]any {
	return map[string]any{
		"drySource":  map[string]any{"repoURL": "https://git.example.com/teams", "path": team, "targetRevision": "main", "helm": map[string]any{"valueFiles": []any{"values.yaml"}}},
		"syncSource": map[string]any{"targetBranch": "environments/prod", "path": team},
	}
}

// hydratorSet is set with a template whose apps render through the source hydrator.
func hydratorSet(set map[string]any) map[string]any {
	spec := set["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	delete(spec, "source")
	spec["sourceHydrator"] = hydratorSpec("{{team}}")
	return set
}

// hydrated turns the set's live apps and its live template into source-hydrator apps.
func (w *setWorld) hydrated() {
	w.live = hydratorSet(w.live)
	w.owned = nil
	for _, team := range []string{"payments", "search"} {
		w.home.Update(w.refs[team], func(o *cluster.Object) {
			spec := o.Content["spec"].(map[string]any)
			delete(spec, "source")
			spec["sourceHydrator"] = hydratorSpec(team)
		})
		w.owned = append(w.owned, argocd.ParseWhole(w.home.Object(w.refs[team]).Content))
	}
}

// runSet runs unprune against the set world, with argocd-server at server when not empty (its URL
// shows in the golden files as {{ .ArgoCDServer }}).
func (w *setWorld) runSet(t *testing.T, server, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	g := newFactory(NameUnprune, streams)
	g.Now = w.now
	env := map[string]string{}
	if server != "" {
		env["ARGOCD_SERVER"], env["ARGOCD_AUTH_TOKEN"] = server, "token"
	}
	g.NewSession = func(cfg session.Config) session.Session {
		base := sessiontest.Factory(w.argo, env, w.rand)(cfg).(*sessiontest.Session)
		return setSession{Session: base, argo: setArgo{ArgoCD: w.argo, w: w}}
	}
	full := append([]string{"--kubeconfig", filepath.Join(w.dir, "no-kubeconfig"), "--journal-dir", w.journalDir()}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := execute(ctx, NameUnprune, newRootCommand(NameUnprune, g), full, streams)
	r := result{program: NameUnprune, stdin: stdin, stdout: out.String(), stderr: errOut.String(), code: code}
	if server != "" {
		r.stdout = strings.ReplaceAll(r.stdout, server, "{{ .ArgoCDServer }}")
		r.stderr = strings.ReplaceAll(r.stderr, server, "{{ .ArgoCDServer }}")
	}
	return r
}

// fakeServer is argocd-server's API as far as check asks it: its version, the generation of a set
// (generate answers it) and an app's manifests.
func fakeServer(t *testing.T, version string, generate func(set map[string]any) (int, any)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		write := func(code int, v any) {
			rw.WriteHeader(code)
			_ = json.NewEncoder(rw).Encode(v)
		}
		switch {
		case r.URL.Path == "/api/version":
			write(200, map[string]string{"Version": version})
		case r.URL.Path == "/api/v1/applicationsets/generate" && r.Method == "POST":
			body, _ := io.ReadAll(r.Body)
			var req struct {
				ApplicationSet map[string]any `json:"applicationSet"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				write(400, map[string]any{"message": err.Error(), "code": 3})
				return
			}
			write(generate(req.ApplicationSet))
		case r.URL.Path == "/api/v1/applications/guestbook/manifests" && r.URL.Query().Get("revision") == "main":
			write(200, map[string]any{"manifests": []string{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"guestbook-ui","namespace":"guestbook"}}`}})
		default:
			write(404, map[string]any{"message": "Not Found", "code": 5})
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// generatedBy renders a set the way Argo CD does for the fixture's list: one app per element.
func generatedBy(set map[string]any) (int, any) {
	parsed, err := appset.Parse(set)
	if err != nil {
		return 400, map[string]any{"message": err.Error(), "code": 3}
	}
	var apps []map[string]any
	for _, a := range appset.Evaluate(parsed, appset.Sources{}).Apps {
		apps = append(apps, a.Content)
	}
	return 200, map[string]any{"applications": apps}
}

func TestGoldenCheckFamily(t *testing.T) {
	writeSet := func(w *setWorld, set map[string]any) string {
		b, err := yaml.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		set    map[string]any
		params map[string]string
		args   []string
		server func(t *testing.T) string
		setup  func(w *setWorld)
	}{
		// The set stops generating payments: its cascade deletes its Namespace and the copy.
		{name: "check-set-drop", set: teamsSet("", "{{team}}", "search")},
		// The controller's policy wins over the set's create-only.
		{name: "check-set-controller-policy", set: teamsSet("  syncPolicy: {applicationsSync: create-only}", "{{team}}", "search"),
			params: map[string]string{appset.ParamPolicy: "sync"}},
		{name: "check-set-controller-override", set: teamsSet("  syncPolicy: {applicationsSync: create-only}", "{{team}}", "search"),
			params: map[string]string{appset.ParamPolicy: "sync", appset.ParamPolicyOverride: "true"}},
		// A rename under each policy gets the advice that deletes nothing under it.
		{name: "check-set-rename-sync", set: teamsSet("", "{{team}}-v2", "payments", "search")},
		{name: "check-set-rename-create-delete-markdown", set: teamsSet("  syncPolicy: {applicationsSync: create-delete}", "{{team}}-v2", "payments", "search"),
			args: []string{"-o", "markdown"}},
		{name: "check-set-rename-create-update", set: teamsSet("  syncPolicy: {applicationsSync: create-update}", "{{team}}-v2", "payments", "search")},
		// payments has a PostDelete hook: the set's deletion of it would run it; the advice names it
		// and how to delete the app without.
		{name: "check-set-rename-sync-delete-hooks", set: teamsSet("", "{{team}}-v2", "payments", "search"), setup: func(w *setWorld) { w.postDeleteHook("payments") }},
		// The set's apps render through the source hydrator from a Helm dry source: the advice says
		// that the new name's hydration, not any comparison before it, decides what is pruned.
		{name: "check-set-rename-source-hydrator", set: hydratorSet(teamsSet("", "{{team}}-v2", "payments", "search")), setup: func(w *setWorld) { w.hydrated() }},
		// Argo CD's own generation answers when argocd-server is named.
		{name: "check-set-argocd-json", set: teamsSet("", "{{team}}", "search"), args: []string{"-o", "json"},
			server: func(t *testing.T) string { return fakeServer(t, "v3.6.1+abc", generatedBy) }},
		{name: "check-set-argocd-fails", set: teamsSet("", "{{team}}", "search"),
			server: func(t *testing.T) string {
				return fakeServer(t, "v3.6.1+abc", func(map[string]any) (int, any) {
					return 500, map[string]any{"message": "unable to generate Applications of ApplicationSet: error generating params from git: repository not found\n(log)", "code": 2}
				})
			}},
		{name: "check-set-argocd-too-old", set: teamsSet("", "{{team}}", "search"),
			server: func(t *testing.T) string { return fakeServer(t, "v2.12.4", generatedBy) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSetWorld(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			if tc.params != nil {
				w.params = tc.params
			}
			server := ""
			if tc.server != nil {
				server = tc.server(t)
			}
			args := append([]string{"check", "applicationset/teams", "--manifests", "-"}, tc.args...)
			r := w.runSet(t, server, writeSet(w, tc.set), args...)
			golden(t, w.world, tc.name, r, args...)
		})
	}
	t.Run("check-revision-argocd", func(t *testing.T) {
		w := newWorld(t)
		server := fakeServer(t, "v3.6.1+abc", generatedBy)
		w.env["ARGOCD_SERVER"], w.env["ARGOCD_AUTH_TOKEN"] = server, "token"
		args := []string{"check", "guestbook", "--revision", "main"}
		r := runIn(t, w, NameUnprune, "", args...)
		r.stdout = strings.ReplaceAll(r.stdout, server, "{{ .ArgoCDServer }}")
		r.stderr = strings.ReplaceAll(r.stderr, server, "{{ .ArgoCDServer }}")
		golden(t, w, "check-revision-argocd", r, args...)
	})
}

// TestGoldenAuditNamespaceHoldsApps: a Namespace a prune would delete names the Applications in it.
func TestGoldenAuditNamespaceHoldsApps(t *testing.T) {
	w := newWorld(t)
	w.argo.AddApp(argocd.Application{Namespace: "team-a", Name: "payments", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "payments"}})
	args := []string{"audit", "guestbook", "-o", "jsonpath={.items[1].resource.name}: {.items[1].notes}"}
	golden(t, w, "audit-namespace-holds-apps", runIn(t, w, NameUnprune, "", args...), args...)
}

// TestGoldenScanAllNamespaces: -A lists the Applications Argo CD reconciles — its own namespace's,
// and those of the namespaces application.namespaces names — and says how many it left out.
func TestGoldenScanAllNamespaces(t *testing.T) {
	w := newSetWorld(t)
	w.params = map[string]string{argocd.ParamAppNamespaces: "team-*"}
	for _, ns := range []string{"team-a", "elsewhere"} {
		w.argo.AddApp(argocd.Application{Namespace: ns, Name: "payments", Project: "default", SyncStatus: "Synced",
			Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "payments"}})
	}
	args := []string{"scan", "-A", "-o", "jsonpath={.summary.applicationsScanned}"}
	golden(t, w.world, "scan-all-namespaces-reconciled", w.runSet(t, "", "", args...), args...)
}

// TestGoldenApproveApplicationSet: `guard approve SET --applicationset` approves, by UID, the
// Applications the set's controller asked to delete within the budget's window (as the webhook
// recorded them on the set) that still exist: payments. search's ask is older than the window;
// billing's Application is gone. The preview changes nothing; --yes writes the approval on the set.
func TestGoldenApproveApplicationSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "guard-approve-applicationset", args: []string{"guard", "approve", "teams", "--applicationset", "-n", "argocd"}},
		{name: "guard-approve-applicationset-yes", args: []string{"guard", "approve", "teams", "--applicationset", "-n", "argocd", "--yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSetWorld(t)
			w.home.Serve(clustertest.ArgoCDKinds[2])
			setRef := w.home.Add("argoproj.io", "ApplicationSet", "argocd", "teams", nil, nil)
			for i, team := range []string{"payments", "search"} {
				w.owned[i].UID = w.home.Object(w.refs[team]).UID
			}
			asked := []budget.Asked{
				{Name: "payments", UID: w.owned[0].UID, At: goldenTime.Add(-5 * time.Minute), Counted: true},
				{Name: "search", UID: w.owned[1].UID, At: goldenTime.Add(-budget.AppSetWindow - time.Minute), Counted: true},
				{Name: "billing", UID: "uid-billing-gone", At: goldenTime.Add(-2 * time.Minute), Counted: true},
			}
			w.live["metadata"].(map[string]any)["annotations"] = map[string]any{budget.AnnotationAsked: budget.FormatAsked(asked)}
			r := w.runSet(t, "", "", tc.args...)
			golden(t, w.world, tc.name, r, tc.args...)
			got := w.home.Object(setRef).Annotations[budget.AnnotationApproved]
			want := ""
			if slices.Contains(tc.args, "--yes") {
				want = budget.FormatApproved([]string{w.owned[0].UID})
			}
			if got != want {
				t.Errorf("the set's %s is %q, want %q", budget.AnnotationApproved, got, want)
			}
		})
	}
}
