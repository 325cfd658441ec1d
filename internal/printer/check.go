package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/risk"
)

// CheckReport is `unprune check -o json|yaml`.
type CheckReport struct {
	APIVersion  string       `json:"apiVersion"`
	Kind        string       `json:"kind"`
	Metadata    Metadata     `json:"metadata"`
	ArgoCD      *ArgoCD      `json:"argocd"`
	Application AppRef       `json:"application"`
	Instance    string       `json:"instance"`
	Cluster     ClusterRef   `json:"cluster"`
	Summary     CheckSummary `json:"summary"`
	Items       []CheckItem  `json:"items"`
	Skipped     []string     `json:"skipped,omitempty"`
	Warnings    []string     `json:"warnings,omitempty"`
	// Applications are the apps the change deletes or renames (apps of apps, ApplicationSets).
	Applications []CheckApp `json:"applications,omitempty"`
	// ApplicationSet is set when the change checked is an ApplicationSet's (application then names the set).
	ApplicationSet *CheckSet `json:"applicationSet,omitempty"`
	// Answers say where each kind of answer came from: Argo CD itself, the user, or unprune offline.
	Answers []CheckAnswer `json:"answers,omitempty"`
	// MovedOut are objects this app would prune that the same change gives to another app: each is a
	// Move item of that app's report, and counted there.
	MovedOut []MovedOut `json:"movedOut,omitempty"`
}

// MovedOut is an object the change moves from the report's app to another.
type MovedOut struct {
	Resource ResourceRef `json:"resource"`
	To       string      `json:"to"`
}

// CheckAnswer is where one kind of answer came from.
type CheckAnswer struct {
	// Question is Manifests, Generation or Deletions.
	Question string `json:"question"`
	// By is ArgoCD, Given or Offline.
	By     string `json:"by"`
	Server string `json:"server,omitempty"`
	// For names the ApplicationSet a Generation answer is about.
	For string `json:"for,omitempty"`
}

// CheckSummary counts a check.
type CheckSummary struct {
	Adoptions int `json:"adoptions"`
	// Prunes counts prunes and the moves nothing guards yet: the app a move leaves prunes the object
	// before the app it joins adopts it.
	Prunes int `json:"prunes"`
	// Moves counts the objects the change moves between apps; UnguardedMoves those of them counted
	// in Prunes.
	Moves          int `json:"moves,omitempty"`
	UnguardedMoves int `json:"unguardedMoves,omitempty"`
	// High counts high-risk adoptions, unguarded high-risk prunes and moves, and the unguarded
	// high-risk resources deleted with the apps the change deletes.
	High int `json:"high"`
	// AppsDeleted counts Applications the change deletes; CascadeDeletions the resources their
	// finalizers delete with them.
	AppsDeleted      int `json:"appsDeleted,omitempty"`
	CascadeDeletions int `json:"cascadeDeletions,omitempty"`
}

// CheckItem is one adoption or prune.
type CheckItem struct {
	Kind          string         `json:"kind"`
	Reason        string         `json:"reason"`
	Resource      ResourceRef    `json:"resource"`
	OtherInstance string         `json:"otherInstance,omitempty"`
	Risk          string         `json:"risk"`
	RiskReason    string         `json:"riskReason,omitempty"`
	Contents      *AuditContents `json:"contents,omitempty"`
	Guards        []string       `json:"guards"`
	Guarded       bool           `json:"guarded"`
	Notes         []string       `json:"notes,omitempty"`
	Error         string         `json:"error,omitempty"`
}

// NewCheckReport converts a check into its document.
func NewCheckReport(meta Metadata, argo *ArgoCD, r check.Report) CheckReport {
	doc := CheckReport{APIVersion: APIVersion, Kind: "CheckReport", Metadata: meta, ArgoCD: argo,
		Application: AppRef{r.App.Namespace, r.App.Name}, Instance: r.Instance, Cluster: NewClusterRef(r.Cluster),
		Items: []CheckItem{}, Skipped: r.Skipped, Warnings: r.Warnings}
	for _, it := range r.Items {
		item := newCheckItem(it)
		switch it.Kind {
		case check.Adoption:
			doc.Summary.Adoptions++
			if it.Risk == risk.High {
				doc.Summary.High++
			}
		case check.Prune:
			doc.Summary.Prunes++
			if it.Risk == risk.High && !it.Guarded {
				doc.Summary.High++
			}
		case check.Move:
			doc.Summary.Moves++
			if !it.Guarded {
				doc.Summary.Prunes++
				doc.Summary.UnguardedMoves++
				if it.Risk == risk.High {
					doc.Summary.High++
				}
			}
		}
		doc.Items = append(doc.Items, item)
	}
	for _, m := range r.MovedOut {
		doc.MovedOut = append(doc.MovedOut, MovedOut{Resource: NewResourceRef(m.Resource), To: m.To})
	}
	for _, a := range r.Answers {
		doc.Answers = append(doc.Answers, CheckAnswer{Question: a.Question, By: a.By, Server: a.Server, For: a.For})
	}
	doc.Applications = newCheckApps(r.Apps)
	doc.ApplicationSet = newCheckSet(r.Set)
	for _, a := range doc.Applications {
		if a.Fate == string(check.Cascade) || a.Fate == string(check.Orphaned) {
			doc.Summary.AppsDeleted++
		}
		doc.Summary.CascadeDeletions += a.Deleted
		doc.Summary.High += a.High
	}
	return doc
}

