package extension

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/session/sessiontest"
)

const token = "s3cret-token"

var t0 = time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	home  *clustertest.Cluster
	argo  *clustertest.ArgoCD
	refs  map[string]cluster.Ref
	h     http.Handler
	store *journal.Store
	// requestedBy are who each journal store was asked for, in order.
	requestedBy []string
}

// newFixture is Argo CD with app guestbook stuck on team-a (no guard) and kube-system (immortal),
// and app platform, whose ConfigMap requires nothing; journals go to a file store in a temp dir
// (the ConfigMap store behaves the same: package cmstore's tests).
func newFixture(t *testing.T, tweaks ...func(*Config)) *fixture {
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, nil)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	argo := clustertest.NewArgoCD("argocd", home, s)
	argo.Now = func() time.Time { return t0.Add(2 * time.Second) }
	f := &fixture{t: t, home: home, argo: argo, refs: map[string]cluster.Ref{}}
	app := argocd.Application{Name: "guestbook", Project: "default", SyncStatus: "OutOfSync",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "guestbook"}}
	for _, ns := range []string{"kube-system", "team-a"} {
		id := argocd.TrackingID{Instance: "guestbook", Kind: "Namespace", Namespace: "guestbook", Name: ns}
		f.refs[ns] = home.Add("", "Namespace", "", ns, map[string]string{"team": "storage"}, map[string]string{argocd.AnnotationTrackingID: id.String(), "note": "keep me"})
		app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "Namespace", Name: ns, Status: "OutOfSync", RequiresPruning: true})
	}
	argo.AddApp(app)
	id := argocd.TrackingID{Instance: "platform", Kind: "ConfigMap", Namespace: "platform", Name: "settings"}
	f.refs["settings"] = home.Add("", "ConfigMap", "platform", "settings", nil, map[string]string{argocd.AnnotationTrackingID: id.String()})
	argo.AddApp(argocd.Application{Name: "platform", Project: "infra", SyncStatus: "Synced", Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "platform"},
		Resources: []argocd.Resource{{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "settings", Status: "Synced"}}})
	sess := &sessiontest.Session{Argo: argo, Config: session.Config{Now: func() time.Time { return t0 }}, Env: map[string]string{}, Rand: sessiontest.Counter()}
	f.store = journal.NewStore(filepath.Join(t.TempDir(), "journal"), func() time.Time { return t0 })
	f.store.Rand = sessiontest.Counter()
	cfg := Config{Session: sess, Journals: func(by string) *journal.Store {
		f.requestedBy = append(f.requestedBy, by)
		return f.store
	}, Token: token, ToolVersion: "v0.0.0-test",
		UndoCommand: func(id string) string { return "unprune undo --journal-dir configmaps:unprune " + id + " --yes" }, Now: func() time.Time { return t0 }}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	h, err := Handler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// call sends a request as argocd-server's proxy would for app (NAMESPACE:NAME) and decodes the answer.
func (f *fixture) call(method, path, app string, body any, into any, headers ...string) int {
	f.t.Helper()
	var r *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	} else {
		r = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, APIPrefix+path, r)
	req.Header.Set(HeaderToken, token)
	req.Header.Set(HeaderApplication, app)
	req.Header.Set(HeaderUsername, "admin")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, rec.Code, rec.Body, err)
		}
	}
	return rec.Code
}

func TestOnlyThroughArgoCDsProxy(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		headers []string
		want    int
		reason  string
	}{
		{"no token", []string{HeaderToken, ""}, http.StatusUnauthorized, "Unauthorized"},
		{"wrong token", []string{HeaderToken, "guess"}, http.StatusUnauthorized, "Unauthorized"},
		{"no app", []string{HeaderApplication, ""}, http.StatusBadRequest, "BadRequest"},
		{"another installation", []string{HeaderNamespace, "argocd-other"}, http.StatusBadRequest, "OtherInstallation"},
		{"another project", []string{HeaderProject, "infra"}, http.StatusBadRequest, "ProjectMismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e printer.UIError
			if got := f.call("GET", "/application", "argocd:guestbook", nil, &e, tc.headers...); got != tc.want || e.Reason != tc.reason {
				t.Fatalf("got %d %+v, want %d %s", got, e, tc.want, tc.reason)
			}
		})
	}
	if _, err := Handler(Config{Session: &sessiontest.Session{}, Journals: func(string) *journal.Store { return f.store }}); err == nil {
		t.Fatal("a backend without a token must not start")
	}
}

