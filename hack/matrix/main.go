// Command matrix turns the `go test -json` output of the lab tests whose outcome depends on Argo
// CD's release into a matrix, release line × capability: pass, fail or n/a (the test ran no subtest
// for that line, or skipped it). `make test-matrix` runs the tests on every line the lab builds
// (UNPRUNE_LAB_MATRIX) and pipes them here.
//
//	matrix -run-pattern            the -run regexp naming every test the matrix reads
//	matrix -lines "v3.6.1 …" <json  the matrix, as a Markdown table; exit 1 when a cell failed
//
// Tests name their subtests by release first ("TestForeignInstallationID/v3.2.11"), so a cell is
// every test event under "<test>/<version>" (or "<test>/<version>/<variant>" for one variant).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/lab"
)

// capability is one row: what it proves, the subtests that prove it, {v} standing for the release,
// and the rules of internal/argocd/rules.go it puts to the test — applied to the wrong line, a rule
// makes unprune disagree with that line's Argo CD, and the row fails there.
type capability struct {
	Name  string
	Tests []string
	Rules []string
}

// capabilities are the matrix's rows: every behaviour of Argo CD that unprune models and that
// differs, or could differ, between release lines. Every rule of argocd.Rules has a row.
var capabilities = []capability{
	{"tracking `label`: scan, detach, Synced", []string{"TestDetach/{v}/label"}, nil},
	{"tracking `annotation`: scan, detach, Synced", []string{"TestDetach/{v}/annotation"}, nil},
	{"tracking `annotation+label`: scan, detach, Synced", []string{"TestDetach/{v}/annotation+label"}, nil},
	{"default tracking method of the release", []string{"TestDetach/{v}/default-tracking"}, []string{argocd.RuleAnnotationDefault.ID}},
	{"foreign installation-id, none configured", []string{"TestForeignInstallationID/{v}"},
		[]string{argocd.RuleInstallationIDMustEqual.ID, argocd.RuleInstallationIDWhenConfigured.ID}},
	{"hooks listed as requiring pruning, left alone", []string{"TestHooksAreLeftAlone/{v}"}, nil},
	{"app-level `Prune=false` on a prune sync", []string{"TestAppLevelPruneOption/{v}"}, []string{argocd.RuleAppLevelPrune.ID}},
	{"app-level `Delete=false` on a cascade", []string{"TestAppLevelDeleteOption/{v}"}, []string{argocd.RuleAppLevelDelete.ID}},
	{"refresh request consumed, nothing left on the app", []string{"TestRefreshIsConsumed/{v}"}, []string{argocd.RuleRefreshTimestamp.ID}},
	{"stale tracking-id: Synced or a diff (#28770)", []string{"TestStaleTrackingID/{v}"}, []string{argocd.RuleStaleTrackingIsDiff.ID}},
	{"cascade: `--strategy keep` survives, the rest goes", []string{"TestKeepSurvivesCascadeDeletion/{v}"}, nil},
	{"ApplicationSets: 39 sets, Argo CD's controller and unprune generate the same", []string{"TestDifferentialApplicationSets/{v}"},
		[]string{argocd.RuleAppSetFlattenStringMaps.ID, argocd.RuleAppSetMatrixValuesPreResolved.ID, argocd.RuleAppSetFilesExclude.ID}},
	{"move: prepare, commit, move", []string{"TestMoveThroughPrepare/{v}"}, nil},
	{"check predicts the incident", []string{"TestCheckPredictsTheIncident/{v}"}, nil},
	{"watch: counts, announces, releases", []string{"TestWatchAcrossReleases/{v}"}, nil},
	{"repo-server: its helm and kustomize", []string{"TestHelmAndKustomize/{v}"}, nil},
	{"`resource.selectors` hide objects from the cascade (v3.6+)", []string{"TestResourceSelectorsHideACopy/{v}"}, []string{argocd.RuleResourceSelectors.ID}},
	{"forced sync with `Replace=true`: a shared object recreated (in the dry run too, before #623's fix), a guarded one kept",
		[]string{"TestForceReplaceOfASharedObject/{v}"}, []string{argocd.RuleForcedReplaceDryRunIsDry.ID}},
}

