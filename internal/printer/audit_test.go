package printer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/risk"
)

func sampleAudit() audit.Report {
	guestbook := cluster.Application{Namespace: "argocd", Name: "guestbook"}
	shop := cluster.Application{Namespace: "team-a", Name: "shop", AutoPrune: true}
	return audit.Report{
		ArgoCDNamespace: "argocd", AppsAudited: 4,
		Rows: []audit.Row{
			{
				App: guestbook, When: audit.Now,
				Resource: cluster.Resource{Version: "v1", Kind: "Namespace", Name: "team-b", RequiresPruning: true},
				Risk:     risk.High, RiskWhy: "deleting a namespace deletes everything in it", Contents: "42 objects",
				Guards:  []risk.Guard{risk.GuardPruneConfirm, audit.GuardPolicy},
				Guarded: true, Probe: "denied: protected",
			},
			{
				App: guestbook, When: audit.Now,
				Resource: cluster.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "old", RequiresPruning: true},
				Risk:     risk.Normal, Probe: "allowed: the API server would delete it",
			},
			{
				App: shop, When: audit.AutoPrune,
				Resource: cluster.Resource{Version: "v1", Kind: "PersistentVolume", Name: "data"},
				Risk:     risk.High, RiskWhy: "its data goes with it",
				Contents:  "ignored when the live object is unreadable",
				LiveError: "forbidden\npersistentvolumes \"data\" is forbidden",
			},
			{
				App: shop, When: audit.AutoPrune,
				Resource: cluster.Resource{Version: "v1", Kind: "Namespace", Name: "shop"},
				Risk:     risk.High, RiskWhy: "deleting a namespace deletes everything in it", Contents: "3 objects",
				Guards: []risk.Guard{audit.GuardAppPrune}, Probe: "allowed: the API server would delete it",
			},
		},
		Softened: []string{"team-a/shop: syncOptions Prune=false"},
		Warnings: []string{"Application argocd/remote deploys to another cluster; audit it with that cluster's --context"},
	}
}

func TestNewAuditReport(t *testing.T) {
	got := NewAuditReport(sampleAudit())
	want := AuditReport{
		APIVersion: "unprune.dev/v1alpha1", Kind: "AuditReport", ArgoCDNamespace: "argocd", ApplicationsAudit: 4,
		Rows: []AuditRow{
			{
				Application: AppRef{"argocd", "guestbook"}, Resource: ResourceRef{Version: "v1", Kind: "Namespace", Name: "team-b"},
				When: audit.Now, Risk: risk.High, RiskReason: "deleting a namespace deletes everything in it", Contents: "42 objects",
				Guards: []risk.Guard{"Prune=confirm", "AdmissionPolicy"}, Guarded: true, Probe: "denied: protected",
			},
			{
				Application: AppRef{"argocd", "guestbook"}, Resource: ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "old"},
				When: audit.Now, Risk: risk.Normal, Guards: []risk.Guard{}, Probe: "allowed: the API server would delete it",
			},
			{
				Application: AppRef{"team-a", "shop"}, AutoPrune: true, Resource: ResourceRef{Version: "v1", Kind: "PersistentVolume", Name: "data"},
				When: audit.AutoPrune, Risk: risk.High, RiskReason: "its data goes with it",
				Contents: "ignored when the live object is unreadable", Guards: []risk.Guard{},
				LiveError: "forbidden\npersistentvolumes \"data\" is forbidden",
			},
			{
				Application: AppRef{"team-a", "shop"}, AutoPrune: true, Resource: ResourceRef{Version: "v1", Kind: "Namespace", Name: "shop"},
				When: audit.AutoPrune, Risk: risk.High, RiskReason: "deleting a namespace deletes everything in it", Contents: "3 objects",
				Guards: []risk.Guard{"App:Prune=false"}, Probe: "allowed: the API server would delete it",
			},
		},
		Unguarded: 3, UnguardedHigh: 2,
		Softened: []string{"team-a/shop: syncOptions Prune=false"},
		Warnings: []string{"Application argocd/remote deploys to another cluster; audit it with that cluster's --context"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NewAuditReport =\n%#v\nwant\n%#v", got, want)
	}
}

func TestNewAuditReportCounts(t *testing.T) {
	row := func(c risk.Class, guarded bool) audit.Row {
		return audit.Row{Resource: cluster.Resource{Version: "v1", Kind: "Namespace", Name: "n"}, When: audit.Now, Risk: c, Guarded: guarded}
	}
	tests := []struct {
		name                    string
		rows                    []audit.Row
		wantUnguarded, wantHigh int
	}{
		{name: "none", rows: nil},
		{name: "all guarded", rows: []audit.Row{row(risk.High, true), row(risk.Normal, true)}},
		{name: "unguarded normal", rows: []audit.Row{row(risk.Normal, false)}, wantUnguarded: 1},
		{name: "unguarded high", rows: []audit.Row{row(risk.High, false)}, wantUnguarded: 1, wantHigh: 1},
		{
			name:          "mixed",
			rows:          []audit.Row{row(risk.High, false), row(risk.High, true), row(risk.Normal, false), row(risk.High, false), row(risk.Normal, true)},
			wantUnguarded: 3, wantHigh: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := NewAuditReport(audit.Report{Rows: tt.rows})
			if doc.Unguarded != tt.wantUnguarded || doc.UnguardedHigh != tt.wantHigh {
				t.Errorf("Unguarded, UnguardedHigh = %d, %d; want %d, %d", doc.Unguarded, doc.UnguardedHigh, tt.wantUnguarded, tt.wantHigh)
			}
			if len(doc.Rows) != len(tt.rows) {
				t.Errorf("%d rows, want %d", len(doc.Rows), len(tt.rows))
			}
		})
	}
}

