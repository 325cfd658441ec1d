package extension

import (
	"net/http"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// JournalEntry is one object of a journal.
type JournalEntry struct {
	Resource Resource `json:"resource"`
	State    string   `json:"state"`
	Error    string   `json:"error,omitempty"`
	Changes  []Change `json:"changes"`
}

// JournalItem is one journal of a UI release.
type JournalItem struct {
	JournalRef
	CreatedAt time.Time      `json:"createdAt"`
	Command   string         `json:"command"`
	Entries   []JournalEntry `json:"entries"`
}

// JournalList is GET /journals: the app's journals, newest first.
type JournalList struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Items      []JournalItem `json:"items"`
	// Unreadable are journals of the store that could not be read, with why.
	Unreadable []string `json:"unreadable,omitempty"`
}

func entryResource(e journal.Entry) Resource {
	return Resource{Group: e.Object.Group, Version: e.Object.Version, Kind: e.Object.Kind, Namespace: e.Object.Namespace, Name: e.Object.Name}
}

func (s *server) journals(r *request) reply {
	store := s.cfg.Journals(r.user)
	sums, err := store.List()
	if err != nil {
		return fail(http.StatusBadGateway, "JournalsUnreadable", "%v", err)
	}
	list := JournalList{APIVersion: APIVersion, Kind: "UIJournalList", Items: []JournalItem{}}
	for _, sum := range sums {
		if sum.Err != nil {
			list.Unreadable = append(list.Unreadable, sum.Path+": "+sum.Err.Error())
			continue
		}
		mine := false
		for _, a := range sum.Applications {
			mine = mine || a.Namespace == r.app.Namespace && a.Name == r.app.Name
		}
		if !mine {
			continue
		}
		j, _, err := store.Load(sum.Path)
		if err != nil {
			list.Unreadable = append(list.Unreadable, sum.Path+": "+err.Error())
			continue
		}
		item := JournalItem{JournalRef: s.journalRef(j, sum.Path), CreatedAt: j.CreatedAt, Command: j.Command, Entries: []JournalEntry{}}
		for _, e := range j.Entries {
			item.Entries = append(item.Entries, JournalEntry{Resource: entryResource(e), State: string(e.State), Error: e.Error, Changes: changesOf(e.Changes)})
		}
		list.Items = append(list.Items, item)
	}
	return ok(list)
}

// UndoItem is what undo would do to one entry's object.
type UndoItem struct {
	Entry    int      `json:"entry"`
	Resource Resource `json:"resource"`
	Plan
	// Patch is the request that restores it through argocd-server, when there is one to send.
	Patch *PatchRequest `json:"patch,omitempty"`
}

// UndoAnswer is POST /journals/{id}/undo: the undo, planned by the engine as `unprune undo` plans it.
type UndoAnswer struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Journal    JournalRef `json:"journal"`
	Items      []UndoItem `json:"items"`
}

// RefuseAutoPrune: restoring tracking in an app that prunes automatically lets Argo CD delete the
// object at once (it is not in git any more: that is why it was released).
const RefuseAutoPrune = "AutomatedPrune"

func (s *server) planUndo(r *request) reply {
	rec, j, bad, good := s.openOwn(r)
	if !good {
		return bad
	}
	e := &engine.Engine{ArgoCD: r.argo, Settings: r.settings.Settings, ToolVersion: s.cfg.ToolVersion, Now: s.cfg.Now,
		Connect: s.cfg.Session.Recorded, ArgoCDOf: s.cfg.Session.JournalArgoCD}
	u, err := e.PlanUndo(r.Context(), rec)
	path := rec.Path()
	_ = rec.Close() // nothing is marked: the browser sends the patches
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	ans := UndoAnswer{APIVersion: APIVersion, Kind: "UIUndo", Journal: s.journalRef(j, path), Items: []UndoItem{}}
	for _, it := range u.Items {
		entry := j.Entries[it.Entry]
		item := UndoItem{Entry: it.Entry, Resource: entryResource(entry), Plan: planOf(it)}
		// The engine patches what lets an app delete only after that app's comparison shows it
		// declares the object; the browser sends the patches itself and runs no such check, so the
		// UI refuses those and says what to do.
		if app := letsDelete(u, it); it.Outcome == engine.OutcomePlanned && app != "" {
			item.Outcome, item.Reason = string(engine.OutcomeRefused), RefuseAutoPrune
			item.Message = "Application " + app + " prunes automatically: putting back what the journal records on " + entry.Object.String() +
				" lets Argo CD delete it at once unless the app declares it. Turn automated prune off first (or add the resource back to git), or undo with unprune, which asks Argo CD first."
		}
		if item.Outcome == string(engine.OutcomePlanned) {
			patch, err := engine.MergePatch(it.Live.ResourceVersion, it.Plan.Changes)
			if err != nil {
				return fail(http.StatusInternalServerError, "PatchFailed", "%v", err)
			}
			ref := it.Ref
			pr := patchRequest(r.app, ref, patch)
			item.Patch = &pr
			item.Diff = printer.UnifiedDiff(ref.String(), printer.MetadataLines(it.Live.Labels, it.Live.Annotations, nil),
				printer.MetadataLines(it.Live.Labels, it.Live.Annotations, it.Plan.Changes))
		}
		ans.Items = append(ans.Items, item)
	}
	return ok(ans)
}

