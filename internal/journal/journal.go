package journal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/cluster"
)

// Group is the API group of unprune's own documents.
const Group = "unprune.dev"

// Version is the journal document version this package reads and writes.
const Version = "v1alpha2"

// APIVersion and Kind identify a journal document.
const (
	APIVersion = Group + "/" + Version
	Kind       = "Journal"
)

// State is where an entry is in its life cycle.
type State string

// Entry states. An entry is written as planned before its patch is sent, then becomes applied,
// failed, or skipped (nothing was sent, or nothing was left to change); undo turns it into undone.
const (
	StatePlanned State = "planned"
	StateApplied State = "applied"
	StateFailed  State = "failed"
	StateSkipped State = "skipped"
	StateUndone  State = "undone"
)

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	switch s {
	case StatePlanned, StateApplied, StateFailed, StateSkipped, StateUndone:
		return true
	}
	return false
}

// ErrInvalidTransition is returned (wrapped) by the Mark* methods when the entry is not in a state
// the transition starts from.
var ErrInvalidTransition = errors.New("invalid journal entry state transition")

// Journal is one run of a changing command: which objects it changed, where, and how.
type Journal struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	// ToolVersion is the unprune build that wrote the journal.
	ToolVersion string `json:"toolVersion"`
	// Command is the unprune command that wrote the journal: detach, guard; Strategy its strategy,
	// e.g. untrack, keep, protect, confirm.
	Command  string `json:"command"`
	Strategy string `json:"strategy,omitempty"`
	// ArgoCD is the installation whose settings planned the changes; undo checks restored tracking
	// values against them.
	ArgoCD *ArgoCDRef `json:"argocd,omitempty"`
	// Rename is set by `unprune rename`: the Application it renamed, as it was.
	Rename *Renamed `json:"rename,omitempty"`
	// Clusters are the clusters the entries live in, each named once.
	Clusters []cluster.Info `json:"clusters"`
	Entries  []Entry        `json:"entries"`
}

// ArgoCDRef is what a journal remembers of the Argo CD installation.
type ArgoCDRef struct {
	Namespace        string `json:"namespace"`
	TrackingMethod   string `json:"trackingMethod,omitempty"`
	InstanceLabelKey string `json:"instanceLabelKey,omitempty"`
	InstallationID   string `json:"installationID,omitempty"`
	// Cluster is where the installation's Applications live.
	Cluster string `json:"cluster,omitempty"`
}

// AppRef names the Argo CD Application an entry's object belonged to.
type AppRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Instance is the name Argo CD tracked the object by.
	Instance string `json:"instance,omitempty"`
}

// String is namespace/name.
func (a AppRef) String() string {
	if a.Namespace == "" {
		return a.Name
	}
	return a.Namespace + "/" + a.Name
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

// String renders KIND[.GROUP]/[NAMESPACE/]NAME.
func (o ObjectRef) String() string {
	return o.Ref().String()
}

// Ref is the object as the cluster package addresses it.
func (o ObjectRef) Ref() cluster.Ref {
	return cluster.Ref{Group: o.Group, Version: o.Version, Resource: o.Resource, Kind: o.Kind,
		Namespace: o.Namespace, Name: o.Name, Namespaced: o.Namespace != ""}
}

// Entry is one object and the changes made (or planned) on it.
type Entry struct {
	// Cluster is the Name of the entry's cluster in Journal.Clusters.
	Cluster     string    `json:"cluster"`
	Application *AppRef   `json:"application,omitempty"`
	Object      ObjectRef `json:"object"`
	Changes     []Change  `json:"changes"`
	State       State     `json:"state"`
	// Error is the error message when State is failed.
	Error string `json:"error,omitempty"`
	// AppliedResourceVersion is the object's resourceVersion after the patch.
	AppliedResourceVersion string    `json:"appliedResourceVersion,omitempty"`
	UpdatedAt              time.Time `json:"updatedAt,omitzero"`
}

// Inverse returns the changes that undo e, in reverse order.
func (e Entry) Inverse() []Change {
	out := make([]Change, 0, len(e.Changes))
	for i := len(e.Changes) - 1; i >= 0; i-- {
		out = append(out, e.Changes[i].Inverse())
	}
	return out
}

// New returns an empty journal for command and strategy, written by toolVersion. Store.Create
// fills in the ID and creation time.
func New(command, strategy, toolVersion string) *Journal {
	return &Journal{APIVersion: APIVersion, Kind: Kind, Command: command, Strategy: strategy, ToolVersion: toolVersion}
}

// AddCluster records a cluster (once) and returns the name entries refer to it by.
func (j *Journal) AddCluster(c cluster.Info) string {
	key := c.Name
	if key == "" {
		key = c.Server
	}
	for _, existing := range j.Clusters {
		name := existing.Name
		if name == "" {
			name = existing.Server
		}
		if name == key {
			return key
		}
	}
	if c.Name == "" {
		c.Name = key
	}
	j.Clusters = append(j.Clusters, c)
	return key
}

// ClusterOf returns the cluster an entry lives in.
func (j *Journal) ClusterOf(e Entry) (cluster.Info, bool) {
	for _, c := range j.Clusters {
		if c.Name == e.Cluster {
			return c, true
		}
	}
	return cluster.Info{}, false
}

// Validate checks that j is a well-formed journal this package understands. All problems are
// reported, joined.
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
	clusters := map[string]bool{}
	for i, c := range j.Clusters {
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("clusters[%d]: name is empty", i))
		}
		if clusters[c.Name] {
			errs = append(errs, fmt.Errorf("clusters[%d]: name %q appears twice", i, c.Name))
		}
		clusters[c.Name] = true
	}
	for i, e := range j.Entries {
		for _, err := range e.validate(clusters) {
			errs = append(errs, fmt.Errorf("entries[%d] (%s): %w", i, e.Object, err))
		}
	}
	return errors.Join(errs...)
}