func TestApplicationAnswer(t *testing.T) {
	f := newFixture(t)
	var a printer.UIApplication
	if code := f.call("GET", "/application", "argocd:guestbook", nil, &a); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if a.Summary != (printer.UISummary{RequiresPruning: 2, HighRisk: 2, Unguarded: 1, UnguardedHighRisk: 1}) {
		t.Fatalf("summary %+v", a.Summary)
	}
	// High risk first, the unguarded before the guarded.
	if len(a.Items) != 2 || a.Items[0].Resource.Name != "team-a" || a.Items[0].Guarded || a.Items[1].Resource.Name != "kube-system" || !a.Items[1].Guarded {
		t.Fatalf("items %+v", a.Items)
	}
	if g := a.Items[1].Guards; len(g) != 1 || g[0].Name != "ImmortalNamespace" || !g[0].Hard {
		t.Fatalf("kube-system's guards %+v", g)
	}
	if a.Cascade.Finalizer != "" || len(a.Cascade.HighRisk) != 0 {
		t.Fatalf("an app without a resources finalizer cascades into nothing: %+v", a.Cascade)
	}
}

func TestResourceOfAnotherAppIsRefused(t *testing.T) {
	f := newFixture(t)
	var e printer.UIError
	if code := f.call("GET", "/resource?kind=ConfigMap&namespace=platform&name=settings", "argocd:guestbook", nil, &e); code != http.StatusNotFound || e.Reason != "NotInApplication" {
		t.Fatalf("got %d %+v", code, e)
	}
}

// A release: the plan and its diff, the journal written before the patch, the patch the browser
// sends through argocd-server, and the journal completed from what the object then shows.
func TestRelease(t *testing.T) {
	f := newFixture(t)
	var ans printer.UIResource
	if code := f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	p := ans.Release
	if p.Outcome != "Planned" || len(p.Changes) != 1 || p.Changes[0].Key != argocd.AnnotationTrackingID || p.Changes[0].After != nil {
		t.Fatalf("plan %+v", p)
	}
	if !strings.Contains(p.Diff, `-    argocd.argoproj.io/tracking-id: "guestbook:/Namespace:guestbook/team-a"`) || !strings.Contains(p.Diff, `     note: "keep me"`) {
		t.Fatalf("diff:\n%s", p.Diff)
	}
	if ans.Item.Risk != "High" || ans.Item.Guarded {
		t.Fatalf("item %+v", ans.Item)
	}

	// A plan previewed at another resourceVersion is not sent: the user reviews the new one.
	var e printer.UIError
	req := printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: "0", ArgoCDServer: "https://argocd.example.com"}
	if code := f.call("POST", "/releases", "argocd:guestbook", req, &e); code != http.StatusConflict || e.Reason != "ChangedSincePreview" {
		t.Fatalf("stale preview: %d %+v", code, e)
	}
	if sums, _ := f.store.List(); len(sums) != 0 {
		t.Fatalf("a refused release wrote a journal: %+v", sums)
	}

	req.ResourceVersion = p.ResourceVersion
	var started printer.UIReleaseStarted
	if code := f.call("POST", "/releases", "argocd:guestbook", req, &started); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	j, _, err := f.store.Load(started.Journal.Path)
	if err != nil {
		t.Fatal(err)
	}
	if e := j.Entries[0]; e.State != journal.StatePlanned || e.Object.UID == "" || len(e.Changes) != 1 || j.Clusters[0].Via != cluster.ViaArgoCDAPI || j.Clusters[0].ArgoCDServer != "https://argocd.example.com" {
		t.Fatalf("journal before the patch: %+v %+v", j.Clusters, e)
	}
	pr := started.Patch
	if pr.Method != "POST" || pr.Path != "/api/v1/applications/guestbook/resource" || pr.Query["kind"] != "Namespace" || pr.Query["resourceName"] != "team-a" ||
		pr.Query["patchType"] != "application/merge-patch+json" || pr.Query["appNamespace"] != "argocd" || pr.Query["project"] != "default" {
		t.Fatalf("patch request %+v", pr)
	}
	if !strings.Contains(started.Journal.UndoCommand, j.ID) {
		t.Fatalf("undo command %q", started.Journal.UndoCommand)
	}
	var patch string
	if err := json.Unmarshal([]byte(pr.Body), &patch); err != nil {
		t.Fatalf("the body is argocd-server's patch field, a JSON string: %v", err)
	}
	want := `{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":null},"resourceVersion":"` + p.ResourceVersion + `"}}`
	if patch != want {
		t.Fatalf("patch %s, want %s", patch, want)
	}

	// What argocd-server does with it: the merge patch, on the live object.
	if _, err := f.home.Patch(t.Context(), f.refs["team-a"], []byte(patch), false); err != nil {
		t.Fatal(err)
	}
	var res printer.UIReleaseResult
	if code := f.call("POST", "/releases/"+j.ID+"/result", "argocd:guestbook", printer.UISent{Status: 200}, &res); code != http.StatusOK || res.State != "applied" {
		t.Fatalf("result %d %+v", code, res)
	}
	// Another app's header cannot read or complete it.
	if code := f.call("GET", "/releases/"+j.ID, "argocd:platform", nil, &e); code != http.StatusForbidden || e.Reason != "OtherApplication" {
		t.Fatalf("another app: %d %+v", code, e)
	}
	var list printer.UIJournalList
	if code := f.call("GET", "/journals", "argocd:guestbook", nil, &list); code != http.StatusOK || len(list.Items) != 1 || list.Items[0].Entries[0].State != "applied" {
		t.Fatalf("journals %d %+v", code, list)
	}
	if f.call("GET", "/journals", "argocd:platform", nil, &list); len(list.Items) != 0 {
		t.Fatalf("platform sees guestbook's journals: %+v", list)
	}
}

