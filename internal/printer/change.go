package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/verify"
)

// ChangeReport is what detach (DetachReport), guard protect|confirm (GuardReport) and undo
// (UndoReport) print with -o json|yaml.
type ChangeReport struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Metadata   Metadata      `json:"metadata"`
	ArgoCD     *ArgoCD       `json:"argocd,omitempty"`
	Mode       string        `json:"mode"`
	Strategy   string        `json:"strategy,omitempty"`
	Journal    string        `json:"journal,omitempty"`
	Summary    ChangeSummary `json:"summary"`
	Items      []ChangeItem  `json:"items"`
	Warnings   []string      `json:"warnings,omitempty"`
	// Checks are Argo CD's comparisons the change waits for and judges before a step that can let
	// Argo CD delete (and after marks it must not see), in order.
	Checks []Check `json:"checks,omitempty"`
	// Rollback is what was put back, as the journal says, after a check (or a rename's step) failed.
	Rollback *Rollback `json:"rollback,omitempty"`
}

// Check is one comparison of Argo CD's a change judges.
type Check struct {
	Application AppRef `json:"application"`
	Why         string `json:"why"`
	// Outcome is Planned, Passed, Failed (Reason ComparisonMismatch, or NotCompared when Argo CD did
	// not compare the app in time), NotAttempted, or Unchanged (not run in a dry run).
	Outcome string   `json:"outcome"`
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	Details []string `json:"details,omitempty"`
}

// Rollback is the undo of a run whose check (or rename step) failed.
type Rollback struct {
	// Complete is true when everything the run changed was put back.
	Complete bool `json:"complete"`
	// Restored, Failed and NotAttempted count the objects; Steps are its Application writes.
	Restored     int          `json:"restored"`
	Failed       int          `json:"failed"`
	NotAttempted int          `json:"notAttempted"`
	Steps        []RenameStep `json:"steps,omitempty"`
	Checks       []Check      `json:"checks,omitempty"`
	Message      string       `json:"message,omitempty"`
	// Warnings are the undo's own: what it leaves as it is, and why.
	Warnings []string `json:"warnings,omitempty"`
}

// ChangeSummary counts outcomes and carries each app's verification.
type ChangeSummary struct {
	Total          int  `json:"total"`
	Planned        int  `json:"planned"`
	Unchanged      int  `json:"unchanged"`
	Refused        int  `json:"refused"`
	Gone           int  `json:"gone"`
	DryRunAccepted int  `json:"dryRunAccepted"`
	Applied        int  `json:"applied"`
	Restored       int  `json:"restored"`
	Failed         int  `json:"failed"`
	NotAttempted   int  `json:"notAttempted"`
	Interrupted    bool `json:"interrupted,omitempty"`
	// Applications are the apps of the run, with what Argo CD showed afterwards.
	Applications []AppSummary `json:"applications,omitempty"`
}

