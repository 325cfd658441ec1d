package journal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Group is the API group of unprune's own documents.
const Group = "unprune.dev"

// Version is the journal document version this package reads and writes.
const Version = "v1alpha1"

// APIVersion and Kind identify a journal document.
const (
	APIVersion = Group + "/" + Version
	Kind       = "Journal"
)

// Field says whether a change concerns a label or an annotation.
type Field string

// Fields a change can touch.
const (
	FieldLabel      Field = "label"
	FieldAnnotation Field = "annotation"
)

// State is where an entry is in its life cycle.
type State string

// Entry states. An entry is written as planned before its patch is sent, then
// becomes applied or failed; undo turns it into undone.
const (
	StatePlanned State = "planned"
	StateApplied State = "applied"
	StateFailed  State = "failed"
	StateUndone  State = "undone"
)

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	switch s {
	case StatePlanned, StateApplied, StateFailed, StateUndone:
		return true
	}
	return false
}

// ErrInvalidTransition is returned (wrapped) by the Mark* methods when the
// entry is not in a state the transition starts from.
var ErrInvalidTransition = errors.New("invalid journal entry state transition")

// Journal is one run of a mutating command: which objects it changed and how.
type Journal struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	// Command is the unprune command that wrote the journal: detach, guard, ...
	Command string `json:"command"`
	// Strategy is the command's strategy, e.g. untrack, keep, protect.
	Strategy string `json:"strategy,omitempty"`
	// Cluster is the API server URL, Context the kubeconfig context name.
	Cluster         string `json:"cluster,omitempty"`
	Context         string `json:"context,omitempty"`
	ArgoCDNamespace string `json:"argoCDNamespace,omitempty"`
	// Application is the Argo CD Application the objects belonged to, if any.
	Application *AppRef `json:"application,omitempty"`
	Entries     []Entry `json:"entries"`
}

// AppRef names an Argo CD Application.
type AppRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ObjectRef identifies a live object as it was read before the patch.
type ObjectRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// ResourceVersion is the object's resourceVersion as read before the patch.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// String renders the object as group/version/resource namespace/name.
func (o ObjectRef) String() string {
	gvr := o.Version + "/" + o.Resource
	if o.Group != "" {
		gvr = o.Group + "/" + gvr
	}
	if o.Namespace == "" {
		return gvr + " " + o.Name
	}
	return gvr + " " + o.Namespace + "/" + o.Name
}

// Entry is one object and the changes made (or planned) on it.
type Entry struct {
	Object  ObjectRef `json:"object"`
	Changes []Change  `json:"changes"`
	State   State     `json:"state"`
	// Error is the error message when State is failed.
	Error string `json:"error,omitempty"`
	// AppliedResourceVersion is the object's resourceVersion after the patch.
	AppliedResourceVersion string    `json:"appliedResourceVersion,omitempty"`
	UpdatedAt              time.Time `json:"updatedAt,omitzero"`
}

// NewEntry returns a planned entry for obj.
func NewEntry(obj ObjectRef, changes ...Change) Entry {
	return Entry{Object: obj, Changes: changes, State: StatePlanned}
}

// Inverse returns the changes that undo e, in reverse order.
func (e Entry) Inverse() []Change {
	out := make([]Change, 0, len(e.Changes))
	for i := len(e.Changes) - 1; i >= 0; i-- {
		out = append(out, e.Changes[i].Inverse())
	}
	return out
}

// Change is one label or annotation key as it was before and after the patch.
// A nil Before or After means the key is absent: a removal has Before set and
// After nil, an addition the opposite, a rewrite both.
type Change struct {
	Field  Field   `json:"field"`
	Key    string  `json:"key"`
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
}

// Removal records that key (whose value was before) is removed.
func Removal(field Field, key, before string) Change {
	return Change{Field: field, Key: key, Before: &before}
}

// Addition records that key is added with value after.
func Addition(field Field, key, after string) Change {
	return Change{Field: field, Key: key, After: &after}
}

// Rewrite records that key's value changes from before to after.
func Rewrite(field Field, key, before, after string) Change {
	return Change{Field: field, Key: key, Before: &before, After: &after}
}

// Inverse returns the change that undoes c: Before and After swapped.
func (c Change) Inverse() Change {
	return Change{Field: c.Field, Key: c.Key, Before: clonePtr(c.After), After: clonePtr(c.Before)}
}

// IsRemoval reports whether c removes a key that was present.
func (c Change) IsRemoval() bool { return c.Before != nil && c.After == nil }

// IsAddition reports whether c adds a key that was absent.
func (c Change) IsAddition() bool { return c.Before == nil && c.After != nil }

// IsRewrite reports whether c changes the value of a key that stays present.
func (c Change) IsRewrite() bool { return c.Before != nil && c.After != nil }

// String renders c for humans, e.g. `annotation "a/b": "x" -> <absent>`.
func (c Change) String() string {
	return fmt.Sprintf("%s %q: %s -> %s", c.Field, c.Key, showValue(c.Before), showValue(c.After))
}

func showValue(p *string) string {
	if p == nil {
		return "<absent>"
	}
	return strconv.Quote(*p)
}

func (c Change) validate() error {
	var errs []error
	if c.Field != FieldLabel && c.Field != FieldAnnotation {
		errs = append(errs, fmt.Errorf("field %q is not %q or %q", c.Field, FieldLabel, FieldAnnotation))
	}
	if c.Key == "" {
		errs = append(errs, errors.New("key is empty"))
	}
	switch {
	case c.Before == nil && c.After == nil:
		errs = append(errs, errors.New("before and after are both absent"))
	case c.Before != nil && c.After != nil && *c.Before == *c.After:
		errs = append(errs, errors.New("before and after are equal"))
	}
	return errors.Join(errs...)
}

