package printer

import (
	"io"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/scan"
)

// ArgoCDInfo describes the installation and the settings a result was computed with.
type ArgoCDInfo struct {
	Namespace        string `json:"namespace"`
	Version          string `json:"version,omitempty"`
	TrackingMethod   string `json:"trackingMethod,omitempty"`
	MethodSource     string `json:"methodSource"`
	Ambiguous        bool   `json:"ambiguous,omitempty"`
	InstanceLabelKey string `json:"instanceLabelKey"`
	InstallationID   string `json:"installationID,omitempty"`
}

// NewArgoCDInfo summarises settings.
func NewArgoCDInfo(ns string, s argocd.Settings) ArgoCDInfo {
	i := ArgoCDInfo{Namespace: ns, TrackingMethod: string(s.Method), MethodSource: s.MethodSource, Ambiguous: s.Ambiguous,
		InstanceLabelKey: s.InstanceLabelKey, InstallationID: s.InstallationID}
	if s.Version != nil {
		i.Version = s.Version.String()
	}
	return i
}

// AppRef names an Application.
type AppRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ResourceRef names a resource as Argo CD's status does.
type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// MetadataField is a label or annotation.
type MetadataField struct {
	Field string `json:"field"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ScanFinding is one resource requiring pruning.
type ScanFinding struct {
	Application AppRef          `json:"application"`
	Instance    string          `json:"instance"`
	AutoPrune   bool            `json:"autoPrune"`
	Resource    ResourceRef     `json:"resource"`
	Tracking    []MetadataField `json:"tracking"`
	Ownership   string          `json:"ownership,omitempty"`
	Risk        risk.Class      `json:"risk"`
	RiskReason  string          `json:"riskReason,omitempty"`
	Guards      []risk.Guard    `json:"guards"`
	LiveError   string          `json:"liveError,omitempty"`
}

// ScanReport is `unprune scan -o json|yaml`.
type ScanReport struct {
	APIVersion          string        `json:"apiVersion"`
	Kind                string        `json:"kind"`
	ArgoCD              ArgoCDInfo    `json:"argocd"`
	ApplicationsScanned int           `json:"applicationsScanned"`
	StuckApplications   int           `json:"stuckApplications"`
	Findings            []ScanFinding `json:"findings"`
	Warnings            []string      `json:"warnings,omitempty"`
}

// NewScanReport converts a scan into its document.
func NewScanReport(r scan.Report) ScanReport {
	doc := ScanReport{APIVersion: APIVersion, Kind: "ScanReport", ArgoCD: NewArgoCDInfo(r.ArgoCDNamespace, r.Settings),
		ApplicationsScanned: r.AppsScanned, Findings: []ScanFinding{}, Warnings: r.Warnings}
	stuck := map[string]bool{}
	for _, f := range r.Findings {
		stuck[f.App.Ref()] = true
		sf := ScanFinding{
			Application: AppRef{f.App.Namespace, f.App.Name}, Instance: f.Instance, AutoPrune: f.App.AutoPrune,
			Resource: ResourceRef{f.Resource.Group, f.Resource.Version, f.Resource.Kind, f.Resource.Namespace, f.Resource.Name},
			Tracking: fields(f.Tracking), Ownership: f.Ownership, Risk: f.Risk, RiskReason: f.RiskWhy,
			Guards: f.Guards, LiveError: f.LiveError,
		}
		if sf.Guards == nil {
			sf.Guards = []risk.Guard{}
		}
		doc.Findings = append(doc.Findings, sf)
	}
	doc.StuckApplications = len(stuck)
	return doc
}

func fields(fs []argocd.Field) []MetadataField {
	out := []MetadataField{}
	for _, f := range fs {
		out = append(out, MetadataField{Field: string(f.Kind), Key: f.Key, Value: f.Value})
	}
	return out
}

// ScanTable writes the human table; wide adds values and explanations.
func ScanTable(w io.Writer, doc ScanReport, wide bool) error {
	header := []string{"APPLICATION", "RESOURCE", "RISK", "AUTO-PRUNE", "GUARDS", "TRACKING"}
	if wide {
		header = append(header, "WHY-RISKY", "OWNERSHIP")
	}
	rows := make([][]string, 0, len(doc.Findings))
	for _, f := range doc.Findings {
		var guards []string
		for _, g := range f.Guards {
			guards = append(guards, string(g))
		}
		var tracking []string
		for _, t := range f.Tracking {
			if wide {
				tracking = append(tracking, t.Key+"="+t.Value)
			} else {
				tracking = append(tracking, t.Field+":"+t.Key)
			}
		}
		track := strings.Join(tracking, ",")
		if f.LiveError != "" {
			track = "<unreadable: " + firstLine(f.LiveError) + ">"
		}
		row := []string{
			f.Application.Namespace + "/" + f.Application.Name,
			resourceString(f.Resource),
			string(f.Risk),
			yesNo(f.AutoPrune),
			orNone(strings.Join(guards, ",")),
			orNone(track),
		}
		if wide {
			row = append(row, orNone(f.RiskReason), orNone(f.Ownership))
		}
		rows = append(rows, row)
	}
	return Rows(w, header, rows)
}

func resourceString(r ResourceRef) string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace != "" {
		return kind + "/" + r.Namespace + "/" + r.Name
	}
	return kind + "/" + r.Name
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