func TestAuditReportJSON(t *testing.T) {
	var b bytes.Buffer
	if err := Document(&b, JSON, NewAuditReport(sampleAudit())); err != nil {
		t.Fatal(err)
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Rows       []struct {
			Guards json.RawMessage `json:"guards"`
		} `json:"rows"`
		Unguarded     int `json:"unguarded"`
		UnguardedHigh int `json:"unguardedHigh"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.APIVersion != "unprune.dev/v1alpha1" || got.Kind != "AuditReport" {
		t.Errorf("apiVersion, kind = %q, %q", got.APIVersion, got.Kind)
	}
	if got.Unguarded != 3 || got.UnguardedHigh != 2 {
		t.Errorf("unguarded, unguardedHigh = %d, %d; want 3, 2", got.Unguarded, got.UnguardedHigh)
	}
	wantGuards := []string{`["Prune=confirm","AdmissionPolicy"]`, `[]`, `[]`, `["App:Prune=false"]`}
	if len(got.Rows) != len(wantGuards) {
		t.Fatalf("%d rows in JSON, want %d", len(got.Rows), len(wantGuards))
	}
	for i, r := range got.Rows {
		var compact bytes.Buffer
		if err := json.Compact(&compact, r.Guards); err != nil {
			t.Fatalf("row %d guards %q: %v", i, r.Guards, err)
		}
		if compact.String() != wantGuards[i] {
			t.Errorf("row %d guards = %s, want %s", i, compact.String(), wantGuards[i])
		}
	}
}

func TestAuditReportJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Document(&b, JSON, NewAuditReport(audit.Report{ArgoCDNamespace: "argocd"})); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if rows, ok := m["rows"].([]any); !ok || len(rows) != 0 {
		t.Errorf("rows = %#v, want []", m["rows"])
	}
	for _, k := range []string{"softenedApplications", "warnings"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s present in %s", k, b.String())
		}
	}
	for k, want := range map[string]any{"unguarded": 0.0, "unguardedHigh": 0.0, "applicationsAudited": 0.0, "argocdNamespace": "argocd"} {
		if m[k] != want {
			t.Errorf("%s = %#v, want %#v", k, m[k], want)
		}
	}
}

func TestAuditTable(t *testing.T) {
	want := "" +
		"APPLICATION        RESOURCE                  DELETED                 RISK     CONTENTS                  GUARDS                          GUARDED\n" +
		"argocd/guestbook   Namespace/team-b          by any prune sync now   high     42 objects                Prune=confirm,AdmissionPolicy   yes\n" +
		"argocd/guestbook   ConfigMap/guestbook/old   by any prune sync now   normal   <none>                    <none>                          no\n" +
		"team-a/shop        PersistentVolume/data     when removed from git   high     <unreadable: forbidden>   <none>                          no\n" +
		"team-a/shop        Namespace/shop            when removed from git   high     3 objects                 App:Prune=false                 no\n"
	var b bytes.Buffer
	if err := AuditTable(&b, NewAuditReport(sampleAudit()), false); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != want {
		t.Errorf("AuditTable =\n%s\nwant\n%s", got, want)
	}
}

func TestAuditTableWide(t *testing.T) {
	want := "" +
		"APPLICATION        RESOURCE                  DELETED                 RISK     CONTENTS                  GUARDS                          GUARDED   WHY-RISKY                                       PROBE\n" +
		"argocd/guestbook   Namespace/team-b          by any prune sync now   high     42 objects                Prune=confirm,AdmissionPolicy   yes       deleting a namespace deletes everything in it   denied: protected\n" +
		"argocd/guestbook   ConfigMap/guestbook/old   by any prune sync now   normal   <none>                    <none>                          no        <none>                                          allowed: the API server would delete it\n" +
		"team-a/shop        PersistentVolume/data     when removed from git   high     <unreadable: forbidden>   <none>                          no        its data goes with it                           <none>\n" +
		"team-a/shop        Namespace/shop            when removed from git   high     3 objects                 App:Prune=false                 no        deleting a namespace deletes everything in it   allowed: the API server would delete it\n"
	var b bytes.Buffer
	if err := AuditTable(&b, NewAuditReport(sampleAudit()), true); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != want {
		t.Errorf("AuditTable wide =\n%s\nwant\n%s", got, want)
	}
}

func TestAuditTableEmpty(t *testing.T) {
	for wide, want := range map[bool]string{
		false: "APPLICATION   RESOURCE   DELETED   RISK   CONTENTS   GUARDS   GUARDED\n",
		true:  "APPLICATION   RESOURCE   DELETED   RISK   CONTENTS   GUARDS   GUARDED   WHY-RISKY   PROBE\n",
	} {
		var b bytes.Buffer
		if err := AuditTable(&b, NewAuditReport(audit.Report{}), wide); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != want {
			t.Errorf("AuditTable(empty, wide=%v) = %q, want %q", wide, got, want)
		}
	}
}

func TestAuditTableLiveErrorFirstLineOnly(t *testing.T) {
	doc := NewAuditReport(audit.Report{Rows: []audit.Row{{
		App:      cluster.Application{Namespace: "argocd", Name: "a"},
		Resource: cluster.Resource{Version: "v1", Kind: "Namespace", Name: "n"}, When: audit.Now, Risk: risk.High,
		LiveError: "first line\nsecond line",
	}}})
	var b bytes.Buffer
	if err := AuditTable(&b, doc, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<unreadable: first line>") || strings.Contains(b.String(), "second line") {
		t.Errorf("AuditTable = %q, want only the first line of the error", b.String())
	}
}