// Argo CD refused the patch (the viewer): the journal says failed, with no change left to undo.
func TestRefusedRelease(t *testing.T) {
	f := newFixture(t)
	var ans printer.UIResource
	f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
	var started printer.UIReleaseStarted
	if code := f.call("POST", "/releases", "argocd:guestbook", printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: ans.Release.ResourceVersion}, &started); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	var res printer.UIReleaseResult
	f.call("POST", "/releases/"+started.Journal.ID+"/result", "argocd:guestbook", printer.UISent{Status: 403, Message: "permission denied"}, &res)
	if res.State != "failed" || !strings.Contains(res.Message, "Argo CD's RBAC refused the patch (permission denied)") {
		t.Fatalf("result %+v", res)
	}
	j, _, _ := f.store.Load(started.Journal.Path)
	if e := j.Entries[0]; e.State != journal.StateFailed || len(e.Changes) != 0 {
		t.Fatalf("entry %+v", e)
	}
	if got := f.home.Object(f.refs["team-a"]).Annotations[argocd.AnnotationTrackingID]; got == "" {
		t.Fatal("the tracking is gone although Argo CD refused the patch")
	}
}

// The other way to keep a resource requiring pruning: Prune=confirm merged into its sync-options
// (guard confirm's plan), journaled and sent as a release is; the row then shows the guard.
func TestConfirm(t *testing.T) {
	f := newFixture(t)
	var ans printer.UIResource
	f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
	c := ans.Confirm
	if c.Outcome != "Planned" || len(c.Changes) != 1 || c.Changes[0].Key != argocd.AnnotationSyncOptions || c.Changes[0].After == nil || *c.Changes[0].After != "Prune=confirm" {
		t.Fatalf("confirm plan %+v", c)
	}
	var started printer.UIReleaseStarted
	if code := f.call("POST", "/guards", "argocd:guestbook", printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: c.ResourceVersion}, &started); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	j, _, err := f.store.Load(started.Journal.Path)
	if err != nil || j.Command != "guard" || j.Strategy != "confirm" || j.Entries[0].Application == nil {
		t.Fatalf("journal %+v %v", j, err)
	}
	var patch string
	if err := json.Unmarshal([]byte(started.Patch.Body), &patch); err != nil {
		t.Fatal(err)
	}
	if _, err := f.home.Patch(t.Context(), f.refs["team-a"], []byte(patch), false); err != nil {
		t.Fatal(err)
	}
	var res printer.UIReleaseResult
	if code := f.call("POST", "/guards/"+j.ID+"/result", "argocd:guestbook", printer.UISent{Status: 200}, &res); code != http.StatusOK || res.State != "applied" {
		t.Fatalf("result %d %+v", code, res)
	}
	f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
	if !ans.Item.Guarded || ans.Item.Guards[0].Name != "PruneConfirm" || ans.Confirm.Outcome != "Unchanged" {
		t.Fatalf("after the guard: %+v %+v", ans.Item, ans.Confirm)
	}
	// A resource git still holds gets its sync-options from git: the UI does not guard it.
	var e printer.UIError
	if code := f.call("POST", "/guards", "argocd:platform", printer.UIReleaseRequest{Resource: printer.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "settings"}, ResourceVersion: "1"}, &e); code != http.StatusNotFound || e.Reason != "NotRequiringPruning" {
		t.Fatalf("a Synced row: %d %+v", code, e)
	}
}

