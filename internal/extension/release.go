package extension

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/verify"
)

type journalChange = journal.Change

// journalID is what the IDs of journals look like (journal.Store.newID): no path separator.
var journalID = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.-]*$`)

func errNotPlanned(row argocd.Resource) error {
	return fmt.Errorf("the engine planned nothing for %s", row)
}

func patchRequest(app argocd.Application, ref cluster.Ref, patch []byte) printer.UIPatch {
	q := map[string]string{"namespace": ref.Namespace, "resourceName": ref.Name, "version": ref.Version, "group": ref.Group,
		"kind": ref.Kind, "patchType": "application/merge-patch+json", "appNamespace": app.Namespace}
	if app.Project != "" {
		q["project"] = app.Project
	}
	body, _ := json.Marshal(string(patch))
	return printer.UIPatch{Method: "POST", Path: "/api/v1/applications/" + url.PathEscape(app.Name) + "/resource", Query: q, Body: string(body)}
}

func (s *server) journalRef(j *journal.Journal, path string) printer.UIJournalRef {
	ref := printer.UIJournalRef{ID: j.ID, Path: path}
	if s.cfg.UndoCommand != nil {
		ref.UndoCommand = s.cfg.UndoCommand(j.ID)
	}
	return ref
}

func (s *server) beginRelease(r *request) reply {
	var req printer.UIReleaseRequest
	if err := decodeBody(r, &req); err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	row, found := rowOf(r, req.Resource)
	if !found {
		return fail(http.StatusNotFound, "NotInApplication", "Application %s lists no %s", r.app.Ref(), req.Resource)
	}
	it, err := s.planRelease(r, row)
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	p := planOf(it)
	switch {
	case it.Outcome != engine.OutcomePlanned:
		return reply{http.StatusConflict, printer.UIError{APIVersion: printer.APIVersion, Kind: "Error", Reason: string(it.Outcome), Message: "nothing to release: " + orDefault(p.Message, string(it.Outcome))}}
	case req.ResourceVersion == "" || it.Live.ResourceVersion != req.ResourceVersion:
		return fail(http.StatusConflict, "ChangedSincePreview", "%s changed since the preview (resourceVersion %s, previewed %s): review the new plan before releasing", it.Ref, it.Live.ResourceVersion, req.ResourceVersion)
	}
	return s.journalAndPatch(r, it, "detach", string(plan.StrategyUntrack), req.ArgoCDServer, p)
}

// beginConfirm is POST /guards: the same as a release, for guard confirm's plan.
func (s *server) beginConfirm(r *request) reply {
	var req printer.UIReleaseRequest
	if err := decodeBody(r, &req); err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	row, found := rowOf(r, req.Resource)
	if !found || !row.RequiresPruning {
		return fail(http.StatusNotFound, "NotRequiringPruning", "Application %s lists no %s requiring pruning: the UI guards only those (a resource git still holds gets its sync-options from git)", r.app.Ref(), req.Resource)
	}
	it, err := s.planConfirm(r, row)
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	p := planOf(it)
	switch {
	case it.Outcome != engine.OutcomePlanned:
		return reply{http.StatusConflict, printer.UIError{APIVersion: printer.APIVersion, Kind: "Error", Reason: string(it.Outcome), Message: "nothing to change: " + orDefault(strings.Join(append([]string{p.Message}, p.Notes...), " "), string(it.Outcome))}}
	case req.ResourceVersion == "" || it.Live.ResourceVersion != req.ResourceVersion:
		return fail(http.StatusConflict, "ChangedSincePreview", "%s changed since the preview (resourceVersion %s, previewed %s): review the new plan first", it.Ref, it.Live.ResourceVersion, req.ResourceVersion)
	}
	return s.journalAndPatch(r, it, guard.Command, "confirm", req.ArgoCDServer, p)
}

// journalAndPatch writes the journal of one planned item (every entry planned, before anything is
// sent) and answers with the patch for the browser to send through argocd-server.
func (s *server) journalAndPatch(r *request, it *engine.Item, command, strategy, argocdServer string, p printer.UIPlan) reply {
	patch, err := engine.MergePatch(it.Live.ResourceVersion, it.Plan.Changes)
	if err != nil {
		return fail(http.StatusInternalServerError, "PatchFailed", "%v", err)
	}
	j := journal.New(command, strategy, s.cfg.ToolVersion)
	// The patch goes through argocd-server's API, as with --via argocd: the journal says so, and
	// an undo with a kubeconfig resolves the cluster as the app's destination.
	home := cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, Via: cluster.ViaArgoCDAPI, ArgoCDServer: argocdServer}
	dest := it.Objects.Info()
	dest = cluster.Info{Name: dest.Name, Server: dest.Server, Via: cluster.ViaArgoCDAPI, ArgoCDServer: argocdServer}
	j.ArgoCD = &journal.ArgoCDRef{Namespace: r.argo.Namespace(), TrackingMethod: string(r.settings.Method),
		InstanceLabelKey: r.settings.InstanceLabelKey, InstallationID: r.settings.InstallationID, Cluster: j.AddCluster(home)}
	j.Entries = append(j.Entries, journal.Entry{
		Cluster:     j.AddCluster(dest),
		Application: &journal.AppRef{Namespace: r.app.Namespace, Name: r.app.Name, Instance: it.App.Instance},
		Object: journal.ObjectRef{Group: it.Ref.Group, Version: it.Ref.Version, Resource: it.Ref.Resource, Kind: it.Ref.Kind,
			Namespace: it.Ref.Namespace, Name: it.Ref.Name, UID: it.Live.UID, ResourceVersion: it.Live.ResourceVersion},
		Changes: it.Plan.Changes,
	})
	if ns := s.cfg.JournalNamespace; ns != "" && ns == r.argo.Namespace() {
		return fail(http.StatusInternalServerError, "JournalsInArgoCDNamespace", "this backend journals in namespace %s, Argo CD's: it journals nothing there, since it would have to be able to write argocd-cm and argocd-rbac-cm; give it a namespace of its own (docs/ui.md). Nothing was changed", ns)
	}
	s.creating.Lock()
	defer s.creating.Unlock()
	store := s.cfg.Journals(r.user)
	if bad, full := s.journalsFull(r, store); full {
		return bad
	}
	rec, err := store.Create(j)
	if err != nil {
		return fail(http.StatusInternalServerError, "JournalFailed", "write the journal (nothing was changed): %v", err)
	}
	path := rec.Path()
	if err := rec.Close(); err != nil {
		return fail(http.StatusInternalServerError, "JournalFailed", "write the journal (nothing was changed): %v", err)
	}
	s.cfg.logf("%s %s of %s in %s planned by %s: journal %s", command, strategy, it.Ref, r.app.Ref(), r.user, path)
	return ok(printer.UIReleaseStarted{APIVersion: printer.APIVersion, Kind: "UIReleaseStarted", Journal: s.journalRef(j, path), Release: p,
		Patch: patchFor(r.app, it.Ref, patch)})
}

// journalsFull refuses a new journal when the store holds the most it may, in all or for the
// request's app: every user who may invoke the extension can start a release (a viewer's is
// journaled as refused), and nothing deletes journals (docs/ui.md, retention).
func (s *server) journalsFull(r *request, store *journal.Store) (reply, bool) {
	sums, err := store.List()
	if err != nil {
		return fail(http.StatusBadGateway, "JournalsUnreadable", "count the journals before writing one (nothing was changed): %v", err), true
	}
	total, perApp := s.cfg.maxJournals()
	forApp := 0
	for _, sum := range sums {
		for _, a := range sum.Applications {
			if a.Namespace == r.app.Namespace && a.Name == r.app.Name {
				forApp++
				break
			}
		}
	}
	where := store.Dir
	switch {
	case len(sums) >= total:
		return fail(http.StatusTooManyRequests, "TooManyJournals", "the journal store (%s) holds %d journals, the most this backend writes (%d in all): nothing was changed. An operator can remove those no longer needed for undo (docs/ui.md, retention)", where, len(sums), total), true
	case forApp >= perApp:
		return fail(http.StatusTooManyRequests, "TooManyJournals", "Application %s has %d journals of UI releases (%s), the most this backend writes for one app (%d): nothing was changed. An operator can remove those no longer needed for undo (docs/ui.md, retention)", r.app.Ref(), forApp, where, perApp), true
	}
	return reply{}, false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// openOwn opens a journal of the request's app.
func (s *server) openOwn(r *request) (*journal.Recorder, *journal.Journal, reply, bool) {
	id := r.PathValue("id")
	if !journalID.MatchString(id) {
		return nil, nil, fail(http.StatusBadRequest, "BadRequest", "%q is not a journal ID", id), false
	}
	store := s.cfg.Journals(r.user)
	rec, err := store.Open(store.Path(id))
	if err != nil {
		return nil, nil, fail(http.StatusNotFound, "JournalNotFound", "%v", err), false
	}
	j := rec.Snapshot()
	for _, e := range j.Entries {
		if e.Application == nil || e.Application.Namespace != r.app.Namespace || e.Application.Name != r.app.Name {
			_ = rec.Close()
			return nil, nil, fail(http.StatusForbidden, "OtherApplication", "journal %s is not about Application %s", j.ID, r.app.Ref()), false
		}
	}
	if len(j.Entries) == 0 {
		_ = rec.Close()
		return nil, nil, fail(http.StatusNotFound, "JournalEmpty", "journal %s has no entries", j.ID), false
	}
	return rec, j, reply{}, true
}

// readEntry reads an entry's object live, with the backend's own (read) rights.
func (s *server) readEntry(r *request, j *journal.Journal, e journal.Entry) (*cluster.Object, error) {
	info, _ := j.ClusterOf(e)
	objects, err := s.cfg.Session.Recorded(r.Context(), info, e.Application)
	if err != nil {
		return nil, err
	}
	ref := e.Object.Ref()
	if resolved, err := objects.Resolve(r.Context(), ref.Group, ref.Kind, ref.Version, ref.Namespace, ref.Name); err == nil {
		ref = resolved
	}
	return objects.Get(r.Context(), ref)
}

func (s *server) releaseResult(r *request) reply {
	var sent printer.UISent
	if err := decodeBody(r, &sent); err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	rec, j, bad, good := s.openOwn(r)
	if !good {
		return bad
	}
	e := j.Entries[0]
	if e.State != journal.StatePlanned {
		_ = rec.Close()
		return ok(printer.UIReleaseResult{APIVersion: printer.APIVersion, Kind: "UIReleaseResult", Journal: s.journalRef(j, rec.Path()), State: string(e.State), Message: e.Error})
	}
	live, err := s.readEntry(r, j, e)
	var state journal.State
	var msg string
	switch {
	case err != nil && cluster.IsNotFound(err):
		state, msg = journal.StateFailed, "the object is gone"
		err = rec.MarkFailed(0, msg, false)
	case err != nil:
		_ = rec.Close()
		return fail(http.StatusBadGateway, "ReadFailed", "read %s to complete journal %s (it stays planned; undo decides from the live values): %v", e.Object, j.ID, err)
	case live.UID != e.Object.UID:
		state, msg = journal.StateFailed, fmt.Sprintf("the object was recreated (uid %s, planned on %s)", live.UID, e.Object.UID)
		err = rec.MarkFailed(0, msg, true)
	case len(engine.Mismatches(live, e.Changes)) == 0:
		// The cluster shows the release, whatever the browser saw (a lost answer, a retry).
		state = journal.StateApplied
		err = rec.MarkApplied(0, live.ResourceVersion)
	default:
		state, msg = journal.StateFailed, describeRefusal(sent)
		// Nothing of the plan reached the object when every key still holds what was found.
		untouched := true
		for _, c := range e.Changes {
			m := live.Annotations
			if c.Field == journal.FieldLabel {
				m = live.Labels
			}
			v, has := m[c.Key]
			untouched = untouched && (c.ManagedFields != nil || c.Found(v, has))
		}
		err = rec.MarkFailed(0, msg, untouched)
	}
	if cerr := rec.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(http.StatusInternalServerError, "JournalFailed", "record the outcome in journal %s: %v", j.ID, err)
	}
	s.cfg.logf("release journal %s of %s (%s): %s %s", j.ID, r.app.Ref(), r.user, state, msg)
	return ok(printer.UIReleaseResult{APIVersion: printer.APIVersion, Kind: "UIReleaseResult", Journal: s.journalRef(j, rec.Path()), State: string(state), Message: msg})
}

// describeRefusal words what argocd-server answered.
func describeRefusal(sent printer.UISent) string {
	switch {
	case sent.Status == http.StatusForbidden:
		return "Argo CD's RBAC refused the patch (" + orDefault(sent.Message, "permission denied") + "): it needs applications, update on the app (from v3.0 update/GROUP/KIND/NAMESPACE/NAME); nothing was changed"
	case sent.Status == http.StatusConflict:
		return "the object changed since it was read (" + orDefault(sent.Message, "conflict") + "); nothing was overwritten"
	case sent.Status == 0:
		return "the patch was not sent or its answer was lost, and the object shows no change"
	}
	return fmt.Sprintf("argocd-server answered %d: %s", sent.Status, orDefault(sent.Message, "no message"))
}

func (s *server) releaseStatus(r *request) reply {
	rec, j, bad, good := s.openOwn(r)
	if !good {
		return bad
	}
	_ = rec.Close()
	e := j.Entries[0]
	res := printer.UIReleaseResult{APIVersion: printer.APIVersion, Kind: "UIReleaseResult", Journal: s.journalRef(j, rec.Path()), State: string(e.State), Message: e.Error}
	if e.State == journal.StateApplied && j.Command == "detach" {
		row := argocd.Resource{Group: e.Object.Group, Version: e.Object.Version, Kind: e.Object.Kind, Namespace: e.Object.Namespace, Name: e.Object.Name}
		o := verify.Judge(r.app, []argocd.Resource{row}, verify.Gone, e.UpdatedAt)
		v := &printer.UIVerification{Verified: o.Verified, Fresh: o.Fresh, SyncStatus: o.App.SyncStatus, Lingering: []printer.ResourceRef{}, OutOfSync: []printer.ResourceRef{}}
		for _, l := range o.Lingering {
			v.Lingering = append(v.Lingering, printer.NewResourceRef(l))
		}
		for _, l := range o.OutOfSync {
			v.OutOfSync = append(v.OutOfSync, printer.NewResourceRef(l))
		}
		res.Verification = v
	}
	return ok(res)
}