// New returns an empty journal for command and strategy. Store.Create fills
// in the ID and creation time.
func New(command, strategy string) *Journal {
	return &Journal{APIVersion: APIVersion, Kind: Kind, Command: command, Strategy: strategy}
}

// Validate checks that j is a well-formed journal this package understands.
// All problems are reported, joined.
func (j *Journal) Validate() error {
	if j == nil {
		return errors.New("journal is nil")
	}
	var errs []error
	if j.APIVersion != APIVersion {
		errs = append(errs, fmt.Errorf("apiVersion %q is not %q", j.APIVersion, APIVersion))
	}
	if j.Kind != Kind {
		errs = append(errs, fmt.Errorf("kind %q is not %q", j.Kind, Kind))
	}
	if err := checkID(j.ID); err != nil {
		errs = append(errs, err)
	}
	if j.Command == "" {
		errs = append(errs, errors.New("command is empty"))
	}
	if j.Application != nil && j.Application.Name == "" {
		errs = append(errs, errors.New("application: name is empty"))
	}
	for i, e := range j.Entries {
		var ee []error
		o := e.Object
		for _, f := range []struct{ name, val string }{
			{"uid", o.UID}, {"name", o.Name}, {"resource", o.Resource}, {"version", o.Version},
		} {
			if f.val == "" {
				ee = append(ee, fmt.Errorf("object %s is empty", f.name))
			}
		}
		if !e.State.Valid() {
			ee = append(ee, fmt.Errorf("state %q is not one of planned, applied, failed, undone", e.State))
		}
		seen := make(map[Change]int, len(e.Changes)) // keyed by field+key only
		for k, c := range e.Changes {
			if err := c.validate(); err != nil {
				ee = append(ee, fmt.Errorf("changes[%d]: %w", k, err))
			}
			id := Change{Field: c.Field, Key: c.Key}
			if prev, dup := seen[id]; dup {
				ee = append(ee, fmt.Errorf("changes[%d]: %s %q already changed by changes[%d]", k, c.Field, c.Key, prev))
			} else {
				seen[id] = k
			}
		}
		for _, err := range ee {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): %w", i, o, err))
		}
	}
	return errors.Join(errs...)
}

func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("id is empty")
	case id == "." || id == ".." || strings.HasPrefix(id, "."):
		return fmt.Errorf("id %q must not start with a dot", id)
	case strings.ContainsAny(id, `/\`+"\x00"):
		return fmt.Errorf("id %q must not contain a path separator", id)
	}
	return nil
}

// MarkApplied records that entry i was patched; resourceVersion is the
// object's resourceVersion returned by the patch. The entry must be planned
// or failed (a retry).
func (j *Journal) MarkApplied(i int, resourceVersion string, now time.Time) error {
	e, err := j.transition(i, StateApplied, StatePlanned, StateFailed)
	if err != nil {
		return err
	}
	e.State = StateApplied
	e.AppliedResourceVersion = resourceVersion
	e.Error = ""
	e.UpdatedAt = now.UTC()
	return nil
}

// MarkFailed records that the patch of entry i failed with cause. The entry
// must be planned or failed.
func (j *Journal) MarkFailed(i int, cause error, now time.Time) error {
	e, err := j.transition(i, StateFailed, StatePlanned, StateFailed)
	if err != nil {
		return err
	}
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	e.State = StateFailed
	e.Error = msg
	e.UpdatedAt = now.UTC()
	return nil
}

// MarkUndone records that entry i was restored by undo. Planned and failed
// entries can be undone too: after a crash or a timeout the patch may have
// gone through, and undo decides from the live values.
func (j *Journal) MarkUndone(i int, now time.Time) error {
	e, err := j.transition(i, StateUndone, StatePlanned, StateApplied, StateFailed)
	if err != nil {
		return err
	}
	e.State = StateUndone
	e.Error = ""
	e.UpdatedAt = now.UTC()
	return nil
}

func (j *Journal) transition(i int, to State, from ...State) (*Entry, error) {
	if j == nil {
		return nil, errors.New("journal is nil")
	}
	if i < 0 || i >= len(j.Entries) {
		return nil, fmt.Errorf("journal %s: entry %d out of range (%d entries)", j.ID, i, len(j.Entries))
	}
	e := &j.Entries[i]
	for _, f := range from {
		if e.State == f {
			return e, nil
		}
	}
	return nil, fmt.Errorf("journal %s: entry %d (%s): %w: %s -> %s", j.ID, i, e.Object, ErrInvalidTransition, e.State, to)
}

// Clone returns a deep copy of j.
func (j *Journal) Clone() *Journal {
	if j == nil {
		return nil
	}
	c := *j
	if j.Application != nil {
		a := *j.Application
		c.Application = &a
	}
	if j.Entries != nil {
		c.Entries = make([]Entry, len(j.Entries))
		for i, e := range j.Entries {
			if e.Changes != nil {
				cs := make([]Change, len(e.Changes))
				for k, ch := range e.Changes {
					cs[k] = Change{Field: ch.Field, Key: ch.Key, Before: clonePtr(ch.Before), After: clonePtr(ch.After)}
				}
				e.Changes = cs
			}
			c.Entries[i] = e
		}
	}
	return &c
}

// Counts returns how many entries are in each state.
func (j *Journal) Counts() map[State]int {
	m := make(map[State]int, 4)
	for _, e := range j.Entries {
		m[e.State]++
	}
	return m
}

func clonePtr(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