// The undo of a UI release: planned by the engine's undo, sent by the browser, marked undone from
// what the object shows, and the journal list says so.
func TestUndoOfARelease(t *testing.T) {
	f := newFixture(t)
	var ans printer.UIResource
	f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
	var started printer.UIReleaseStarted
	f.call("POST", "/releases", "argocd:guestbook", printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: ans.Release.ResourceVersion}, &started)
	var patch string
	_ = json.Unmarshal([]byte(started.Patch.Body), &patch)
	if _, err := f.home.Patch(t.Context(), f.refs["team-a"], []byte(patch), false); err != nil {
		t.Fatal(err)
	}
	var res printer.UIReleaseResult
	f.call("POST", "/releases/"+started.Journal.ID+"/result", "argocd:guestbook", printer.UISent{Status: 200}, &res)
	var undo printer.UIUndo
	if code := f.call("POST", "/journals/"+started.Journal.ID+"/undo", "argocd:guestbook", nil, &undo); code != http.StatusOK || len(undo.Items) != 1 || undo.Items[0].Patch == nil {
		t.Fatalf("undo plan %d %+v", code, undo)
	}
	if err := json.Unmarshal([]byte(undo.Items[0].Patch.Body), &patch); err != nil {
		t.Fatal(err)
	}
	if _, err := f.home.Patch(t.Context(), f.refs["team-a"], []byte(patch), false); err != nil {
		t.Fatal(err)
	}
	var done printer.UIUndoResult
	if code := f.call("POST", "/journals/"+started.Journal.ID+"/undo/result", "argocd:guestbook", printer.UIUndoSent{Entry: 0, UISent: printer.UISent{Status: 200}}, &done); code != http.StatusOK || done.State != "undone" {
		t.Fatalf("undo result %d %+v", code, done)
	}
	var list printer.UIJournalList
	f.call("GET", "/journals", "argocd:guestbook", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Entries[0].State != "undone" {
		t.Fatalf("journals after the undo: %+v", list.Items)
	}
	if got := f.home.Object(f.refs["team-a"]).Annotations[argocd.AnnotationTrackingID]; got != "guestbook:/Namespace:guestbook/team-a" {
		t.Fatalf("tracking after the undo: %q", got)
	}
}

// TestReleaseRecordsTheRequester: the journal of a release is asked for as the user argocd-server
// named, with its id, and without the groups header a local account cannot have.
func TestReleaseRecordsTheRequester(t *testing.T) {
	f := newFixture(t)
	var ans printer.UIResource
	if code := f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	req := printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: ans.Release.ResourceVersion, ArgoCDServer: "https://argocd.example.com"}
	if code := f.call("POST", "/releases", "argocd:guestbook", req, nil, HeaderUsername, "alice", HeaderUserID, "alice", HeaderGroups, "admins"); code != http.StatusOK {
		t.Fatalf("release: %d", code)
	}
	if len(f.requestedBy) == 0 || f.requestedBy[len(f.requestedBy)-1] != "alice" {
		t.Errorf("journals asked for %q, want alice without the groups a client sent", f.requestedBy)
	}
}