// letsDelete names the app the undo's patch of it lets delete (the step patching its phase lets it),
// or "".
func letsDelete(u *engine.Change, it *engine.Item) string {
	for _, s := range u.Steps {
		if s.Kind == engine.StepPatch && s.Phase == it.Phase && len(s.Lets) > 0 {
			return s.Lets[0].String()
		}
	}
	return ""
}

// UndoSent is POST /journals/{id}/undo/result: which entry the browser restored, and what
// argocd-server answered.
type UndoSent struct {
	Entry int `json:"entry"`
	Sent
}

// UndoResult says whether the cluster shows the entry restored.
type UndoResult struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Journal    JournalRef `json:"journal"`
	Entry      int        `json:"entry"`
	State      string     `json:"state"`
	Message    string     `json:"message,omitempty"`
}

func (s *server) undoResult(r *request) reply {
	var sent UndoSent
	if err := decodeBody(r, &sent); err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	rec, j, bad, good := s.openOwn(r)
	if !good {
		return bad
	}
	defer func() { _ = rec.Close() }()
	if sent.Entry < 0 || sent.Entry >= len(j.Entries) {
		return fail(http.StatusBadRequest, "BadRequest", "journal %s has no entry %d", j.ID, sent.Entry)
	}
	e := j.Entries[sent.Entry]
	res := UndoResult{APIVersion: APIVersion, Kind: "UIUndoResult", Journal: s.journalRef(j, rec.Path()), Entry: sent.Entry, State: string(e.State)}
	if e.State == journal.StateUndone {
		return ok(res)
	}
	live, err := s.readEntry(r, j, e)
	if err != nil {
		return fail(http.StatusBadGateway, "ReadFailed", "read %s: %v", e.Object, err)
	}
	restored := live.UID == e.Object.UID
	for _, c := range e.Changes {
		if c.ManagedFields != nil {
			restored = restored && c.FoundEntries(live.ManagedFields)
			continue
		}
		m := live.Annotations
		if c.Field == journal.FieldLabel {
			m = live.Labels
		}
		v, has := m[c.Key]
		restored = restored && c.Found(v, has)
	}
	if !restored {
		res.Message = describeUndoRefusal(sent.Sent, e)
		return ok(res)
	}
	if err := rec.MarkUndone(sent.Entry); err != nil {
		return fail(http.StatusInternalServerError, "JournalFailed", "%v", err)
	}
	res.State = string(journal.StateUndone)
	s.cfg.logf("journal %s entry %d (%s) undone by %s", j.ID, sent.Entry, e.Object, r.user)
	return ok(res)
}

func describeUndoRefusal(sent Sent, e journal.Entry) string {
	if sent.Status == http.StatusBadRequest || sent.Status == http.StatusNotFound || containsNotPart(sent.Message) {
		return "Argo CD's API patches only the resources an Application lists, and it no longer lists " + e.Object.String() +
			" (server/application/application.go, getAppLiveResource): undo with a kubeconfig, with the command below (" + orDefault(sent.Message, "") + ")"
	}
	return describeRefusal(sent)
}

func containsNotPart(msg string) bool {
	return strings.Contains(msg, "not found as part of application")
}
