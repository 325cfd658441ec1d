package printer

import (
	"io"
	"strings"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
)

// AuditRow is one resource a prune could delete.
type AuditRow struct {
	Application AppRef       `json:"application"`
	AutoPrune   bool         `json:"autoPrune"`
	Resource    ResourceRef  `json:"resource"`
	When        audit.When   `json:"when"`
	Risk        risk.Class   `json:"risk"`
	RiskReason  string       `json:"riskReason,omitempty"`
	Contents    string       `json:"contents,omitempty"`
	Guards      []risk.Guard `json:"guards"`
	Guarded     bool         `json:"guarded"`
	Probe       string       `json:"probe,omitempty"`
	LiveError   string       `json:"liveError,omitempty"`
}

// AuditReport is `unprune audit -o json|yaml`.
type AuditReport struct {
	APIVersion        string     `json:"apiVersion"`
	Kind              string     `json:"kind"`
	ArgoCDNamespace   string     `json:"argocdNamespace"`
	ApplicationsAudit int        `json:"applicationsAudited"`
	Rows              []AuditRow `json:"rows"`
	Unguarded         int        `json:"unguarded"`
	UnguardedHigh     int        `json:"unguardedHigh"`
	Softened          []string   `json:"softenedApplications,omitempty"`
	Warnings          []string   `json:"warnings,omitempty"`
}

// NewAuditReport converts an audit into its document.
func NewAuditReport(r audit.Report) AuditReport {
	doc := AuditReport{APIVersion: APIVersion, Kind: "AuditReport", ArgoCDNamespace: r.ArgoCDNamespace,
		ApplicationsAudit: r.AppsAudited, Rows: []AuditRow{}, Softened: r.Softened, Warnings: r.Warnings}
	for _, row := range r.Rows {
		guards := row.Guards
		if guards == nil {
			guards = []risk.Guard{}
		}
		doc.Rows = append(doc.Rows, AuditRow{
			Application: AppRef{row.App.Namespace, row.App.Name}, AutoPrune: row.App.AutoPrune,
			Resource: ResourceRef{row.Resource.Group, row.Resource.Version, row.Resource.Kind, row.Resource.Namespace, row.Resource.Name},
			When:     row.When, Risk: row.Risk, RiskReason: row.RiskWhy, Contents: row.Contents, Guards: guards,
			Guarded: row.Guarded, Probe: row.Probe, LiveError: row.LiveError,
		})
		if !row.Guarded {
			doc.Unguarded++
			if row.Risk == risk.High {
				doc.UnguardedHigh++
			}
		}
	}
	return doc
}

// AuditTable writes the human table; wide adds why each is risky and the probe's answer.
func AuditTable(w io.Writer, doc AuditReport, wide bool) error {
	header := []string{"APPLICATION", "RESOURCE", "DELETED", "RISK", "CONTENTS", "GUARDS", "GUARDED"}
	if wide {
		header = append(header, "WHY-RISKY", "PROBE")
	}
	rows := make([][]string, 0, len(doc.Rows))
	for _, r := range doc.Rows {
		var guards []string
		for _, g := range r.Guards {
			guards = append(guards, string(g))
		}
		when := "by any prune sync now"
		if r.When == audit.AutoPrune {
			when = "when removed from git"
		}
		contents := r.Contents
		if r.LiveError != "" {
			contents = "<unreadable: " + firstLine(r.LiveError) + ">"
		}
		row := []string{r.Application.Namespace + "/" + r.Application.Name, resourceString(r.Resource), when, string(r.Risk),
			orNone(contents), orNone(strings.Join(guards, ",")), yesNo(r.Guarded)}
		if wide {
			row = append(row, orNone(r.RiskReason), orNone(r.Probe))
		}
		rows = append(rows, row)
	}
	return Rows(w, header, rows)
}