// TestRequester: what a journal records of who asked, from argocd-server's headers.
func TestRequester(t *testing.T) {
	for _, tc := range []struct {
		name, username, id, groups, want string
	}{
		{"an SSO user on v3.2+", "jane@example.com", "CiQ0NjE", "platform,sre", "jane@example.com (id CiQ0NjE) (groups platform,sre)"},
		{"a local account on v3.2+: groups only a client could have sent", "alice", "alice", "admins", "alice"},
		{"a local account without groups", "admin", "admin", "", "admin"},
		{"before v3.2: no id", "jane@example.com", "", "platform", "jane@example.com (groups platform)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requester(tc.username, tc.id, tc.groups); got != tc.want {
				t.Errorf("requester(%q, %q, %q) = %q, want %q", tc.username, tc.id, tc.groups, got, tc.want)
			}
		})
	}
}

// TestJournalsAreBounded: every user who may invoke the extension can start a release (a viewer's is
// journaled, as refused), so the backend stops writing journals at its bounds — for one app, and
// in all — and says what to do, changing nothing.
func TestJournalsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		total, perApp int
		want          string
	}{
		{"per app", 10, 2, "Application argocd/guestbook has 2 journals of UI releases"},
		{"in total", 2, 10, "holds 2 journals, the most this backend writes (2 in all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *Config) { c.MaxJournals, c.MaxJournalsPerApp = tc.total, tc.perApp })
			var ans printer.UIResource
			f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
			req := printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: ans.Release.ResourceVersion}
			for i := range 2 {
				var started printer.UIReleaseStarted
				if code := f.call("POST", "/releases", "argocd:guestbook", req, &started); code != http.StatusOK {
					t.Fatalf("release %d: status %d", i, code)
				}
			}
			var e printer.UIError
			if code := f.call("POST", "/releases", "argocd:guestbook", req, &e); code != http.StatusTooManyRequests || e.Reason != "TooManyJournals" || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("the third release: %d %+v; want 429 saying %q", code, e, tc.want)
			}
			if sums, err := f.store.List(); err != nil || len(sums) != 2 {
				t.Fatalf("journals after the refusal: %d %v", len(sums), err)
			}
		})
	}
	if _, err := Handler(Config{Session: &sessiontest.Session{}, Journals: func(string) *journal.Store { return nil }, Token: token, MaxJournals: -1}); err == nil {
		t.Error("a negative bound is accepted")
	}
}

// TestTokenFollowsItsFile: the kubelet replaces a mounted Secret's file when the Secret changes; the
// backend then accepts the new token and refuses the old one, without a restart. A file emptied
// on the way keeps the token read before.
func TestTokenFollowsItsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	replace := func(value string) {
		t.Helper()
		next := filepath.Join(dir, "token.next")
		if err := os.WriteFile(next, []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, file); err != nil {
			t.Fatal(err)
		}
	}
	replace("first\n")
	f := newFixture(t, func(c *Config) { c.Token, c.TokenFile = "", file })
	status := func(tok string) int {
		var e printer.UIError
		return f.call("GET", "/application", "argocd:guestbook", nil, &e, HeaderToken, tok)
	}
	if got := status("first"); got != http.StatusOK {
		t.Fatalf("the file's token: %d", got)
	}
	replace("second\n")
	if got := status("first"); got != http.StatusUnauthorized {
		t.Errorf("the old token after the rotation: %d, want 401", got)
	}
	if got := status("second"); got != http.StatusOK {
		t.Errorf("the new token: %d", got)
	}
	replace("")
	if got := status("second"); got != http.StatusOK {
		t.Errorf("the token read before, the file emptied: %d", got)
	}
	if _, err := Handler(Config{Session: &sessiontest.Session{}, Journals: func(string) *journal.Store { return nil }, TokenFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a backend whose token file is missing starts")
	}
}

