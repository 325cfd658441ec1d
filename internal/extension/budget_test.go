package extension

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/printer"
)

// TestApprove: the budget view lists what the app's next sync with prune deletes, by UID, with the
// project's budget; the approval of exactly those is journaled and is a patch of the Application
// itself through argocd-server's app API, applied once the Application shows it. An approval of
// other UIDs than Argo CD's comparison shows now is refused.
func TestApprove(t *testing.T) {
	f := newFixture(t)
	f.home.Serve(clustertest.ArgoCDKinds...)
	appRef := f.home.Add("argoproj.io", "Application", "argocd", "guestbook", nil, map[string]string{"keep": "me"})
	f.home.Add("argoproj.io", "AppProject", "argocd", "default", nil, map[string]string{budget.AnnotationBudget: "1"})

	var ans printer.UIApplication
	if code := f.call("GET", "/application", "argocd:guestbook", nil, &ans); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	b := ans.Budget
	if b.Limit == nil || *b.Limit != 1 || !strings.Contains(b.Source, "project default") || b.Operation != "its next sync with prune deletes" || len(b.Pending) != 2 {
		t.Fatalf("budget %+v", b)
	}
	var uids []string
	for _, p := range b.Pending {
		if p.UID == "" || p.Approved {
			t.Fatalf("pending %+v", p)
		}
		uids = append(uids, p.UID)
	}

	var e printer.UIError
	if code := f.call("POST", "/approvals", "argocd:guestbook", printer.UIApproveRequest{UIDs: uids[:1]}, &e); code != http.StatusConflict || e.Reason != "ChangedSincePreview" {
		t.Fatalf("approving one of two: %d %+v", code, e)
	}
	var started printer.UIReleaseStarted
	if code := f.call("POST", "/approvals", "argocd:guestbook", printer.UIApproveRequest{UIDs: uids, ArgoCDServer: "https://argocd.example"}, &started); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	j, _, err := f.store.Load(started.Journal.Path)
	if err != nil || j.Command != "guard" || j.Strategy != "approve" || j.Entries[0].Object.Kind != "Application" || j.Entries[0].Application == nil {
		t.Fatalf("journal %+v %v", j, err)
	}
	p := started.Patch
	if p.Method != "PATCH" || p.Path != "/api/v1/applications/guestbook" {
		t.Fatalf("patch %+v: want the Application's own API", p)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(p.Body), &body); err != nil || body["appNamespace"] != "argocd" || body["patchType"] != "merge" || body["project"] != "default" {
		t.Fatalf("body %s: %v", p.Body, err)
	}
	if !strings.Contains(body["patch"], budget.AnnotationApproved) || !strings.Contains(body["patch"], uids[0]) || !strings.Contains(body["patch"], uids[1]) {
		t.Fatalf("patch %s", body["patch"])
	}
	// What argocd-server does with it: merge the patch into the app.
	if _, err := f.home.Patch(t.Context(), appRef, []byte(body["patch"]), false); err != nil {
		t.Fatal(err)
	}
	var res printer.UIReleaseResult
	if code := f.call("POST", "/approvals/"+j.ID+"/result", "argocd:guestbook", printer.UISent{Status: 200}, &res); code != http.StatusOK || res.State != "applied" {
		t.Fatalf("result %d %+v", code, res)
	}
	live, err := f.home.Get(t.Context(), appRef)
	if err != nil || live.Annotations["keep"] != "me" || len(budget.Approved(live.Annotations)) != 2 {
		t.Fatalf("the Application after the approval: %+v %v", live, err)
	}

	// Nothing to approve where the comparison shows no deletion.
	if code := f.call("POST", "/approvals", "argocd:platform", printer.UIApproveRequest{}, &e); code != http.StatusConflict || e.Reason != "NothingToApprove" {
		t.Fatalf("an app with nothing to prune: %d %+v", code, e)
	}
}
