package extension

import (
	"net/http"
	"strings"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

func entryResource(e journal.Entry) printer.ResourceRef {
	return printer.ResourceRef{Group: e.Object.Group, Version: e.Object.Version, Kind: e.Object.Kind, Namespace: e.Object.Namespace, Name: e.Object.Name}
}

func (s *server) journals(r *request) reply {
	store := s.cfg.Journals(r.user)
	sums, err := store.List()
	if err != nil {
		return fail(http.StatusBadGateway, "JournalsUnreadable", "%v", err)
	}
	list := printer.UIJournalList{APIVersion: printer.APIVersion, Kind: "UIJournalList", Items: []printer.UIJournal{}}
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
		item := printer.UIJournal{UIJournalRef: s.journalRef(j, sum.Path), CreatedAt: j.CreatedAt, Command: j.Command, Entries: []printer.UIJournalEntry{}}
		for _, e := range j.Entries {
			item.Entries = append(item.Entries, printer.UIJournalEntry{Resource: entryResource(e), State: string(e.State), Error: e.Error, Changes: changesOf(e.Changes)})
		}
		list.Items = append(list.Items, item)
	}
	return ok(list)
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
	ans := printer.UIUndo{APIVersion: printer.APIVersion, Kind: "UIUndo", Journal: s.journalRef(j, path), Items: []printer.UIUndoItem{}}
	for _, it := range u.Items {
		entry := j.Entries[it.Entry]
		item := printer.UIUndoItem{Entry: it.Entry, Resource: entryResource(entry), UIPlan: planOf(it)}
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
			pr := patchFor(r.app, ref, patch)
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

func (s *server) undoResult(r *request) reply {
	var sent printer.UIUndoSent
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
	res := printer.UIUndoResult{APIVersion: printer.APIVersion, Kind: "UIUndoResult", Journal: s.journalRef(j, rec.Path()), Entry: sent.Entry, State: string(e.State)}
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
		res.Message = describeUndoRefusal(sent.UISent, e)
		return ok(res)
	}
	if err := rec.MarkUndone(sent.Entry); err != nil {
		return fail(http.StatusInternalServerError, "JournalFailed", "%v", err)
	}
	res.State = string(journal.StateUndone)
	s.cfg.logf("journal %s entry %d (%s) undone by %s", j.ID, sent.Entry, e.Object, r.user)
	return ok(res)
}

func describeUndoRefusal(sent printer.UISent, e journal.Entry) string {
	if sent.Status == http.StatusBadRequest || sent.Status == http.StatusNotFound || containsNotPart(sent.Message) {
		return "Argo CD's API patches only the resources an Application lists, and it no longer lists " + e.Object.String() +
			" (server/application/application.go, getAppLiveResource): undo with a kubeconfig, with the command below (" + orDefault(sent.Message, "") + ")"
	}
	return describeRefusal(sent)
}

func containsNotPart(msg string) bool {
	return strings.Contains(msg, "not found as part of application")
}