func newCheckItem(it check.Item) CheckItem {
	return CheckItem{Kind: string(it.Kind), Reason: string(it.Reason), Resource: NewResourceRef(it.Resource), OtherInstance: it.OtherInstance,
		Risk: string(it.Risk), RiskReason: it.RiskWhy, Guards: guardNames(it.Guards), Guarded: it.Guarded, Notes: it.Notes, Error: it.Error,
		Contents: newAuditContents(it.Contents)}
}

// deletes reports an item whose object the change deletes unless a guard stops it: a prune, or a
// move (the app it leaves prunes it first).
func (it CheckItem) deletes() bool {
	return it.Kind == string(check.Prune) || it.Kind == string(check.Move)
}

// Findings reports whether the check holds what --fail-on asks about: an adoption (adoption),
// anything high-risk (high), or anything at all (any).
func (d CheckReport) Findings(failOn string) bool {
	s := d.Summary
	switch failOn {
	case "adoption":
		return s.Adoptions > 0
	case "high":
		return s.High > 0
	case "any":
		return len(d.Items)+s.AppsDeleted > 0
	}
	return false
}

// Names are the -o name lines.
func (d CheckReport) Names() []string {
	return names(d.Items, func(it CheckItem) string { return it.Resource.NameLine() })
}

// what says in words what happens to the object.
func (it CheckItem) what() string {
	switch check.Reason(it.Reason) {
	case check.Untracked:
		return "adopted: Argo CD takes over an object no app tracks"
	case check.TrackedByOtherApp:
		return fmt.Sprintf("adopted from app instance %q: the two apps will fight over it", it.OtherInstance)
	case check.Moved:
		if !it.Guarded {
			return fmt.Sprintf("moved from app instance %q, not prepared: that app prunes it before this one adopts it (see notes for the recipe)", it.OtherInstance)
		}
		return fmt.Sprintf("moved from app instance %q, guarded: `unprune move` hands it over without a deletion window (see notes)", it.OtherInstance)
	case check.CopiedTracking:
		return "adopted: its tracking-id names another object (copied metadata)"
	case check.DeletedAtNextSync:
		return "pruned: deleted at the next automated sync"
	case check.LeftRequiringPruning:
		return "pruned: left requiring pruning; any sync with PRUNE ticked deletes it"
	case check.DeletedWithNamespace:
		return "deleted with its Namespace, which the same prune deletes: its own guards stop only Argo CD's DELETE"
	case check.DeletedWithApp:
		return "deleted with its app"
	case check.KeptByGuard:
		return "kept: a guard stops the cascade deletion"
	case check.LeftTracked:
		return "stays, still tracked by the deleted app"
	}
	return it.Reason
}

// CheckTable writes the human table.
func CheckTable(w io.Writer, o Output, doc CheckReport) error {
	rows := make([][]string, 0, len(doc.Items))
	for _, it := range doc.Items {
		contents := describeContents(it.Contents)
		if it.Error != "" {
			contents = "<unreadable: " + firstLine(it.Error) + ">"
		}
		rows = append(rows, []string{it.Resource.String(), it.what(), it.Risk, orNone(contents), orNone(strings.Join(it.Guards, ","))})
	}
	if len(doc.Applications) == 0 || len(rows) > 0 {
		if err := o.Rows(w, []string{"RESOURCE", "WHAT THE CHANGE DOES", "RISK", "CONTENTS", "GUARDS"}, rows); err != nil || len(doc.Applications) == 0 {
			return err
		}
		fmt.Fprintln(w)
	}
	return checkAppsTable(w, o, doc.Applications)
}

