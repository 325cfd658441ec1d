package printer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/scan"
)

// ScanReport is `unprune scan -o json|yaml`.
type ScanReport struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Metadata   Metadata    `json:"metadata"`
	ArgoCD     *ArgoCD     `json:"argocd"`
	Summary    ScanSummary `json:"summary"`
	Items      []ScanItem  `json:"items"`
	Warnings   []string    `json:"warnings,omitempty"`
	// Prepared are objects `move --prepare` marked (found through this machine's journals) that
	// still carry the marks: moves not finished.
	Prepared []ScanPrepared `json:"prepared,omitempty"`
}

// ScanPrepared is one object a prepare marked, still carrying the marks.
type ScanPrepared struct {
	Application AppRef      `json:"application"`
	Resource    ResourceRef `json:"resource"`
	Journal     string      `json:"journal"`
	PreparedAt  string      `json:"preparedAt"`
	Marks       []string    `json:"marks"`
	// TrackedBy is the app instance that tracks the object now.
	TrackedBy string `json:"trackedBy,omitempty"`
}

// ScanSummary counts a scan.
type ScanSummary struct {
	ApplicationsScanned int `json:"applicationsScanned"`
	StuckApplications   int `json:"stuckApplications"`
	Resources           int `json:"resources"`
}

// ScanItem is one resource requiring pruning.
type ScanItem struct {
	Application   AppRef      `json:"application"`
	Instance      string      `json:"instance"`
	Cluster       ClusterRef  `json:"cluster"`
	AutoPrune     bool        `json:"autoPrune"`
	Resource      ResourceRef `json:"resource"`
	Risk          string      `json:"risk"`
	RiskReason    string      `json:"riskReason,omitempty"`
	Guards        []string    `json:"guards"`
	Tracking      []Field     `json:"tracking"`
	Ownership     string      `json:"ownership,omitempty"`
	ModelMismatch bool        `json:"modelMismatch,omitempty"`
	Notes         []string    `json:"notes,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// NewScanReport converts a scan into its document.
func NewScanReport(meta Metadata, r scan.Report) ScanReport {
	doc := scanHead(meta, r)
	doc.Items = make([]ScanItem, 0, len(r.Findings))
	for i := range r.Findings {
		doc.Items = append(doc.Items, newScanItem(&r.Findings[i]))
	}
	return doc
}

// ScanJSON writes NewScanReport's document as -o json prints it, one item at a time.
func ScanJSON(w io.Writer, meta Metadata, r scan.Report) error {
	return writeJSONItems(w, scanHead(meta, r), len(r.Findings), func(i int) any { return newScanItem(&r.Findings[i]) })
}

// scanHead is the scan's document without its items.
func scanHead(meta Metadata, r scan.Report) ScanReport {
	doc := ScanReport{APIVersion: APIVersion, Kind: "ScanReport", Metadata: meta, ArgoCD: NewArgoCD(r.ArgoCDNamespace, r.Settings),
		Items: []ScanItem{}, Warnings: r.Warnings,
		Summary: ScanSummary{ApplicationsScanned: r.AppsScanned, StuckApplications: r.StuckApps(), Resources: len(r.Findings)}}
	doc.Prepared = NewPrepared(r.Prepared)
	return doc
}

func newScanItem(f *scan.Finding) ScanItem {
	return ScanItem{
		Application: AppRef{f.App.Namespace, f.App.Name}, Instance: f.Instance, Cluster: NewClusterRef(*f.Cluster),
		AutoPrune: f.App.AutoPrune, Resource: NewResourceRef(f.Resource), Risk: string(f.Risk), RiskReason: f.RiskWhy,
		Guards: guardNames(f.Guards), Tracking: fields(f.Tracking), Ownership: f.Ownership, ModelMismatch: f.ModelMismatch,
		Notes: f.Notes, Error: f.LiveError,
	}
}

// Names are the -o name lines.
func (d ScanReport) Names() []string {
	return names(d.Items, func(it ScanItem) string { return it.Resource.NameLine() })
}

// NewPrepared are the documents' entries of the moves prepared and not finished.
func NewPrepared(found []scan.Prepared) []ScanPrepared {
	var out []ScanPrepared
	for _, p := range found {
		out = append(out, ScanPrepared{Application: AppRef{p.App.Namespace, p.App.Name}, Resource: NewResourceRef(p.Resource), Journal: p.Journal,
			PreparedAt: p.At.UTC().Format(time.RFC3339), Marks: p.Marks, TrackedBy: p.TrackedBy})
	}
	return out
}

// PreparedLines say, for each move prepared and not finished, what holds the object and how to go
// on; program is how the user runs unprune.
func PreparedLines(program string, prepared []ScanPrepared) []string {
	var out []string
	for _, p := range prepared {
		app := p.Application.Namespace + "/" + p.Application.Name
		head := fmt.Sprintf("%s still carries the marks of `move %v` (%s, journal %s)", Safe(p.Resource.String()), option.Prepare, strings.Join(p.Marks, ","), p.Journal)
		instance := p.TrackedBy
		switch {
		case instance != "" && instance != p.Application.Name && instance != p.Application.Namespace+"_"+p.Application.Name:
			out = append(out, fmt.Sprintf("%s: app instance %s tracks it now, and can never prune or cascade-delete it; take the marks off with: %s move %s %s %v %s",
				head, Safe(instance), program, app, Safe(p.Resource.String()), option.To, Safe(appOfInstance(instance, p.Application.Namespace))))
		default:
			out = append(out, fmt.Sprintf("%s: %s can never prune or cascade-delete it; once its manifest moved to the other app's source, finish with: "+
				"%s move %s %s %v APP2 — or take the marks off with: %s undo %s", head, app, program, app, Safe(p.Resource.String()), option.To, program, p.Journal))
		}
	}
	return out
}

// appOfInstance is the NAME or NAMESPACE/NAME of the app a tracking instance names.
func appOfInstance(instance, namespace string) string {
	if ns, name, found := strings.Cut(instance, "_"); found {
		return ns + "/" + name
	}
	return namespace + "/" + instance
}

// ScanTable writes the human table; wide adds the cluster, why each is risky and what Argo CD
// makes of the tracking.
func ScanTable(w io.Writer, o Output, doc ScanReport) error {
	wide := o.Format == Wide
	header := []string{"APPLICATION", "RESOURCE", "RISK", "AUTO-PRUNE", "GUARDS", "TRACKING"}
	if wide || manyClusters(doc) {
		header = append([]string{"CLUSTER"}, header...)
	}
	if wide {
		header = append(header, "WHY-RISKY", "OWNERSHIP")
	}
	rows := make([][]string, 0, len(doc.Items))
	for _, f := range doc.Items {
		var tracking []string
		for _, t := range f.Tracking {
			if wide {
				tracking = append(tracking, t.Key+"="+t.Value)
			} else {
				tracking = append(tracking, t.Field+":"+t.Key)
			}
		}
		track := strings.Join(tracking, ",")
		switch {
		case f.Error != "":
			track = "<unreadable: " + firstLine(f.Error) + ">"
		case f.ModelMismatch:
			track = "<none unprune expects: pass " + option.ArgoCDVersion.String() + "> " + track
		}
		row := []string{f.Application.Namespace + "/" + f.Application.Name, f.Resource.String(), f.Risk, yesNo(f.AutoPrune),
			orNone(strings.Join(f.Guards, ",")), orNone(track)}
		if wide || manyClusters(doc) {
			row = append([]string{f.Cluster.Name}, row...)
		}
		if wide {
			row = append(row, orNone(f.RiskReason), orNone(f.Ownership))
		}
		rows = append(rows, row)
	}
	return o.Rows(w, header, rows)
}

func manyClusters(doc ScanReport) bool {
	for _, it := range doc.Items {
		if it.Cluster.Name != doc.Items[0].Cluster.Name {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
