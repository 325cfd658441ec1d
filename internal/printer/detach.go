package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/journal"
)

// Change is one label or annotation change; before/after absent means the key is absent.
type Change struct {
	Field  string  `json:"field"`
	Key    string  `json:"key"`
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
}

// Changes converts journal changes for output.
func Changes(cs []journal.Change) []Change {
	out := []Change{}
	for _, c := range cs {
		out = append(out, Change{Field: string(c.Field), Key: c.Key, Before: c.Before, After: c.After})
	}
	return out
}

// Outcomes of one object.
const (
	OutcomePlanned   = "planned"   // preview only
	OutcomeUnchanged = "unchanged" // nothing to do: already released
	OutcomeRefused   = "refused"
	OutcomeDryRunOK  = "accepted-by-dry-run"
	OutcomeApplied   = "applied"
	OutcomeFailed    = "failed"
	OutcomeRestored  = "restored"
)

// DetachItem is one object of a detach.
type DetachItem struct {
	Resource ResourceRef `json:"resource"`
	Outcome  string      `json:"outcome"`
	Changes  []Change    `json:"changes"`
	Notes    []string    `json:"notes,omitempty"`
	Refusal  string      `json:"refusal,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	Error    string      `json:"error,omitempty"`
	Attempts int         `json:"attempts,omitempty"`
	diff     string
}

// SetDiff attaches the preview diff shown in tables.
func (d *DetachItem) SetDiff(s string) { d.diff = s }

// Verification is what Argo CD showed after the change.
type Verification struct {
	Synced         bool          `json:"synced"`
	SyncStatus     string        `json:"syncStatus"`
	Revision       string        `json:"revision,omitempty"`
	ElapsedSeconds float64       `json:"elapsedSeconds"`
	StillListed    []ResourceRef `json:"stillListed,omitempty"`
	OutOfSync      []ResourceRef `json:"outOfSync,omitempty"`
}

// DetachReport is `unprune detach -o json|yaml`.
type DetachReport struct {
	APIVersion   string        `json:"apiVersion"`
	Kind         string        `json:"kind"`
	ArgoCD       ArgoCDInfo    `json:"argocd"`
	Application  AppRef        `json:"application"`
	Instance     string        `json:"instance"`
	Strategy     string        `json:"strategy"`
	Mode         string        `json:"mode"`
	Items        []DetachItem  `json:"items"`
	Journal      string        `json:"journal,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
}

// Detach modes.
const (
	ModePreview      = "preview"
	ModeServerDryRun = "server-dry-run"
	ModeApply        = "apply"
)

// DetachPlanTable writes the plan: one row per object, then the metadata diff of each.
func DetachPlanTable(w io.Writer, doc DetachReport) error {
	rows := make([][]string, 0, len(doc.Items))
	for _, it := range doc.Items {
		what := []string{}
		for _, c := range it.Changes {
			switch {
			case c.After == nil:
				what = append(what, "remove "+c.Field+" "+c.Key)
			case c.Before == nil:
				what = append(what, "add "+c.Field+" "+c.Key+"="+*c.After)
			default:
				what = append(what, "set "+c.Field+" "+c.Key+"="+shorten(*c.After))
			}
		}
		detail := strings.Join(what, "; ")
		if it.Refusal != "" {
			detail = it.Refusal
		}
		if it.Error != "" {
			detail = it.Error
		}
		if detail == "" {
			detail = strings.Join(it.Notes, "; ")
		}
		rows = append(rows, []string{resourceString(it.Resource), strings.ToUpper(it.Outcome), orNone(detail)})
	}
	if err := Rows(w, []string{"RESOURCE", "OUTCOME", "DETAIL"}, rows); err != nil {
		return err
	}
	for _, it := range doc.Items {
		if it.diff != "" {
			fmt.Fprintln(w)
			fmt.Fprint(w, it.diff)
		}
	}
	return nil
}

func shorten(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// VerificationText is the human summary of the proof.
func VerificationText(app AppRef, v Verification) string {
	if v.Synced {
		rev := ""
		if v.Revision != "" {
			rev = " at revision " + short(v.Revision)
		}
		return fmt.Sprintf("Application %s/%s is Synced%s, %.1fs after the change. Nothing was deleted.\n", app.Namespace, app.Name, rev, v.ElapsedSeconds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Application %s/%s is still %s after %.1fs.\n", app.Namespace, app.Name, orNone(v.SyncStatus), v.ElapsedSeconds)
	for _, r := range v.StillListed {
		fmt.Fprintf(&b, "  still listed by Argo CD: %s\n", resourceString(r))
	}
	for _, r := range v.OutOfSync {
		fmt.Fprintf(&b, "  OutOfSync for another reason: %s\n", resourceString(r))
	}
	return b.String()
}

func short(rev string) string {
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}
