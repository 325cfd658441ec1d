package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
)

// AuditReport is `unprune audit -o json|yaml`.
type AuditReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   Metadata     `json:"metadata"`
	ArgoCD     *ArgoCD      `json:"argocd"`
	Summary    AuditSummary `json:"summary"`
	Items      []AuditItem  `json:"items"`
	Warnings   []string     `json:"warnings,omitempty"`
	// Prepared are objects `move --prepare` marked (this machine's journals) that still carry the
	// marks: their app can never prune or cascade-delete them until the move is finished.
	Prepared []ScanPrepared `json:"prepared,omitempty"`
	// Budgets are the deletion budget's view of the apps whose next sync with prune deletes
	// something and whose budget is known (docs/budget.md).
	Budgets []AuditBudget `json:"budgets,omitempty"`
}

// AuditBudget is the deletion budget's view of one app's next sync with prune.
type AuditBudget struct {
	Application AppRef `json:"application"`
	// Limit is the app's budget, from Source: its annotation, its project's, or the installation's.
	Limit  int    `json:"limit"`
	Source string `json:"source"`
	// Deletes counts what the sync deletes (or Argo CD's approval lets it delete), HighRisk those
	// of high risk.
	Deletes  int `json:"deletes"`
	HighRisk int `json:"highRisk"`
	// Held: the budget refuses the sync's deletions until approved (over the budget, or high-risk).
	Held bool `json:"held"`
	// Approvals counts the UIDs approved on the app; Approve is the command that approves.
	Approvals int    `json:"approvals"`
	Approve   string `json:"approve"`
}

// Line is the view in words.
func (b AuditBudget) Line() string {
	what := fmt.Sprintf("app %s/%s's next sync with prune deletes %s", b.Application.Namespace, b.Application.Name, Count(b.Deletes, "object"))
	budget := fmt.Sprintf("its budget of %d (%s)", b.Limit, b.Source)
	approvals := ""
	if b.Approvals > 0 {
		approvals = fmt.Sprintf(" (%d approved on the app)", b.Approvals)
	}
	switch {
	case b.Deletes > b.Limit:
		return fmt.Sprintf("%s, more than %s: held back until approved%s: %s", what, budget, approvals, b.Approve)
	case b.HighRisk > 0:
		return fmt.Sprintf("%s, within %s, %d of them high-risk: held back until approved%s: %s", what, budget, b.HighRisk, approvals, b.Approve)
	}
	return fmt.Sprintf("%s, within %s", what, budget)
}

// AuditSummary counts an audit.
type AuditSummary struct {
	ApplicationsAudited int `json:"applicationsAudited"`
	Deletions           int `json:"deletions"`
	Unguarded           int `json:"unguarded"`
	UnguardedHigh       int `json:"unguardedHigh"`
	// Inconclusive counts probes that could not judge.
	Inconclusive int `json:"inconclusive"`
}