// CheckMarkdown writes the check as a pull-request comment.
func CheckMarkdown(w io.Writer, doc CheckReport) error {
	var b strings.Builder
	what := "Application"
	if doc.ApplicationSet != nil {
		what = "ApplicationSet"
	}
	fmt.Fprintf(&b, "### unprune check: %s `%s/%s`\n\n", what, doc.Application.Namespace, doc.Application.Name)
	checkSetMarkdown(&b, doc.ApplicationSet)
	switch {
	case len(doc.Items) == 0 && len(doc.Applications) == 0 && doc.ApplicationSet != nil:
		b.WriteString("This change makes the ApplicationSet controller delete no Application.\n")
	case len(doc.Items) == 0 && len(doc.Applications) == 0 && len(doc.MovedOut) > 0:
		b.WriteString("This change makes Argo CD adopt no existing object and prune nothing else.\n")
	case len(doc.Items) == 0 && len(doc.Applications) == 0:
		b.WriteString("This change makes Argo CD adopt no existing object and prune nothing.\n")
	default:
		b.WriteString(checkSentence(doc))
		if len(doc.Items) > 0 {
			b.WriteString("\n| | Resource | What the change does | Risk | Contents | Guards |\n|---|---|---|---|---|---|\n")
		}
		for _, it := range doc.Items {
			mark := ""
			if it.Risk == string(risk.High) && !(it.deletes() && it.Guarded) {
				mark = "⚠️"
			}
			contents := describeContents(it.Contents)
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", mark, mdCell(it.Resource.String()), mdCell(it.what()), it.Risk,
				mdCell(orNone(contents)), mdCell(orNone(strings.Join(it.Guards, ", "))))
		}
	}
	for _, it := range doc.Items {
		for i, n := range moveNotes(it) {
			if i == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", mdCell(it.Resource.String()), Line(n))
		}
	}
	for _, m := range doc.MovedOut {
		fmt.Fprintf(&b, "\n- `%s` moves to %s with this change: its report counts it\n", mdCell(m.Resource.String()), mdCell(m.To))
	}
	checkAppsMarkdown(&b, doc.Applications)
	if line := AnswersLine(doc.Answers); line != "" {
		fmt.Fprintf(&b, "\n_%s_\n", mdCell(line))
	}
	for _, s := range doc.Skipped {
		fmt.Fprintf(&b, "\n- not managed as a resource: %s", mdCell(s))
	}
	for _, s := range doc.Warnings {
		fmt.Fprintf(&b, "\n- warning: %s", mdCell(s))
	}
	if len(doc.Skipped)+len(doc.Warnings) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkSentence sums the check up in one line.
func checkSentence(doc CheckReport) string {
	apps := fmt.Sprintf("**delete %d Application(s)**, taking **%d** resource(s) with them", doc.Summary.AppsDeleted, doc.Summary.CascadeDeletions)
	switch {
	case doc.ApplicationSet != nil:
		return fmt.Sprintf("This change makes the ApplicationSet controller %s; **%d** high-risk.\n", apps, doc.Summary.High)
	case doc.Summary.AppsDeleted == 0:
		return fmt.Sprintf("This change makes Argo CD **adopt %d** existing object(s) and **prune %d**%s; **%d** high-risk.\n",
			doc.Summary.Adoptions, doc.Summary.Prunes, movesClause(doc.Summary), doc.Summary.High)
	}
	return fmt.Sprintf("This change makes Argo CD **adopt %d** existing object(s), **prune %d**%s and %s; **%d** high-risk.\n",
		doc.Summary.Adoptions, doc.Summary.Prunes, movesClause(doc.Summary), apps, doc.Summary.High)
}

// movesClause says how many of the prunes are moves nothing prepared yet.
func movesClause(s CheckSummary) string {
	if s.UnguardedMoves == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them moves not prepared)", s.UnguardedMoves)
}

// mdCell keeps a value inside one Markdown table cell: pipes escaped, control characters shown.
func mdCell(s string) string {
	return strings.ReplaceAll(Safe(s), "|", `\|`)
}

// AnswersLine says in one line which answers came from Argo CD and which unprune computed.
func AnswersLine(answers []CheckAnswer) string {
	var parts []string
	for _, a := range answers {
		what := map[string]string{"Manifests": "the manifests", "Generation": "the Applications", "Deletions": "what Argo CD deletes"}[a.Question]
		if a.For != "" {
			what += " of ApplicationSet " + a.For
		}
		switch a.By {
		case "ArgoCD":
			parts = append(parts, what+": from Argo CD at "+a.Server)
		case "Given":
			parts = append(parts, what+": as given")
		default:
			parts = append(parts, what+": computed offline by unprune")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Answers — " + strings.Join(parts, "; ") + "."
}
