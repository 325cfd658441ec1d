package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
)

func TestMatrixFoldsSubtestsPerRelease(t *testing.T) {
	events := strings.Join([]string{
		`{"Time":"2026-12-02T12:00:00Z","Action":"start","Package":"e2e"}`,
		`{"Time":"2026-12-02T12:00:01Z","Action":"pass","Package":"e2e","Test":"TestDetach/v3.2.11/label"}`,
		`{"Time":"2026-12-02T12:00:02Z","Action":"fail","Package":"e2e","Test":"TestDetach/v3.2.11/annotation"}`,
		`{"Time":"2026-12-02T12:00:02Z","Action":"pass","Package":"e2e","Test":"TestDetach/v3.2.11/annotation+label"}`,
		`{"Time":"2026-12-02T12:00:03Z","Action":"pass","Package":"e2e","Test":"TestForeignInstallationID/v2.14.11"}`,
		`{"Time":"2026-12-02T12:00:03Z","Action":"skip","Package":"e2e","Test":"TestStaleTrackingID/v2.14.11"}`,
		`{"Time":"2026-12-02T12:00:04Z","Action":"pass","Package":"e2e","Test":"TestMoveThroughPrepare/v2.14.11/label"}`,
		`{"Time":"2026-12-02T12:00:04Z","Action":"fail","Package":"e2e","Test":"TestMoveThroughPrepare/v2.14.11/annotation"}`,
		`{"Time":"2026-12-02T12:01:30Z","Action":"fail","Package":"e2e"}`,
	}, "\n")
	m, err := read(strings.NewReader(events), []string{"v2.14.11", "v3.2.11"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		capability, line string
		want             cell
	}{
		{"tracking `label`: scan, detach, Synced", "v3.2", pass},
		// "annotation" must not take in "annotation+label"'s pass, nor the reverse.
		{"tracking `annotation`: scan, detach, Synced", "v3.2", fail},
		{"tracking `annotation+label`: scan, detach, Synced", "v3.2", pass},
		{"tracking `label`: scan, detach, Synced", "v2.14", na},
		{"foreign installation-id, none configured", "v2.14", pass},
		{"stale tracking-id: Synced or a diff (#28770)", "v2.14", na},
		{"move: prepare, commit, move", "v2.14", fail},
	} {
		if got := m.cells[c.capability][c.line]; got != c.want {
			t.Errorf("%s on %s: %s, want %s", c.capability, c.line, got, c.want)
		}
	}
	if !m.failed() {
		t.Errorf("a failed cell does not fail the matrix")
	}
	var out strings.Builder
	m.print(&out)
	for _, want := range []string{
		"`make test-matrix`, 2026-12-02 12:00 UTC, 1m30s wall",
		"| capability | v2.14.11 | v3.2.11 |\n",
		"| tracking `annotation`: scan, detach, Synced | n/a | **FAIL** |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the matrix lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunPatternNamesEveryTest(t *testing.T) {
	re := regexp.MustCompile(pattern())
	for _, c := range capabilities {
		for _, test := range c.Tests {
			top, _, _ := strings.Cut(test, "/")
			if !re.MatchString(top) {
				t.Errorf("-run %s does not select %s", pattern(), top)
			}
		}
	}
	if re.MatchString("TestDetachKubeSystem") {
		t.Errorf("-run %s selects TestDetachKubeSystem, which the matrix does not read", pattern())
	}
}

// TestEveryRowsTestRunsPerLine: each test a row reads exists and takes its releases from
// labtest.Lines, so UNPRUNE_LAB_MATRIX reaches it.
func TestEveryRowsTestRunsPerLine(t *testing.T) {
	var sources strings.Builder
	for _, dir := range []string{"../../test/e2e", "../../lab/labtest"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources.Write(b)
		}
	}
	// A test may take its releases through a helper whose own body calls labtest.Lines.
	perLine := []string{"labtest.Lines("}
	for _, f := range regexp.MustCompile(`(?s)\nfunc (\w+)\([^\n]*\{\n(.*?)\n\}\n`).FindAllStringSubmatch(sources.String(), -1) {
		if strings.Contains(f[2], "labtest.Lines(") {
			perLine = append(perLine, f[1]+"(")
		}
	}
	for _, c := range capabilities {
		for _, test := range c.Tests {
			top, _, _ := strings.Cut(test, "/")
			body := regexp.MustCompile(`(?s)\nfunc ` + top + `\(t \*testing\.T\) \{\n(.*?)\n\}\n`).FindStringSubmatch(sources.String())
			if body == nil {
				t.Errorf("row %q reads %s, which does not exist", c.Name, top)
				continue
			}
			if !slices.ContainsFunc(perLine, func(call string) bool { return strings.Contains(body[1], call) }) {
				t.Errorf("%s does not take its releases from labtest.Lines", top)
			}
		}
	}
}

// TestEveryRuleHasARow: each version-dependent rule unprune encodes is put to the test on every line
// by a row, so that applying it to the wrong line fails that row there.
func TestEveryRuleHasARow(t *testing.T) {
	rows := map[string]string{}
	for _, c := range capabilities {
		for _, id := range c.Rules {
			rows[id] = c.Name
		}
	}
	for _, r := range argocd.Rules {
		if _, ok := rows[r.ID]; !ok {
			t.Errorf("rule %s (%s) has no row in the matrix", r.ID, r.Summary)
		}
		delete(rows, r.ID)
	}
	for id, row := range rows {
		t.Errorf("row %q names rule %s, which argocd.Rules does not hold", row, id)
	}
}