// lines are the release lines the matrix shows, oldest first; built ones carry the release.
var lines = []string{"v2.14", "v3.0", "v3.1", "v3.2", "v3.3", "v3.4", "v3.5", "v3.6"}

func main() {
	runPattern := flag.Bool("run-pattern", false, "print the go test -run regexp naming the matrix's tests")
	built := flag.String("lines", strings.Join(lab.ArgoCDVersions, " "), "the releases the tests ran on (space-separated)")
	flag.Parse()
	if *runPattern {
		fmt.Println(pattern())
		return
	}
	m, err := read(os.Stdin, strings.Fields(*built))
	if err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(2)
	}
	m.print(os.Stdout)
	if m.failed() {
		os.Exit(1)
	}
}

// pattern is the -run regexp of every top-level test the capabilities name.
func pattern() string {
	seen := map[string]bool{}
	var names []string
	for _, c := range capabilities {
		for _, t := range c.Tests {
			top, _, _ := strings.Cut(t, "/")
			if !seen[top] {
				seen[top] = true
				names = append(names, top)
			}
		}
	}
	sort.Strings(names)
	return "^(" + strings.Join(names, "|") + ")$"
}

// event is one line of `go test -json`.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Output  string
}

// cell is a capability's outcome on one release.
type cell string

const (
	pass cell = "pass"
	fail cell = "**FAIL**"
	na   cell = "n/a"
)

type matrix struct {
	releases     map[string]string // line → release built
	cells        map[string]map[string]cell
	start, end   time.Time
	packagesFail []string
}

func read(r io.Reader, built []string) (*matrix, error) {
	m := &matrix{releases: map[string]string{}, cells: map[string]map[string]cell{}}
	for _, v := range built {
		m.releases[lineOf(v)] = v
	}
	results := map[string]string{} // test name → pass/fail/skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // go test prints build errors as plain text
		}
		if m.start.IsZero() || e.Time.Before(m.start) {
			m.start = e.Time
		}
		if e.Time.After(m.end) {
			m.end = e.Time
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test != "" {
				results[e.Test] = e.Action
			} else if e.Action == "fail" {
				m.packagesFail = append(m.packagesFail, e.Package)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, c := range capabilities {
		m.cells[c.Name] = map[string]cell{}
		for line, v := range m.releases {
			m.cells[c.Name][line] = outcome(results, c.Tests, v)
		}
	}
	return m, nil
}

// outcome folds every result under the capability's tests for release v: any failure fails the
// cell; no result, or only skips, is n/a.
func outcome(results map[string]string, tests []string, v string) cell {
	passed, failed := false, false
	for _, t := range tests {
		prefix := strings.ReplaceAll(t, "{v}", v)
		for name, r := range results {
			if name != prefix && !strings.HasPrefix(name, prefix+"/") {
				continue
			}
			switch r {
			case "pass":
				passed = true
			case "fail":
				failed = true
			}
		}
	}
	switch {
	case failed:
		return fail
	case passed:
		return pass
	}
	return na
}

// lineOf is a release's line: "v3.2.11" → "v3.2".
func lineOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func (m *matrix) failed() bool {
	if len(m.packagesFail) > 0 {
		return true
	}
	for _, row := range m.cells {
		for _, c := range row {
			if c == fail {
				return true
			}
		}
	}
	return false
}

func (m *matrix) print(w io.Writer) {
	fmt.Fprintf(w, "`make test-matrix`, %s UTC, %s wall\n\n", m.start.UTC().Format("2006-01-02 15:04"), m.end.Sub(m.start).Round(time.Second))
	header := []string{"capability"}
	for _, line := range lines {
		if v, ok := m.releases[line]; ok {
			header = append(header, v)
		}
	}
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(header)))
	for _, c := range capabilities {
		row := []string{c.Name}
		for _, line := range lines {
			if _, ok := m.releases[line]; ok {
				row = append(row, string(m.cells[c.Name][line]))
			}
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
	if len(m.packagesFail) > 0 {
		fmt.Fprintf(w, "\nfailed packages: %s\n", strings.Join(m.packagesFail, ", "))
	}
}