// TestNoJournalsInArgoCDsNamespace: a backend whose journals would go to Argo CD's namespace (Argo
// CD's found at run time, not named by a flag) writes none there and says why.
func TestNoJournalsInArgoCDsNamespace(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.JournalNamespace = "argocd" })
	var ans printer.UIResource
	f.call("GET", "/resource?kind=Namespace&name=team-a", "argocd:guestbook", nil, &ans)
	var e printer.UIError
	req := printer.UIReleaseRequest{Resource: ans.Item.Resource, ResourceVersion: ans.Release.ResourceVersion}
	if code := f.call("POST", "/releases", "argocd:guestbook", req, &e); code != http.StatusInternalServerError || e.Reason != "JournalsInArgoCDNamespace" {
		t.Fatalf("%d %+v", code, e)
	}
	if sums, _ := f.store.List(); len(sums) != 0 {
		t.Fatalf("journals written: %+v", sums)
	}
}

// An app deploying to another cluster: a backend that reaches only Argo CD's cluster says so
// plainly (the answer's first warning, the row's live error, the release's failure), and one
// installed to reach it (RemoteDestinations) reads it like any other.
func TestRemoteDestination(t *testing.T) {
	const server = "https://prod.example:6443"
	remoteApp := func(f *fixture) {
		prod := clustertest.NewCluster("prod", server)
		f.argo.Remote[server] = prod
		id := argocd.TrackingID{Instance: "shop", Kind: "Namespace", Namespace: "shop", Name: "orders"}
		prod.Add("", "Namespace", "", "orders", nil, map[string]string{argocd.AnnotationTrackingID: id.String()})
		prod.Add("", "ConfigMap", "orders", "data", nil, nil)
		f.argo.AddApp(argocd.Application{Name: "shop", Project: "default", SyncStatus: "OutOfSync",
			Destination: argocd.Destination{Server: server, Namespace: "shop"},
			Resources:   []argocd.Resource{{Version: "v1", Kind: "Namespace", Name: "orders", Status: "OutOfSync", RequiresPruning: true}}})
	}
	t.Run("not reached", func(t *testing.T) {
		f := newFixture(t)
		remoteApp(f)
		var a printer.UIApplication
		if code := f.call("GET", "/application", "argocd:shop", nil, &a); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		want := "Application argocd/shop deploys to cluster " + server
		if len(a.Warnings) == 0 || !strings.Contains(a.Warnings[0], want) || !strings.Contains(a.Warnings[0], "deploy/ui-extension/remote-clusters") {
			t.Fatalf("warnings %q, want first %q … deploy/ui-extension/remote-clusters", a.Warnings, want)
		}
		if len(a.Items) != 1 || !strings.Contains(a.Items[0].LiveError, "reads only the cluster Argo CD runs in") || strings.Contains(a.Items[0].LiveError, "--") {
			t.Fatalf("items %+v: want the plain reason, no flag", a.Items)
		}
		var e printer.UIError
		if code := f.call("GET", "/resource?version=v1&kind=Namespace&name=orders", "argocd:shop", nil, &e); code != http.StatusBadGateway || !strings.Contains(e.Message, "reads only the cluster Argo CD runs in") {
			t.Fatalf("release plan: %d %+v", code, e)
		}
		// An in-cluster app of the same backend is read as ever.
		var home printer.UIApplication
		if code := f.call("GET", "/application", "argocd:guestbook", nil, &home); code != http.StatusOK || len(home.Warnings) != 0 || home.Items[0].LiveError != "" {
			t.Fatalf("the in-cluster app: %d %+v", code, home)
		}
	})
	t.Run("reached", func(t *testing.T) {
		f := newFixture(t, func(c *Config) { c.RemoteDestinations = true })
		remoteApp(f)
		var a printer.UIApplication
		if code := f.call("GET", "/application", "argocd:shop", nil, &a); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		if len(a.Warnings) != 0 || len(a.Items) != 1 || a.Items[0].LiveError != "" {
			t.Fatalf("answer %+v", a)
		}
		var r printer.UIResource
		if code := f.call("GET", "/resource?version=v1&kind=Namespace&name=orders", "argocd:shop", nil, &r); code != http.StatusOK || r.Release.Outcome != "Planned" {
			t.Fatalf("release plan: %d %+v", code, r)
		}
	})
}
