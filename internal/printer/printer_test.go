package printer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/scan"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		allowed []Format
		want    Format
		wantErr string
	}{
		{in: "", allowed: []Format{Table, JSON}, want: Table},
		{in: "table", allowed: []Format{Table, Wide, JSON, YAML}, want: Table},
		{in: "wide", allowed: []Format{Table, Wide, JSON, YAML}, want: Wide},
		{in: "json", allowed: []Format{Table, JSON, YAML}, want: JSON},
		{in: "yaml", allowed: []Format{Table, JSON, YAML}, want: YAML},
		{in: "wide", allowed: []Format{Table, JSON, YAML}, wantErr: `unknown output format "wide": use one of table, json, yaml`},
		{in: "JSON", allowed: []Format{Table, JSON, YAML}, wantErr: `unknown output format "JSON": use one of table, json, yaml`},
		{in: "name", allowed: []Format{Table, Wide, JSON, YAML}, wantErr: `unknown output format "name": use one of table, wide, json, yaml`},
		{in: " json", allowed: []Format{JSON}, wantErr: `unknown output format " json": use one of json`},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in, tt.allowed...)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseFormat(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			if got != "" {
				t.Errorf("ParseFormat(%q) = %q with an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestMachine(t *testing.T) {
	for f, want := range map[Format]bool{Table: false, Wide: false, JSON: true, YAML: true} {
		if got := f.Machine(); got != want {
			t.Errorf("%s.Machine() = %v, want %v", f, got, want)
		}
	}
}

func sampleReport() scan.Report {
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation"}, &v)
	guestbook := cluster.Application{Namespace: "argocd", Name: "guestbook", AutoPrune: true}
	shop := cluster.Application{Namespace: "team-a", Name: "shop"}
	return scan.Report{
		Settings: s, ArgoCDNamespace: "argocd", AppsScanned: 5,
		Findings: []scan.Finding{
			{
				App: guestbook, Instance: "guestbook",
				Resource:  cluster.Resource{Version: "v1", Kind: "Namespace", Name: "team-b", RequiresPruning: true},
				Tracking:  []argocd.Field{{Kind: argocd.FieldAnnotation, Key: argocd.AnnotationTrackingID, Value: "guestbook:/Namespace:guestbook/team-b"}},
				Ownership: `annotation argocd.argoproj.io/tracking-id="guestbook:/Namespace:guestbook/team-b"`,
				Risk:      risk.High, RiskWhy: "deleting a namespace deletes everything in it",
				Guards: []risk.Guard{risk.GuardPruneConfirm},
			},
			{
				App: guestbook, Instance: "guestbook",
				Resource: cluster.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "old", RequiresPruning: true},
				Risk:     risk.Normal,
			},
			{
				App: shop, Instance: "team-a_shop",
				Resource:  cluster.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "cart", RequiresPruning: true},
				Risk:      risk.Normal,
				LiveError: "get Deployment.apps/shop/cart: forbidden\nsecond line",
			},
		},
		Warnings: []string{"forbidden to read Deployment.apps"},
	}
}

func TestNewScanReport(t *testing.T) {
	doc := NewScanReport(sampleReport())
	if doc.APIVersion != "unprune.dev/v1alpha1" || doc.Kind != "ScanReport" {
		t.Errorf("apiVersion/kind = %q/%q", doc.APIVersion, doc.Kind)
	}
	if doc.ApplicationsScanned != 5 {
		t.Errorf("applicationsScanned = %d, want 5", doc.ApplicationsScanned)
	}
	if doc.StuckApplications != 2 {
		t.Errorf("stuckApplications = %d, want 2 (two findings share an app)", doc.StuckApplications)
	}
	want := ArgoCDInfo{Namespace: "argocd", Version: "v3.6.1", TrackingMethod: "annotation",
		MethodSource: "argocd-cm application.resourceTrackingMethod", InstanceLabelKey: argocd.DefaultInstanceLabelKey}
	if doc.ArgoCD != want {
		t.Errorf("argocd = %+v, want %+v", doc.ArgoCD, want)
	}
	if len(doc.Findings) != 3 {
		t.Fatalf("findings = %d, want 3", len(doc.Findings))
	}
	f := doc.Findings[0]
	if f.Application != (AppRef{"argocd", "guestbook"}) || f.Instance != "guestbook" || !f.AutoPrune ||
		f.Resource != (ResourceRef{Version: "v1", Kind: "Namespace", Name: "team-b"}) ||
		f.Risk != risk.High || f.RiskReason != "deleting a namespace deletes everything in it" {
		t.Errorf("finding 0 = %+v", f)
	}
	if len(f.Tracking) != 1 || f.Tracking[0] != (MetadataField{Field: "annotation", Key: argocd.AnnotationTrackingID, Value: "guestbook:/Namespace:guestbook/team-b"}) {
		t.Errorf("finding 0 tracking = %+v", f.Tracking)
	}
	// Empty lists stay lists in JSON, never null.
	if f := doc.Findings[1]; f.Guards == nil || len(f.Guards) != 0 || f.Tracking == nil || len(f.Tracking) != 0 {
		t.Errorf("finding 1 guards %#v, tracking %#v: want empty, non-nil", f.Guards, f.Tracking)
	}
}

