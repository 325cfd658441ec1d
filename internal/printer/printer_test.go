package printer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/scan"
)

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                         "plain",
		"esc\x1b[31mred":                `esc\x1b[31mred`,
		"multi\nline\ttab":              `multi\nline\ttab`,
		"bidi\u202eevil":                `bidi\u202eevil`,
		"ünïcode ✓":                     "ünïcode ✓",
		strings.Repeat("x", maxCell+10): strings.Repeat("x", maxCell) + "…(522 bytes)",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnifiedDiffIsWhatDiffSays: the preview's diff is a real unified diff — the same hunks as
// `diff -u` would print for the same lines.
func TestUnifiedDiffIsWhatDiffSays(t *testing.T) {
	live := map[string]string{"a": "1", "argocd.argoproj.io/tracking-id": "app:/Namespace:default/x", "z": "26"}
	labels := map[string]string{"app.kubernetes.io/instance": "app", "team": "storage"}
	changes := []journal.Change{
		journal.Removal(journal.FieldLabel, "app.kubernetes.io/instance", "app"),
		journal.Removal(journal.FieldAnnotation, "argocd.argoproj.io/tracking-id", "app:/Namespace:default/x"),
	}
	before := MetadataLines(labels, live, nil)
	after := MetadataLines(labels, live, changes)
	got := UnifiedDiff("x", before, after)
	if !strings.Contains(got, "@@ -1,8 +1,6 @@") || !strings.Contains(got, `-    argocd.argoproj.io/tracking-id: "app:/Namespace:default/x"`) {
		t.Fatalf("diff:\n%s", got)
	}
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("no diff program to compare with")
	}
	dir := t.TempDir()
	write := func(name string, lines []string) string {
		p := dir + "/" + name
		if err := writeFile(p, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, _ := exec.Command(diff, "-u", write("a", before), write("b", after)).Output()
	wantHunks := hunks(string(out))
	if gotHunks := hunks(got); gotHunks != wantHunks {
		t.Fatalf("hunks differ from diff -u:\n got:\n%s\nwant:\n%s", gotHunks, wantHunks)
	}
}

func hunks(s string) string {
	i := strings.Index(s, "@@")
	return s[i:]
}

func TestMetadataLinesHideEmbeddedConfiguration(t *testing.T) {
	secret := `{"data":{"password":"aHVudGVyMg=="}}`
	lines := strings.Join(MetadataLines(nil, map[string]string{"kubectl.kubernetes.io/last-applied-configuration": secret}, nil), "\n")
	if strings.Contains(lines, "aHVudGVyMg") {
		t.Fatalf("the embedded configuration is shown:\n%s", lines)
	}
}

func TestTemplateOutput(t *testing.T) {
	o, err := ParseOutput("jsonpath={.items[*].resource.name}", true, false)
	if err != nil {
		t.Fatal(err)
	}
	doc := ScanReport{APIVersion: APIVersion, Kind: "ScanReport", Items: []ScanItem{{Resource: ResourceRef{Kind: "Namespace", Name: "a"}}, {Resource: ResourceRef{Kind: "Namespace", Name: "b"}}}}
	var b bytes.Buffer
	if err := o.Print(&b, doc, doc.Names); err != nil {
		t.Fatal(err)
	}
	if b.String() != "a b" {
		t.Fatalf("jsonpath printed %q", b.String())
	}
	o, _ = ParseOutput("name", true, false)
	b.Reset()
	_ = o.Print(&b, doc, doc.Names)
	if b.String() != "namespace/a\nnamespace/b\n" {
		t.Fatalf("-o name printed %q", b.String())
	}
}

// TestTemplateOutputEscapesClusterValues: a value read from a cluster reaches the terminal through
// -o jsonpath and -o go-template escaped exactly as a table cell, while the template's own newlines
// and tabs stay, and jsonpath-as-json stays valid JSON.
func TestTemplateOutputEscapesClusterValues(t *testing.T) {
	const hostile = "web\x1b[31mred\r"
	want := Safe(hostile)
	if want != `web\x1b[31mred\r` {
		t.Fatalf("Safe(%q) = %q: the test's expectation no longer holds", hostile, want)
	}
	doc := ScanReport{APIVersion: APIVersion, Kind: "ScanReport", Items: []ScanItem{{Resource: ResourceRef{Kind: "ConfigMap", Name: hostile}}}}
	for _, tt := range []struct{ output, want string }{
		{"jsonpath={.items[*].resource.name}", want},
		{`jsonpath={range .items[*]}{.resource.kind}{"\t"}{.resource.name}{"\n"}{end}`, "ConfigMap\t" + want + "\n"},
		{"go-template={{range .items}}{{.resource.name}}\n{{end}}", want + "\n"},
	} {
		o, err := ParseOutput(tt.output, false, false)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := o.Print(&b, doc, doc.Names); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("-o %s printed %q, want %q", tt.output, b.String(), tt.want)
		}
	}
	o, err := ParseOutput("jsonpath-as-json={.items[*].resource.name}", false, false)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := o.Print(&b, doc, doc.Names); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal(b.Bytes(), &names); err != nil || len(names) != 1 || names[0] != want {
		t.Errorf("-o jsonpath-as-json printed %q (%v), want a JSON list of %q", b.String(), err, want)
	}
}