// AppSummary is one app of a change run.
type AppSummary struct {
	Application  AppRef        `json:"application"`
	Instance     string        `json:"instance,omitempty"`
	Message      string        `json:"message,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
}

// Verification is what Argo CD showed after the change.
type Verification struct {
	Verified       bool          `json:"verified"`
	Compared       bool          `json:"compared"`
	Synced         bool          `json:"synced"`
	SyncStatus     string        `json:"syncStatus"`
	Revision       string        `json:"revision,omitempty"`
	ElapsedSeconds float64       `json:"elapsedSeconds"`
	StillListed    []ResourceRef `json:"stillListed,omitempty"`
	OutOfSync      []ResourceRef `json:"outOfSync,omitempty"`
	Error          string        `json:"error,omitempty"`
}

// ChangeItem is one object of a run.
type ChangeItem struct {
	Application *AppRef     `json:"application,omitempty"`
	Cluster     ClusterRef  `json:"cluster"`
	Resource    ResourceRef `json:"resource"`
	Outcome     string      `json:"outcome"`
	Reason      string      `json:"reason,omitempty"`
	Message     string      `json:"message,omitempty"`
	Changes     []Change    `json:"changes"`
	Notes       []string    `json:"notes,omitempty"`
	Attempts    int         `json:"attempts,omitempty"`
}

// NewChangeReport builds the document of a run from its phases: the plan, what was done (the
// plan as previewed before Apply) and what Argo CD showed.
func NewChangeReport(kind string, meta Metadata, argo *ArgoCD, r engine.Result) ChangeReport {
	p, done := r.Planned, r.Done()
	doc := ChangeReport{APIVersion: APIVersion, Kind: kind, Metadata: meta, ArgoCD: argo, Mode: string(done.Mode),
		Strategy: p.Strategy, Journal: done.Journal, Items: []ChangeItem{}, Warnings: p.Warnings}
	s := &doc.Summary
	for i, it := range p.Items {
		res := done.Items[i]
		item := ChangeItem{Resource: fromRef(it.Ref), Outcome: string(res.Outcome), Reason: res.Reason, Message: res.Message,
			Changes: Changes(res.Plan.Changes), Notes: res.Plan.Notes, Attempts: res.Attempts}
		if it.Objects != nil {
			item.Cluster = NewClusterRef(it.Objects.Info())
		}
		if it.App != nil {
			item.Application = &AppRef{it.App.App.Namespace, it.App.App.Name}
		}
		if it.Row != nil && item.Resource.Version == "" {
			item.Resource.Version = it.Row.Version
		}
		doc.Items = append(doc.Items, item)
		s.count(res.Outcome)
	}
	s.Interrupted = done.Interrupted
	if r.Change != nil {
		doc.Checks = checksOf(r.Change, r.Executed)
		doc.Rollback = rollbackOf(r.Executed)
	}
	for i, a := range p.Apps {
		as := AppSummary{Application: AppRef{a.App.Namespace, a.App.Name}, Instance: a.Instance, Message: a.Message}
		if i < len(r.Verified) && r.Verified[i] != nil {
			as.Verification = newVerification(r.Verified[i])
		}
		s.Applications = append(s.Applications, as)
	}
	return doc
}

// checksOf are a change's checks with their outcomes (Planned until run).
func checksOf(c *engine.Change, x *engine.Executed) []Check {
	var out []Check
	for i, s := range c.Steps {
		if s.Kind != engine.StepCheck {
			continue
		}
		ch := Check{Application: AppRef{s.App.Namespace, s.App.Name}, Why: s.Why, Outcome: string(engine.OutcomePlanned)}
		if x != nil && x.Steps[i].Outcome != "" {
			res := x.Steps[i]
			ch.Outcome, ch.Reason = string(res.Outcome), res.Reason
			if res.Mismatch != nil {
				ch.Message, ch.Details = res.Mismatch.Summary, res.Mismatch.Details
				if res.Mismatch.Fix != "" {
					ch.Details = append(ch.Details, res.Mismatch.Fix)
				}
			} else {
				ch.Message = res.Message
			}
		}
		out = append(out, ch)
	}
	return out
}

// stepsOf are a change's Application writes (create, patch, delete) with their outcomes.
func stepsOf(c *engine.Change, x *engine.Executed) []RenameStep {
	var out []RenameStep
	for i, s := range c.Steps {
		switch s.Kind {
		case engine.StepCreate, engine.StepUpdate, engine.StepDelete:
		default:
			continue
		}
		var d engine.Decision
		if x != nil {
			d = x.Steps[i].Decision
		}
		out = append(out, newRenameStep(s, d))
	}
	return out
}

// rollbackOf is what putting back a run whose check (or rename step) failed did.
func rollbackOf(x *engine.Executed) *Rollback {
	if x == nil || (x.Rollback == nil && x.RollbackErr == nil) {
		return nil
	}
	rb := &Rollback{}
	if x.RollbackErr != nil {
		rb.Message = x.RollbackErr.Error()
		return rb
	}
	rb.Complete = x.RolledBack()
	for _, it := range x.Rollback.Items {
		switch it.Outcome {
		case engine.OutcomeRestored:
			rb.Restored++
		case engine.OutcomeFailed, engine.OutcomeRefused:
			rb.Failed++
		case engine.OutcomeNotAttempted:
			rb.NotAttempted++
		}
	}
	rb.Warnings = x.RollbackChange.Warnings
	rb.Steps = stepsOf(x.RollbackChange, x.Rollback)
	rb.Checks = checksOf(x.RollbackChange, x.Rollback)
	if i := x.Rollback.Stopped; i >= 0 {
		rb.Message = fmt.Sprintf("stopped at step %d: %s", i+1, x.Rollback.Steps[i].Message)
	}
	return rb
}

func (s *ChangeSummary) count(o engine.Outcome) {
	s.Total++
	switch o {
	case engine.OutcomePlanned:
		s.Planned++
	case engine.OutcomeUnchanged:
		s.Unchanged++
	case engine.OutcomeRefused:
		s.Refused++
	case engine.OutcomeGone:
		s.Gone++
	case engine.OutcomeDryRunAccepted:
		s.DryRunAccepted++
	case engine.OutcomeApplied:
		s.Applied++
	case engine.OutcomeRestored:
		s.Restored++
	case engine.OutcomeFailed:
		s.Failed++
	case engine.OutcomeNotAttempted:
		s.NotAttempted++
	}
}

func newVerification(v *verify.Result) *Verification {
	out := &Verification{Verified: v.Verified, Compared: v.Compared, Synced: v.Synced, SyncStatus: v.SyncStatus, Revision: v.Revision,
		ElapsedSeconds: v.Elapsed.Seconds(), Error: v.Error}
	for _, r := range v.StillListed {
		out.StillListed = append(out.StillListed, NewResourceRef(r))
	}
	for _, r := range v.OutOfSync {
		out.OutOfSync = append(out.OutOfSync, NewResourceRef(r))
	}
	return out
}

// Names are the -o name lines.
func (d ChangeReport) Names() []string {
	return names(d.Items, func(it ChangeItem) string { return it.Resource.NameLine() })
}

// ChangeTable writes one row per object: what changes (or changed), or why not.
func ChangeTable(w io.Writer, o Output, doc ChangeReport) error {
	apps := map[string]bool{}
	for _, it := range doc.Items {
		if it.Application != nil {
			apps[it.Application.Namespace+"/"+it.Application.Name] = true
		}
	}
	header := []string{"RESOURCE", "OUTCOME", "DETAIL"}
	if len(apps) > 1 {
		header = append([]string{"APPLICATION"}, header...)
	}
	rows := make([][]string, 0, len(doc.Items))
	for _, it := range doc.Items {
		parts := []string{}
		if it.Message != "" {
			parts = append(parts, it.Message)
		} else {
			parts = append(parts, describeChanges(it.Changes)...)
		}
		parts = append(parts, it.Notes...)
		detail := strings.Join(parts, "; ")
		row := []string{it.Resource.String(), it.Outcome, orNone(detail)}
		if len(apps) > 1 {
			app := ""
			if it.Application != nil {
				app = it.Application.Namespace + "/" + it.Application.Name
			}
			row = append([]string{app}, row...)
		}
		rows = append(rows, row)
	}
	return o.Rows(w, header, rows)
}

// describeChanges says in words what each change does, without embedded values.
func describeChanges(cs []Change) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.ManagedFields != nil:
			out = append(out, describeManagedFields(c))
		case c.Embedded != nil && len(c.Embedded.Restored) > 0:
			out = append(out, fmt.Sprintf("put %s back into %s %s", keyList(c.Embedded.Restored), c.Field, c.Key))
		case c.Embedded != nil:
			out = append(out, fmt.Sprintf("remove %s from %s %s", keyList(c.Embedded.Removed), c.Field, c.Key))
		case c.After == nil:
			out = append(out, "remove "+c.Field+" "+c.Key)
		case c.Before == nil:
			out = append(out, "add "+c.Field+" "+c.Key+"="+*c.After)
		default:
			out = append(out, "set "+c.Field+" "+c.Key+"="+*c.After)
		}
	}
	return out
}

func keyList(keys []Field) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k.Field+" "+k.Key)
	}
	return strings.Join(parts, ", ")
}

// VerificationText is the human summary of what Argo CD showed.
func VerificationText(program string, doc ChangeReport) string {
	var b strings.Builder
	for _, a := range doc.Summary.Applications {
		v := a.Verification
		ref := a.Application.Namespace + "/" + a.Application.Name
		switch {
		case v == nil:
			continue
		case v.Error != "":
			fmt.Fprintf(&b, "Application %s: could not verify: %s\n", ref, Line(v.Error))
		case v.Verified && v.Synced:
			rev := ""
			if v.Revision != "" {
				rev = " at revision " + short(v.Revision)
			}
			fmt.Fprintf(&b, "Application %s is Synced%s, %.1fs after the change. Nothing was deleted.\n", ref, rev, v.ElapsedSeconds)
		case v.Verified:
			fmt.Fprintf(&b, "Application %s no longer counts the released resources (%.1fs after the change). Nothing was deleted.\n", ref, v.ElapsedSeconds)
			fmt.Fprintf(&b, "  It is still %s because of resources unprune did not touch:\n", orNone(v.SyncStatus))
			for _, r := range v.OutOfSync {
				fmt.Fprintf(&b, "    %s\n", Safe(r.String()))
			}
		case !v.Compared:
			fmt.Fprintf(&b, "Application %s: Argo CD has not compared it since the change (%.1fs): its controller is busy or stopped. "+
				"The release shows when it does: %s scan %s\n", ref, v.ElapsedSeconds, program, ref)
		default:
			fmt.Fprintf(&b, "Application %s is still %s after %.1fs.\n", ref, orNone(v.SyncStatus), v.ElapsedSeconds)
			for _, r := range v.StillListed {
				fmt.Fprintf(&b, "  still counted by Argo CD: %s\n", Safe(r.String()))
			}
			for _, r := range v.OutOfSync {
				fmt.Fprintf(&b, "  OutOfSync for another reason: %s\n", Safe(r.String()))
			}
		}
	}
	return b.String()
}

func short(rev string) string {
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}