func TestNewScanReportEmpty(t *testing.T) {
	doc := NewScanReport(scan.Report{Settings: argocd.NewSettings(nil, nil), ArgoCDNamespace: "argocd", AppsScanned: 3})
	if doc.StuckApplications != 0 || doc.Findings == nil || len(doc.Findings) != 0 {
		t.Errorf("empty report: stuck %d, findings %#v", doc.StuckApplications, doc.Findings)
	}
	if !doc.ArgoCD.Ambiguous || doc.ArgoCD.TrackingMethod != "" || doc.ArgoCD.Version != "" {
		t.Errorf("ambiguous settings: %+v", doc.ArgoCD)
	}
	var b bytes.Buffer
	if err := Document(&b, JSON, doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"findings": []`, `"stuckApplications": 0`, `"ambiguous": true`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b.String())
		}
	}
	for _, absent := range []string{`"version"`, `"trackingMethod"`, `"warnings"`, "null"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("JSON has %s:\n%s", absent, b.String())
		}
	}
}

func TestDocumentJSON(t *testing.T) {
	doc := NewScanReport(sampleReport())
	var b bytes.Buffer
	if err := Document(&b, JSON, doc); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "{\n  \"apiVersion\": \"unprune.dev/v1alpha1\",\n  \"kind\": \"ScanReport\",\n") {
		t.Errorf("JSON does not start with apiVersion and kind:\n%s", out)
	}
	if !strings.HasSuffix(out, "}\n") {
		t.Errorf("JSON does not end with a newline")
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["applicationsScanned"] != float64(5) || back["stuckApplications"] != float64(2) {
		t.Errorf("counts = %v, %v", back["applicationsScanned"], back["stuckApplications"])
	}
	findings := back["findings"].([]any)
	first := findings[0].(map[string]any)
	if first["risk"] != "high" || first["guards"].([]any)[0] != "Prune=confirm" {
		t.Errorf("finding 0 = %v", first)
	}
	if _, ok := first["liveError"]; ok {
		t.Errorf("empty liveError is not omitted: %v", first)
	}
}

func TestDocumentYAML(t *testing.T) {
	doc := NewScanReport(sampleReport())
	var b bytes.Buffer
	if err := Document(&b, YAML, doc); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range []string{"apiVersion: unprune.dev/v1alpha1", "kind: ScanReport", "applicationsScanned: 5", "stuckApplications: 2"} {
		if !strings.Contains("\n"+out, "\n"+line+"\n") {
			t.Errorf("YAML lacks top-level line %q:\n%s", line, out)
		}
	}
	var back ScanReport
	if err := yaml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.APIVersion != APIVersion || back.Kind != "ScanReport" || len(back.Findings) != 3 || back.Findings[2].Instance != "team-a_shop" {
		t.Errorf("YAML round trip = %+v", back)
	}
}

func TestDocumentRejectsTables(t *testing.T) {
	for _, f := range []Format{Table, Wide} {
		var b bytes.Buffer
		if err := Document(&b, f, struct{}{}); err == nil {
			t.Errorf("Document(%s) succeeded", f)
		}
		if b.Len() != 0 {
			t.Errorf("Document(%s) wrote %q", f, b.String())
		}
	}
}

func TestScanTable(t *testing.T) {
	doc := NewScanReport(sampleReport())
	var b bytes.Buffer
	if err := ScanTable(&b, doc, false); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"APPLICATION        RESOURCE                    RISK     AUTO-PRUNE   GUARDS          TRACKING\n" +
		"argocd/guestbook   Namespace/team-b            high     yes          Prune=confirm   annotation:argocd.argoproj.io/tracking-id\n" +
		"argocd/guestbook   ConfigMap/guestbook/old     normal   yes          <none>          <none>\n" +
		"team-a/shop        Deployment.apps/shop/cart   normal   no           <none>          <unreadable: get Deployment.apps/shop/cart: forbidden>\n"
	if got := b.String(); got != want {
		t.Errorf("ScanTable =\n%s\nwant\n%s", got, want)
	}
}

func TestScanTableWide(t *testing.T) {
	doc := NewScanReport(sampleReport())
	var b bytes.Buffer
	if err := ScanTable(&b, doc, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("wide table has %d lines:\n%s", len(lines), b.String())
	}
	if fields := strings.Fields(lines[0]); strings.Join(fields, " ") != "APPLICATION RESOURCE RISK AUTO-PRUNE GUARDS TRACKING WHY-RISKY OWNERSHIP" {
		t.Errorf("wide header = %q", lines[0])
	}
	if !strings.Contains(lines[1], "argocd.argoproj.io/tracking-id=guestbook:/Namespace:guestbook/team-b") ||
		!strings.Contains(lines[1], "deleting a namespace deletes everything in it") {
		t.Errorf("wide row = %q", lines[1])
	}
}

func TestChanges(t *testing.T) {
	if got := Changes(nil); got == nil || len(got) != 0 {
		t.Errorf("Changes(nil) = %#v, want an empty list", got)
	}
	got := Changes([]journal.Change{
		journal.Removal(journal.FieldLabel, "a", "x"),
		journal.Addition(journal.FieldAnnotation, "b", "y"),
	})
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"field":"label","key":"a","before":"x"},{"field":"annotation","key":"b","after":"y"}]`
	if string(b) != want {
		t.Errorf("Changes JSON = %s, want %s", b, want)
	}
}

func TestDetachPlanTable(t *testing.T) {
	doc := DetachReport{
		APIVersion: APIVersion, Kind: "DetachReport",
		Items: []DetachItem{
			{
				Resource: ResourceRef{Version: "v1", Kind: "Namespace", Name: "team-a"},
				Outcome:  OutcomePlanned,
				Changes: Changes([]journal.Change{
					journal.Removal(journal.FieldLabel, "app.kubernetes.io/instance", "guestbook"),
					journal.Addition(journal.FieldAnnotation, "argocd.argoproj.io/sync-options", "Prune=false"),
					journal.Rewrite(journal.FieldAnnotation, "c", "x", strings.Repeat("v", 70)),
				}),
			},
			{
				Resource: ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"},
				Outcome:  OutcomeRefused, Refusal: "owned by Foo/bar", Changes: []Change{},
			},
			{
				Resource: ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"},
				Outcome:  OutcomeUnchanged, Changes: []Change{}, Notes: []string{"not tracked", "second"},
			},
			{
				Resource: ResourceRef{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "ui"},
				Outcome:  OutcomeUnchanged, Changes: []Change{},
			},
		},
	}
	doc.Items[0].SetDiff("--- diff\n")
	var b bytes.Buffer
	if err := DetachPlanTable(&b, doc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	wantRows := [][]string{
		{"RESOURCE", "OUTCOME", "DETAIL"},
		{"Namespace/team-a", "PLANNED", "remove label app.kubernetes.io/instance; add annotation argocd.argoproj.io/sync-options=Prune=false; set annotation c=" + strings.Repeat("v", 57) + "..."},
		{"ConfigMap/guestbook/settings", "REFUSED", "owned by Foo/bar"},
		{"Deployment.apps/guestbook/ui", "UNCHANGED", "not tracked; second"},
		{"Service/guestbook/ui", "UNCHANGED", "<none>"},
	}
	for i, want := range wantRows {
		cells := strings.SplitN(strings.Join(strings.Fields(lines[i]), " "), " ", 3)
		if strings.Join(cells, "|") != strings.Join(want, "|") {
			t.Errorf("row %d = %q, want %q", i, lines[i], want)
		}
	}
	if !strings.HasSuffix(b.String(), "\n\n--- diff\n") {
		t.Errorf("the diff does not follow the table:\n%s", b.String())
	}

	// JSON never carries the diff.
	b.Reset()
	if err := Document(&b, JSON, doc); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "--- diff") || strings.Contains(b.String(), `"diff"`) {
		t.Errorf("JSON carries the diff:\n%s", b.String())
	}
}

func TestVerificationText(t *testing.T) {
	app := AppRef{Namespace: "argocd", Name: "guestbook"}
	tests := []struct {
		name string
		v    Verification
		want string
	}{
		{
			name: "synced with revision",
			v:    Verification{Synced: true, SyncStatus: "Synced", Revision: "0123456789abcdef", ElapsedSeconds: 2.345},
			want: "Application argocd/guestbook is Synced at revision 01234567, 2.3s after the change. Nothing was deleted.\n",
		},
		{
			name: "synced, short revision",
			v:    Verification{Synced: true, Revision: "abc", ElapsedSeconds: 1},
			want: "Application argocd/guestbook is Synced at revision abc, 1.0s after the change. Nothing was deleted.\n",
		},
		{
			name: "synced, no revision",
			v:    Verification{Synced: true, ElapsedSeconds: 0.04},
			want: "Application argocd/guestbook is Synced, 0.0s after the change. Nothing was deleted.\n",
		},
		{
			name: "not synced",
			v: Verification{SyncStatus: "OutOfSync", ElapsedSeconds: 120,
				StillListed: []ResourceRef{{Version: "v1", Kind: "Namespace", Name: "team-a"}},
				OutOfSync:   []ResourceRef{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}}},
			want: "Application argocd/guestbook is still OutOfSync after 120.0s.\n" +
				"  still listed by Argo CD: Namespace/team-a\n" +
				"  OutOfSync for another reason: Deployment.apps/guestbook/ui\n",
		},
		{
			name: "no status",
			v:    Verification{ElapsedSeconds: 5},
			want: "Application argocd/guestbook is still <none> after 5.0s.\n",
		},
	}
	for _, tt := range tests {
		if got := VerificationText(app, tt.v); got != tt.want {
			t.Errorf("%s: VerificationText =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}