// AuditItem is one resource a prune could delete.
type AuditItem struct {
	Application AppRef         `json:"application"`
	Cluster     ClusterRef     `json:"cluster"`
	AutoPrune   bool           `json:"autoPrune"`
	Resource    ResourceRef    `json:"resource"`
	Deleted     string         `json:"deleted"`
	Risk        string         `json:"risk"`
	RiskReason  string         `json:"riskReason,omitempty"`
	Contents    *AuditContents `json:"contents,omitempty"`
	Guards      []string       `json:"guards"`
	Guarded     bool           `json:"guarded"`
	Probe       *AuditProbe    `json:"probe,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	Error       string         `json:"error,omitempty"`
	// Cascade is set when deleted is WhenItsAppIsDeleted: the item is a whole Application.
	Cascade *AuditCascade `json:"cascade,omitempty"`
}

// AuditCascade says who may delete an Application and what its finalizer deletes with it.
type AuditCascade struct {
	ManagedBy string        `json:"managedBy"`
	Finalizer string        `json:"finalizer"`
	Resources int           `json:"resources"`
	HighRisk  []ResourceRef `json:"highRisk"`
}

// AuditContents is what goes with a deletion; counts are absent when not counted.
type AuditContents struct {
	Objects         *int64 `json:"objects,omitempty"`
	CustomResources *int64 `json:"customResources,omitempty"`
	Partial         string `json:"partial,omitempty"`
}

// AuditProbe is the API server's answer to the dry-run DELETE.
type AuditProbe struct {
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
	As      string `json:"as,omitempty"`
}

// NewAuditReport converts an audit into its document.
func NewAuditReport(meta Metadata, argo *ArgoCD, r audit.Report) AuditReport {
	doc := AuditReport{APIVersion: APIVersion, Kind: "AuditReport", Metadata: meta, ArgoCD: argo, Items: []AuditItem{}, Warnings: r.Warnings}
	for _, row := range r.Rows {
		item := AuditItem{
			Application: AppRef{row.App.Namespace, row.App.Name}, Cluster: NewClusterRef(row.Cluster), AutoPrune: row.App.AutoPrune,
			Resource: NewResourceRef(row.Resource), Deleted: string(row.When), Risk: string(row.Risk), RiskReason: row.RiskWhy,
			Guards: guardNames(row.Guards), Guarded: row.Guarded, Notes: row.Notes, Error: row.LiveError,
			Contents: newAuditContents(row.Contents), Cascade: newAuditCascade(row.Cascade),
		}
		if p := row.Probe; p != nil {
			item.Probe = &AuditProbe{Result: string(p.Result), Message: p.Message, As: p.As}
			if p.Result == audit.ProbeInconclusive {
				doc.Summary.Inconclusive++
			}
		}
		if !row.Guarded {
			doc.Summary.Unguarded++
			if row.Risk == risk.High {
				doc.Summary.UnguardedHigh++
			}
		}
		doc.Items = append(doc.Items, item)
	}
	doc.Summary.ApplicationsAudited, doc.Summary.Deletions = r.AppsAudited, len(doc.Items)
	return doc
}

func newAuditCascade(c *audit.Cascade) *AuditCascade {
	if c == nil {
		return nil
	}
	out := &AuditCascade{ManagedBy: c.ManagedBy, Finalizer: c.Finalizer, Resources: c.Resources, HighRisk: []ResourceRef{}}
	for _, r := range c.HighRisk {
		out.HighRisk = append(out.HighRisk, NewResourceRef(r))
	}
	return out
}

// newAuditContents converts what a deletion takes with it; a count unprune could not read stays out.
func newAuditContents(c *risk.Contents) *AuditContents {
	if c == nil {
		return nil
	}
	out := &AuditContents{Partial: c.Partial}
	if c.Objects >= 0 {
		out.Objects = &c.Objects
	}
	if c.CustomResources >= 0 {
		out.CustomResources = &c.CustomResources
	}
	return out
}

// guardNames lists guards by name; never null in JSON.
func guardNames(guards []risk.Guard) []string {
	out := make([]string, 0, len(guards))
	for _, g := range guards {
		out = append(out, string(g))
	}
	return out
}

// Names are the -o name lines.
func (d AuditReport) Names() []string {
	return names(d.Items, func(it AuditItem) string { return it.Resource.NameLine() })
}

// AuditTable writes the human table; wide adds the cluster, why each is risky and the probe's answer.
func AuditTable(w io.Writer, o Output, doc AuditReport) error {
	wide := o.Format == Wide
	header := []string{"APPLICATION", "RESOURCE", "DELETED", "RISK", "CONTENTS", "GUARDS", "GUARDED"}
	if wide {
		header = append([]string{"CLUSTER"}, header...)
		header = append(header, "WHY-RISKY", "PROBE")
	}
	rows := make([][]string, 0, len(doc.Items))
	for _, r := range doc.Items {
		when := "by any prune sync now"
		contents := describeContents(r.Contents)
		switch {
		case r.Deleted == string(audit.WhenRemovedFromGit):
			when = "when removed from git"
		case r.Deleted == string(audit.WhenForceSynced):
			when = "by a forced sync of its app (Replace=true; another app declares it too)"
		case r.Deleted == string(audit.WhenArgoCDUpgraded):
			when = "by a prune sync after an upgrade to Argo CD v3.6+ (set installationID first)"
		case r.Cascade != nil:
			when = "with its app, deleted by " + r.Cascade.ManagedBy
			contents = fmt.Sprintf("cascade: %d resources, %d high-risk", r.Cascade.Resources, len(r.Cascade.HighRisk))
		}
		if r.Error != "" {
			contents = "<unreadable: " + firstLine(r.Error) + ">"
		}
		guarded := yesNo(r.Guarded)
		if r.Probe != nil && r.Probe.Result == string(audit.ProbeInconclusive) && !r.Guarded {
			guarded = "unknown"
		}
		row := []string{r.Application.Namespace + "/" + r.Application.Name, r.Resource.String(), when, r.Risk,
			orNone(contents), orNone(strings.Join(r.Guards, ",")), guarded}
		if wide {
			probe := ""
			if r.Probe != nil {
				probe = r.Probe.Result + ": " + r.Probe.Message
			}
			row = append([]string{r.Cluster.Name}, row...)
			row = append(row, orNone(r.RiskReason), orNone(probe))
		}
		rows = append(rows, row)
	}
	return o.Rows(w, header, rows)
}

func describeContents(c *AuditContents) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.Objects != nil {
		parts = append(parts, plural(*c.Objects, "object"))
	}
	if c.CustomResources != nil {
		parts = append(parts, plural(*c.CustomResources, "custom resource"))
	}
	s := strings.Join(parts, ", ")
	if c.Partial != "" {
		s += " (" + c.Partial + ")"
	}
	return s
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
