package journal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/cluster"
)

// ManagedFieldsChange records the removal (or, for undo, the return) of one field manager's entries
// in metadata.managedFields. Entries are recorded exactly as the API server returned them, fieldsV1
// included, so that undo can put them back; fieldsV1 names fields (a Secret's keys) but holds no
// values.
//
// A JSON merge patch replaces the whole managedFields list, so the patch carries the entries to
// keep as well: that list is known only in the run that read the object (or after WithList), like
// an embedded change's values, and never written out.
type ManagedFieldsChange struct {
	Entries []cluster.ManagedFieldsEntry `json:"entries"`
	// Placeholder is the entry the removal adds when Entries were the only ones (see
	// ManagedFieldsRemoval); the restore takes it out again.
	Placeholder *cluster.ManagedFieldsEntry `json:"placeholder,omitempty"`
	// Restore is true for the inverse change, which puts Entries back.
	Restore bool `json:"restore,omitempty"`

	// list is the whole managedFields list the patch sends, in memory only.
	list []cluster.ManagedFieldsEntry
	// known is true once list is set (an empty list is a valid one).
	known bool
}

// ManagedFieldsRemoval records that manager's entries are removed from live, the object's
// managedFields as read: the patch sends every other entry unchanged. When there is no other
// entry, it sends placeholder instead: the API server never stores an empty list for a merge patch
// (it keeps the live one), and after a reset ([{}]) it would attribute every field to
// "before-first-apply" at the next server-side apply, which conflicts as Argo CD's entries did
// (k8s.io/apimachinery/pkg/util/managedfields/internal/skipnonapplied.go).
func ManagedFieldsRemoval(manager string, live []cluster.ManagedFieldsEntry, placeholder cluster.ManagedFieldsEntry) Change {
	m := &ManagedFieldsChange{list: []cluster.ManagedFieldsEntry{}, known: true}
	for _, e := range live {
		if e.Manager == manager {
			m.Entries = append(m.Entries, e)
		} else {
			m.list = append(m.list, e)
		}
	}
	if len(m.list) == 0 {
		m.Placeholder = &placeholder
		m.list = append(m.list, placeholder)
	}
	return Change{Field: FieldManagedFields, Key: manager, ManagedFields: m}
}

// RestoreList is the managedFields list that puts the entries back on live: live without the
// placeholder (when it is there unchanged), and the entries.
func (m ManagedFieldsChange) RestoreList(live []cluster.ManagedFieldsEntry) []cluster.ManagedFieldsEntry {
	out := make([]cluster.ManagedFieldsEntry, 0, len(live)+len(m.Entries))
	for _, e := range live {
		if m.Placeholder != nil && e.Identity() == m.Placeholder.Identity() && e.SameFields(*m.Placeholder) {
			continue
		}
		out = append(out, e)
	}
	return append(out, m.Entries...)
}

// WithList returns the change that sends list, the whole managedFields list of the object (for
// undo: the live entries and the entries put back).
func (m ManagedFieldsChange) WithList(list []cluster.ManagedFieldsEntry) ManagedFieldsChange {
	m.list, m.known = append([]cluster.ManagedFieldsEntry{}, list...), true
	return m
}

// List is the whole managedFields list to send; known is false when this run did not read it.
func (m ManagedFieldsChange) List() (list []cluster.ManagedFieldsEntry, known bool) {
	return m.list, m.known
}

// absentFrom reports whether live holds none of the entries (by identity): what a removal leaves.
func (m ManagedFieldsChange) absentFrom(live []cluster.ManagedFieldsEntry) bool {
	for _, e := range m.Entries {
		for _, l := range live {
			if l.Identity() == e.Identity() {
				return false
			}
		}
	}
	return true
}

// presentIn reports whether every entry is in live: exactly (same fields, time and fieldsV1), or
// only by identity (manager, operation, API version, subresource).
func (m ManagedFieldsChange) presentIn(live []cluster.ManagedFieldsEntry, exactly bool) bool {
	for _, e := range m.Entries {
		found := false
		for _, l := range live {
			if exactly && l.Equal(e) || !exactly && l.Identity() == e.Identity() {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// ExpectsEntries reports whether live managedFields are what the change leaves. A restore is
// checked by identity only: the API server hands the fields that the same patch writes (the
// tracking keys undo puts back) to the patch's own field manager, so a restored entry may come back
// without those fields.
func (c Change) ExpectsEntries(live []cluster.ManagedFieldsEntry) bool {
	m := c.ManagedFields
	if m == nil {
		return false
	}
	if m.Restore {
		return m.presentIn(live, false)
	}
	return m.absentFrom(live) && (m.Placeholder == nil || hasIdentity(live, *m.Placeholder))
}

func hasIdentity(live []cluster.ManagedFieldsEntry, e cluster.ManagedFieldsEntry) bool {
	for _, l := range live {
		if l.Identity() == e.Identity() {
			return true
		}
	}
	return false
}

// FoundEntries reports whether live managedFields are what the change found before it.
func (c Change) FoundEntries(live []cluster.ManagedFieldsEntry) bool {
	if c.ManagedFields == nil {
		return false
	}
	if c.ManagedFields.Restore {
		return c.ManagedFields.absentFrom(live)
	}
	return c.ManagedFields.presentIn(live, true)
}

// Describe is the entries in words, without fieldsV1: "Apply, apps/v1; Update, v1 (status)".
func (m ManagedFieldsChange) Describe() string {
	parts := make([]string, 0, len(m.Entries))
	for _, e := range m.Entries {
		s := e.Operation + ", " + e.APIVersion
		if e.Subresource != "" {
			s += " (" + e.Subresource + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func (m ManagedFieldsChange) clone() *ManagedFieldsChange {
	out := m
	out.Entries = append([]cluster.ManagedFieldsEntry(nil), m.Entries...)
	if m.Placeholder != nil {
		p := *m.Placeholder
		out.Placeholder = &p
	}
	if m.list != nil {
		out.list = append([]cluster.ManagedFieldsEntry{}, m.list...)
	}
	return &out
}

func (m ManagedFieldsChange) inverse() *ManagedFieldsChange {
	out := m.clone()
	out.Restore = !m.Restore
	// The list to send back is the live one at undo time, not this run's: undo sets it.
	out.list, out.known = nil, false
	return out
}

func validateManagedFields(c Change) []error {
	var errs []error
	m := c.ManagedFields
	if c.Before != nil || c.After != nil || c.Embedded != nil {
		errs = append(errs, errors.New("a managedFields change records entries, not before and after"))
	}
	if len(m.Entries) == 0 {
		errs = append(errs, errors.New("managedFields: entries is empty"))
	}
	for i, e := range m.Entries {
		if e.Manager != c.Key {
			errs = append(errs, fmt.Errorf("managedFields: entries[%d] is of manager %q, not %q", i, e.Manager, c.Key))
		}
		if e.Operation == "" {
			errs = append(errs, fmt.Errorf("managedFields: entries[%d]: operation is empty", i))
		}
	}
	if p := m.Placeholder; p != nil && p.Manager == c.Key {
		errs = append(errs, fmt.Errorf("managedFields: the placeholder is of manager %q itself", c.Key))
	}
	return errs
}
