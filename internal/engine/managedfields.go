package engine

import (
	"fmt"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
)

// managedFieldsToSend is the whole managedFields list a change's patch carries. A merge patch
// replaces the list, and the API server takes the request's list as the new base
// (k8s.io/apimachinery/pkg/util/managedfields/internal/fieldmanager.go, decodeLiveOrNew); an empty
// list means "not set" to it, so a change never sends one (journal.ManagedFieldsRemoval).
func managedFieldsToSend(c journal.Change) ([]cluster.ManagedFieldsEntry, error) {
	list, known := c.ManagedFields.List()
	switch {
	case !known:
		return nil, fmt.Errorf("managedFields of %s: the entries to keep are not known in this run", c.Key)
	case len(list) == 0:
		return nil, fmt.Errorf("managedFields of %s: an empty list would leave them as they are", c.Key)
	}
	return list, nil
}

// undoManagedFields adds to an undo plan the return of the field manager entries the entry's
// detach removed, when the object is as that detach left it: the manager has no entries now (if
// Argo CD applied the object again, its own entries are there and are not overwritten), and every
// tracking key of the entry is put back or back already — ownership without the tracking would
// only bring back the conflicts the detach removed.
func undoManagedFields(p plan.Plan, e journal.Entry, live *cluster.Object, trackingRestored bool) plan.Plan {
	for _, c := range e.Changes {
		if c.ManagedFields == nil || p.Refusal != nil {
			continue
		}
		switch {
		case c.Key != plan.ArgoCDFieldManager:
			p.Notes = append(p.Notes, fmt.Sprintf("managedFields of %s left as is: unprune only gives back %s's entries; the journal may have been edited",
				Quote(c.Key), plan.ArgoCDFieldManager))
		case c.FoundEntries(live.ManagedFields):
			// Back already.
		case !c.ExpectsEntries(live.ManagedFields):
			p.Notes = append(p.Notes, fmt.Sprintf("managedFields: %s has entries again (Argo CD applied the object since?): its journaled entries are not put back",
				c.Key))
		case !trackingRestored:
			p.Notes = append(p.Notes, fmt.Sprintf("managedFields: %s's entries are not put back, because the tracking metadata is not", c.Key))
		default:
			inv := c.Inverse()
			m := inv.ManagedFields.WithList(c.ManagedFields.RestoreList(live.ManagedFields))
			inv.ManagedFields = &m
			p.Changes = append(p.Changes, inv)
		}
	}
	return p
}