// TestEscapeStrings: keys are escaped too (a template may print label keys), numbers are left
// alone, and long values are not cut as table cells are.
func TestEscapeStrings(t *testing.T) {
	long := strings.Repeat("x", maxCell+10)
	got := escapeStrings(map[string]any{"k\x1b": []any{"v\r", int64(1), map[string]any{"long": long}}})
	want := map[string]any{`k\x1b`: []any{`v\r`, int64(1), map[string]any{"long": long}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("escapeStrings = %#v, want %#v", got, want)
	}
}

func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o600)
}

// TestStreamedJSONIsPrinted: scan -o json written an item at a time is byte for byte what the whole
// document printed with -o json is, for no items, one, and several holding what escapes in JSON.
func TestStreamedJSONIsPrinted(t *testing.T) {
	meta := Metadata{GeneratedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ToolVersion: "v1 <dev>",
		Cluster: &ClusterRef{Name: "in-cluster", Server: "https://127.0.0.1:6443"}}
	finding := func(i int, app, name string) scan.Finding {
		return scan.Finding{
			App:      &argocd.Application{Namespace: "argocd", Name: app, AutoPrune: i%2 == 0},
			Instance: app, Cluster: &cluster.Info{Name: "in-cluster", Server: argocd.InClusterServer},
			Resource: argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "ns-" + app, Name: name, RequiresPruning: true},
			Tracking: []argocd.Field{{Kind: argocd.FieldAnnotation, Key: "argocd.argoproj.io/tracking-id", Value: app + ":/ConfigMap:ns/" + name}},
			Risk:     risk.High, RiskWhy: "a <Namespace> & its \"data\"\n\u2028✓", Guards: []risk.Guard{risk.GuardPruneDisabled},
			Notes: []string{"note\twith tab", "\x1b[31mred"}, Ownership: "tracked by " + app,
		}
	}
	settings := argocd.Settings{Method: "annotation", MethodSource: "argocd-cm", InstanceLabelKey: "app.kubernetes.io/instance",
		Version: &argocd.Version{Major: 3, Minor: 6, Patch: 1}}
	reports := map[string]scan.Report{
		"none": {Settings: settings, ArgoCDNamespace: "argocd", AppsScanned: 3},
		"one":  {Settings: settings, ArgoCDNamespace: "argocd", AppsScanned: 1, Findings: []scan.Finding{finding(0, "a", "x")}},
		"several": {Settings: argocd.Settings{Ambiguous: true, MethodSource: "unknown"}, ArgoCDNamespace: "argocd", AppsScanned: 9,
			Warnings: []string{"forbidden to read <x>", "ünïcode"},
			Findings: []scan.Finding{finding(0, "a", "x"), finding(1, "b", "y"), {App: &argocd.Application{Name: "gone"}, Cluster: &cluster.Info{Name: "prod", Server: "https://prod"},
				Resource: argocd.Resource{Kind: "Namespace", Name: "z"}, LiveError: "namespaces \"z\" not found"}}},
	}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			var printed, streamed bytes.Buffer
			if err := (Output{Format: JSON}).Print(&printed, NewScanReport(meta, r), nil); err != nil {
				t.Fatal(err)
			}
			if err := ScanJSON(&streamed, meta, r); err != nil {
				t.Fatal(err)
			}
			if streamed.String() != printed.String() {
				t.Fatalf("streamed:\n%s\nprinted:\n%s", streamed.String(), printed.String())
			}
		})
	}
}
