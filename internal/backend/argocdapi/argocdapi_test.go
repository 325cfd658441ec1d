package argocdapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// request is what the fake argocd-server received.
type request struct {
	Method, Path string
	Query        url.Values
	Body         string
	Auth         string
}

// server is an argocd-server on 127.0.0.1 answering from a table of canned responses, by method
// and path, and recording every request.
type server struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []request
	// answers maps "METHOD /path" to a status and a JSON body.
	answers map[string]answer
}

type answer struct {
	status int
	body   string
}

func newServer(t *testing.T, answers map[string]answer) *server {
	s := &server{t: t, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: string(body), Auth: r.Header.Get("Authorization")})
		s.mu.Unlock()
		a, ok := s.answers[r.Method+" "+r.URL.Path]
		if !ok {
			a = answer{http.StatusNotFound, `{"error":"no route","code":5,"message":"no route"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) argocd(t *testing.T) *ArgoCD {
	t.Helper()
	c, err := Connect(Options{Server: s.srv.URL, AuthToken: "t0ken", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return NewArgoCD(c, "argocd")
}

func (s *server) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func TestSettingsFromTheSettingsEndpoint(t *testing.T) {
	s := newServer(t, map[string]answer{
		"GET /api/v1/settings": {200, `{"appLabelKey":"team.example/app","trackingMethod":"annotation","installationID":"prod","controllerNamespace":"gitops"}`},
		"GET /api/version":     {200, `{"Version":"v3.0.23+3c3dbb3"}`},
	})
	a := s.argocd(t)
	if a.NamespaceSettled() {
		t.Errorf("namespace %q settled before the settings were read: a read defaulting to it would ask the wrong namespace", a.Namespace())
	}
	got, err := a.Settings(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.NamespaceSettled() {
		t.Errorf("namespace not settled after the settings were read")
	}
	if got.Method != argocd.MethodAnnotation || got.InstanceLabelKey != "team.example/app" || got.InstallationID != "prod" {
		t.Errorf("settings = %+v", got.Settings)
	}
	if got.Version == nil || got.Version.String() != "v3.0.23" {
		t.Errorf("version = %v, want v3.0.23", got.Version)
	}
	if len(got.Warnings) != 0 {
		t.Errorf("warnings = %q", got.Warnings)
	}
	if a.Namespace() != "gitops" {
		t.Errorf("namespace = %q: the server's controller namespace wins over the fallback", a.Namespace())
	}
	for _, r := range s.requests() {
		if r.Auth != "Bearer t0ken" {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, r.Auth)
		}
	}
}

func TestSettingsWithoutAVersionWarn(t *testing.T) {
	s := newServer(t, map[string]answer{"GET /api/v1/settings": {200, `{}`}})
	got, err := s.argocd(t).Settings(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != nil || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "version unknown") {
		t.Errorf("version %v, warnings %q: want no version and one warning", got.Version, got.Warnings)
	}
	if a := s.argocd(t); a.Namespace() != "argocd" {
		t.Errorf("namespace = %q, want the fallback", a.Namespace())
	}
}

func TestListApplicationsSendsTheSelection(t *testing.T) {
	s := newServer(t, map[string]answer{
		"GET /api/v1/applications": {200, `{"items":[{"metadata":{"name":"guestbook","namespace":"argocd"},"spec":{"project":"default","destination":{"server":"https://kubernetes.default.svc"}},"status":{"sync":{"status":"OutOfSync"},"resources":[{"version":"v1","kind":"Namespace","name":"team-a","status":"OutOfSync","requiresPruning":true}]}}]}`},
	})
	apps, err := s.argocd(t).ListApplications(context.Background(), cluster.Selector{Namespace: "team-apps", LabelSelector: "tier=web", Projects: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].Name != "guestbook" || len(apps[0].Pruning()) != 1 {
		t.Fatalf("apps = %+v", apps)
	}
	q := s.requests()[0].Query
	if q.Get("appNamespace") != "team-apps" || q.Get("selector") != "tier=web" || strings.Join(q["projects"], ",") != "a,b" {
		t.Errorf("query = %v", q)
	}
}

func TestRefreshKeepsAPendingHardRefresh(t *testing.T) {
	s := newServer(t, map[string]answer{
		"GET /api/v1/applications/guestbook": {200, `{"metadata":{"name":"guestbook","namespace":"argocd"}}`},
		"GET /api/v1/applications/pending":   {200, `{"metadata":{"name":"pending","namespace":"argocd","annotations":{"argocd.argoproj.io/refresh":"hard"}}}`},
	})
	a := s.argocd(t)
	// Nothing pending: the app is read, then a normal refresh asked for.
	if err := a.Refresh(context.Background(), argocd.Application{Namespace: "argocd", Name: "guestbook"}, false); err != nil {
		t.Fatal(err)
	}
	// A hard refresh pending on the server, though the caller's copy says none: kept hard.
	if err := a.Refresh(context.Background(), argocd.Application{Namespace: "argocd", Name: "pending"}, false); err != nil {
		t.Fatal(err)
	}
	// The caller knows of one: no read needed.
	if err := a.Refresh(context.Background(), argocd.Application{Namespace: "argocd", Name: "guestbook", Refresh: "hard"}, false); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.requests() {
		got = append(got, r.Query.Get("refresh"))
	}
	if want := []string{"", "normal", "", "hard", "hard"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("refresh kinds sent = %q, want %q", got, want)
	}
}

// liveManifest is a live object as Argo CD's resource endpoint returns it: a JSON string.
const liveManifest = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"team-a","uid":"u-1","resourceVersion":"42",` +
	`"labels":{"app.kubernetes.io/instance":"guestbook"},"annotations":{"note":"keep me"},` +
	`"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"owner","uid":"u-0"}],` +
	`"managedFields":[{"manager":"argocd-controller","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]}}`

func TestObjectsReadAndPatchThroughTheResourceEndpoint(t *testing.T) {
	body, _ := json.Marshal(map[string]string{"manifest": liveManifest})
	s := newServer(t, map[string]answer{
		"GET /api/v1/applications/guestbook/resource":  {200, string(body)},
		"POST /api/v1/applications/guestbook/resource": {200, string(body)},
	})
	app := argocd.Application{Namespace: "argocd", Name: "guestbook", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer},
		Resources:   []argocd.Resource{{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"}}}
	objects, err := s.argocd(t).Destination(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := objects.Resolve(context.Background(), "", "configmap", "", "team-a", "settings")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Version != "v1" || ref.Kind != "ConfigMap" {
		t.Fatalf("ref = %+v: the version and kind come from the app's status row", ref)
	}
	res := objects.Read(context.Background(), []cluster.Ref{ref})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	obj := res[0].Object
	if obj.UID != "u-1" || obj.ResourceVersion != "42" || obj.Labels["app.kubernetes.io/instance"] != "guestbook" ||
		len(obj.Owners) != 1 || obj.Owners[0] != "Secret/owner" || len(obj.ManagedFields) != 1 || obj.ManagedFields[0].Manager != "argocd-controller" {
		t.Errorf("object = %+v", obj)
	}
	patch := `{"metadata":{"resourceVersion":"42","labels":{"app.kubernetes.io/instance":null}}}`
	if _, err := objects.Patch(context.Background(), ref, []byte(patch), false); err != nil {
		t.Fatal(err)
	}
	sent := s.requests()[1]
	var got string
	if err := json.Unmarshal([]byte(sent.Body), &got); err != nil || got != patch {
		t.Errorf("body = %s: the patch goes as a JSON string (application.proto: body \"patch\")", sent.Body)
	}
	for k, want := range map[string]string{"patchType": "application/merge-patch+json", "namespace": "team-a", "resourceName": "settings",
		"version": "v1", "kind": "ConfigMap", "appNamespace": "argocd", "project": "default"} {
		if sent.Query.Get(k) != want {
			t.Errorf("query %s = %q, want %q", k, sent.Query.Get(k), want)
		}
	}
	if _, err := objects.Patch(context.Background(), ref, []byte(patch), true); !errors.Is(err, ErrNoDryRun) {
		t.Errorf("dry-run patch: %v, want ErrNoDryRun", err)
	}
	if n := len(s.requests()); n != 2 {
		t.Errorf("%d requests: a dry run must send nothing", n)
	}
}

func TestErrorsAreClassifiedLikeTheKubernetesAPIs(t *testing.T) {
	tests := []struct {
		status int
		body   string
		is     func(error) bool
		want   string
	}{
		{401, `{"error":"invalid session","code":16,"message":"invalid session: token is expired"}`, apierrors.IsUnauthorized, "Unauthorized"},
		{403, `{"code":7,"message":"permission denied: applications, get, default/guestbook"}`, isArgoCDDenied, "ArgoCDDenied"},
		{404, `{"code":5,"message":"applications.argoproj.io \"guestbook\" not found"}`, apierrors.IsNotFound, "NotFound"},
		{500, `{"code":2,"message":"Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version"}`, apierrors.IsConflict, "Conflict"},
		{500, `{"code":2,"message":"admission webhook \"deny.example\" denied the request"}`, apierrors.IsForbidden, "Forbidden (admission)"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			s := newServer(t, map[string]answer{"GET /api/v1/applications/guestbook": {tc.status, tc.body}})
			_, err := s.argocd(t).GetApplication(context.Background(), "argocd", "guestbook")
			if err == nil || !tc.is(err) {
				t.Errorf("err = %v (%T): want %s", err, errors.Unwrap(err), tc.want)
			}
		})
	}
}

func isArgoCDDenied(err error) bool {
	var d *cluster.ArgoCDDeniedError
	return errors.As(err, &d)
}

func TestAResourceNotOfTheAppSaysHowToReachIt(t *testing.T) {
	s := newServer(t, map[string]answer{"GET /api/v1/applications/guestbook/resource": {404,
		`{"code":5,"message":"ConfigMap team-a/settings not found as part of application guestbook"}`}})
	objects, _ := s.argocd(t).Destination(context.Background(), argocd.Application{Namespace: "argocd", Name: "guestbook",
		Destination: argocd.Destination{Name: "prod"}})
	_, err := objects.Get(context.Background(), cluster.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "settings"})
	if err == nil || !strings.Contains(err.Error(), "reach its cluster prod with your kubeconfig instead") || !apierrors.IsNotFound(err) {
		t.Errorf("err = %v: want the way out, still a NotFound", err)
	}
}

func TestReachAndApplicationWritesAreRefused(t *testing.T) {
	s := newServer(t, nil)
	a := s.argocd(t)
	if _, err := a.Reach(context.Background(), argocd.Destination{Name: "prod"}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("Reach: %v, want ErrUnsupported", err)
	}
	if err := a.DeleteApplication(context.Background(), "argocd", "guestbook", "u", "1", false); err == nil {
		t.Error("DeleteApplication through the API must be refused: it has no preconditions")
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("%d requests sent for refused operations", n)
	}
}

func TestConnectReadsTheArgoCDCLIsConfig(t *testing.T) {
	dir := t.TempDir()
	config := `current-context: lab
contexts:
- name: lab
  server: 127.0.0.1:8080
  user: lab-admin
- name: other
  server: 127.0.0.2:8080
  user: other
servers:
- server: 127.0.0.1:8080
  plain-text: true
users:
- name: lab-admin
  auth-token: from-config
- name: other
  auth-token: other-token
`
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ARGOCD_CONFIG_DIR": dir}
	c, err := Connect(Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if c.base.String() != "http://127.0.0.1:8080" || c.token != "from-config" {
		t.Errorf("base %s token %s: want the current context's server over plain HTTP and its user's token", c.base, c.token)
	}
	env["ARGOCD_AUTH_TOKEN"] = "from-env"
	if c, err = Connect(Options{Context: "other", Getenv: func(k string) string { return env[k] }}); err != nil {
		t.Fatal(err)
	}
	if c.base.String() != "https://127.0.0.2:8080" || c.token != "from-env" {
		t.Errorf("base %s token %s: want the named context's server and the environment's token", c.base, c.token)
	}
	if _, err := Connect(Options{Context: "missing", Getenv: func(k string) string { return env[k] }}); err == nil || !strings.Contains(err.Error(), `no context "missing"`) {
		t.Errorf("unknown context: %v", err)
	}
}