func (e Entry) validate(clusters map[string]bool) []error {
	var errs []error
	o := e.Object
	for _, f := range []struct{ name, val string }{
		{"uid", o.UID}, {"name", o.Name}, {"resource", o.Resource}, {"version", o.Version},
	} {
		if f.val == "" {
			errs = append(errs, fmt.Errorf("object %s is empty", f.name))
		}
	}
	if !clusters[e.Cluster] {
		errs = append(errs, fmt.Errorf("cluster %q is not among the journal's clusters", e.Cluster))
	}
	if e.Application != nil && e.Application.Name == "" {
		errs = append(errs, errors.New("application: name is empty"))
	}
	if !e.State.Valid() {
		errs = append(errs, fmt.Errorf("state %q is not one of planned, applied, failed, skipped, undone", e.State))
	}
	seen := make(map[string]int, len(e.Changes))
	for k, c := range e.Changes {
		if err := c.validate(); err != nil {
			errs = append(errs, fmt.Errorf("changes[%d]: %w", k, err))
		}
		id := string(c.Field) + "/" + c.Key
		if prev, dup := seen[id]; dup {
			errs = append(errs, fmt.Errorf("changes[%d]: %s %q already changed by changes[%d]", k, c.Field, c.Key, prev))
		} else {
			seen[id] = k
		}
	}
	return errs
}

func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("id is empty")
	case strings.HasPrefix(id, "."):
		return fmt.Errorf("id %q must not start with a dot", id)
	case strings.ContainsAny(id, `/\`+"\x00\n"):
		return fmt.Errorf("id %q must not contain a path separator", id)
	}
	return nil
}

// MarkApplied records that entry i was patched; resourceVersion is the object's resourceVersion
// returned by the patch. The entry must be planned or failed (a retry).
func (j *Journal) MarkApplied(i int, resourceVersion string, now time.Time) error {
	e, err := j.transition(i, StateApplied, StatePlanned, StateFailed)
	if err != nil {
		return err
	}
	e.State, e.AppliedResourceVersion, e.Error, e.UpdatedAt = StateApplied, resourceVersion, "", now.UTC()
	return nil
}

// MarkFailed records that the patch of entry i did not happen, with why. The entry must be planned
// or failed. clearChanges records that nothing of the plan reached the object (the API server
// refused every patch), so that undo never "restores" keys unprune did not remove.
func (j *Journal) MarkFailed(i int, cause string, clearChanges bool, now time.Time) error {
	e, err := j.transition(i, StateFailed, StatePlanned, StateFailed)
	if err != nil {
		return err
	}
	if cause == "" {
		cause = "unknown error"
	}
	e.State, e.Error, e.UpdatedAt = StateFailed, cause, now.UTC()
	if clearChanges {
		e.Changes = []Change{}
	}
	return nil
}

// MarkSkipped records that nothing was changed for entry i — its patch was never sent (an
// interruption, the object gone) or a re-plan found nothing left to change — and why.
func (j *Journal) MarkSkipped(i int, why string, now time.Time) error {
	e, err := j.transition(i, StateSkipped, StatePlanned)
	if err != nil {
		return err
	}
	e.State, e.Error, e.Changes, e.UpdatedAt = StateSkipped, why, []Change{}, now.UTC()
	return nil
}

// MarkUndone records that entry i was restored by undo. Planned and failed entries can be undone
// too: after a crash or a timeout the patch may have gone through, and undo decides from the live
// values.
func (j *Journal) MarkUndone(i int, now time.Time) error {
	e, err := j.transition(i, StateUndone, StatePlanned, StateApplied, StateFailed)
	if err != nil {
		return err
	}
	e.State, e.Error, e.UpdatedAt = StateUndone, "", now.UTC()
	return nil
}

// Replan records that entry i will be patched with other changes, planned from the object at
// resourceVersion after a conflict. The entry must be planned.
func (j *Journal) Replan(i int, resourceVersion string, changes []Change, now time.Time) error {
	e, err := j.transition(i, StatePlanned, StatePlanned)
	if err != nil {
		return err
	}
	e.Object.ResourceVersion, e.Changes, e.UpdatedAt = resourceVersion, cloneChanges(changes), now.UTC()
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
	if j.ArgoCD != nil {
		a := *j.ArgoCD
		c.ArgoCD = &a
	}
	c.Rename = j.Rename.clone()
	c.Clusters = append([]cluster.Info(nil), j.Clusters...)
	if j.Entries != nil {
		c.Entries = make([]Entry, len(j.Entries))
		for i, e := range j.Entries {
			if e.Application != nil {
				a := *e.Application
				e.Application = &a
			}
			e.Changes = cloneChanges(e.Changes)
			c.Entries[i] = e
		}
	}
	return &c
}

func cloneChanges(cs []Change) []Change {
	if cs == nil {
		return nil
	}
	out := make([]Change, len(cs))
	for i, c := range cs {
		out[i] = c.clone()
	}
	return out
}

// Counts returns how many entries are in each state.
func (j *Journal) Counts() map[State]int {
	m := make(map[State]int, 4)
	for _, e := range j.Entries {
		m[e.State]++
	}
	return m
}

// Applications lists the distinct applications of the entries, in order of appearance.
func (j *Journal) Applications() []AppRef {
	var out []AppRef
	seen := map[string]bool{}
	for _, e := range j.Entries {
		if e.Application == nil || seen[e.Application.String()] {
			continue
		}
		seen[e.Application.String()] = true
		out = append(out, *e.Application)
	}
	return out
}
