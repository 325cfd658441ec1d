// Command mutants shows that the lab's matrix rows catch a release rule encoded for the wrong line.
// Each mutant moves one rule of internal/argocd/rules.go across the boundary of a line the lab
// builds — app-level Prune= honoured on v3.3, the stale tracking-id diff taken away from v3.4.7, … —
// and names the matrix row that must then fail on that line, because unprune then disagrees with
// that line's real Argo CD.
//
// For each line, it writes the mutated rules.go beside a `go build -overlay` file, runs the rows
// its mutants target on that line alone (`go test -tags lab`, GOFLAGS=-overlay: the unprune binary
// the tests build carries the mutants too), and reads the outcome from `go test -json`. A mutant
// whose row passes survived: the matrix would not have caught that rule on the wrong line. Exit 1
// when one survives, 2 when a mutant no longer applies to rules.go.
//
// Mutants that target the same line touch rows that no other of them concerns, so that one run per
// line tells each apart. The unmutated matrix (`make test-matrix`) is the control: there the same
// cells pass.
//
//	go run ./hack/mutants [-lines "v3.3.14 v3.4.7"] [-keep DIR]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// edit replaces old with new inside the declaration of one rule variable.
type edit struct{ rule, old, new string }

// mutant moves a rule to the wrong side of a line's boundary.
type mutant struct {
	Rule    string // the rule's ID
	Wrong   string // what the mutant claims, in words
	Release string // the release whose row must fail
	Test    string // the row's test, {v} for the release
	Edits   []edit
}

var mutants = []mutant{
	{"app-level-prune-option", "app-level Prune= honoured from v3.3", "v3.3.14", "TestAppLevelPruneOption/{v}",
		[]edit{{"RuleAppLevelPrune", "From:    Line{3, 4}", "From:    Line{3, 3}"}}},
	{"app-level-delete-option", "app-level Delete= honoured from v3.3", "v3.3.14", "TestAppLevelDeleteOption/{v}",
		[]edit{{"RuleAppLevelDelete", "From:    Line{3, 4}", "From:    Line{3, 3}"}}},
	{"appset-flatten-string-maps", "string maps flattened from v3.3", "v3.3.14", "TestDifferentialApplicationSets/{v}",
		[]edit{{"RuleAppSetFlattenStringMaps", "From:    Line{3, 4}", "From:    Line{3, 3}"}}},
	{"stale-tracking-id-is-diff", "the stale tracking-id diff only from v3.4.8", "v3.4.7", "TestStaleTrackingID/{v}",
		[]edit{{"RuleStaleTrackingIsDiff", "{{3, 4}: 6}", "{{3, 4}: 8}"}}},
	{"appset-matrix-values-pre-resolved", "matrix values pre-resolved only from v3.4.8", "v3.4.7", "TestDifferentialApplicationSets/{v}",
		[]edit{{"RuleAppSetMatrixValuesPreResolved", "{{3, 4}: 4}", "{{3, 4}: 8}"}}},
	{"refresh-timestamp", "refresh-timestamp from v3.5", "v3.5.1", "TestRefreshIsConsumed/{v}",
		[]edit{{"RuleRefreshTimestamp", "From:    Line{3, 6}", "From:    Line{3, 5}"}}},
	{"resource-selectors", "resource.selectors read from v3.5", "v3.5.1", "TestResourceSelectorsHideACopy/{v}",
		[]edit{{"RuleResourceSelectors", "From:    Line{3, 6}", "From:    Line{3, 5}"}}},
	{"installation-id-when-configured", "the installation-id fix from v3.5", "v3.5.1", "TestForeignInstallationID/{v}",
		[]edit{{"RuleInstallationIDWhenConfigured", "From:    Line{3, 6}", "From:    Line{3, 5}"},
			{"RuleInstallationIDMustEqual", "Until:   Line{3, 6}", "Until:   Line{3, 5}"}}},
	{"installation-id-must-equal", "the installation-id precedence bug only from v2.15", "v2.14.11", "TestForeignInstallationID/{v}",
		[]edit{{"RuleInstallationIDMustEqual", "From:    Line{2, 13}", "From:    Line{2, 15}"}}},
	{"annotation-tracking-default", "annotation tracking the default from v3.1", "v3.0.23", "TestDetach/{v}/default-tracking",
		[]edit{{"RuleAnnotationDefault", "From:    Line{3, 0}", "From:    Line{3, 1}"}}},
	{"forced-replace-dry-run-is-dry", "a forced sync's dry run left alone on every line", "v2.14.11", "TestForceReplaceOfASharedObject/{v}",
		[]edit{{"RuleForcedReplaceDryRunIsDry", "From:    Line{3, 2}", "From:    Line{2, 14}"}}},
	{"appset-files-exclude", "the files generator's exclude from v3.2", "v3.1.16", "TestDifferentialApplicationSets/{v}",
		[]edit{{"RuleAppSetFilesExclude", "From:    Line{3, 1}", "From:    Line{3, 2}"}}},
}

const rulesFile = "internal/argocd/rules.go"

func main() {
	only := flag.String("lines", "", "run only the mutants of these releases (space-separated); default all")
	keep := flag.String("keep", "", "write the mutated sources and the go test -json streams here (default: a temporary directory, removed)")
	flag.Parse()
	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "unprune-mutants-")
		if err != nil {
			fail(2, err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		fail(2, fmt.Errorf("%v (run from the repository root)", err))
	}
	byRelease := map[string][]mutant{}
	for _, m := range mutants {
		if *only == "" || slices.Contains(strings.Fields(*only), m.Release) {
			byRelease[m.Release] = append(byRelease[m.Release], m)
		}
	}
	releases := make([]string, 0, len(byRelease))
	for r := range byRelease {
		releases = append(releases, r)
	}
	sort.Strings(releases)
	survived := 0
	fmt.Println("| rule | moved to the wrong line | release | row | outcome |")
	fmt.Println("|---|---|---|---|---|")
	for _, release := range releases {
		ms := byRelease[release]
		results, err := run(dir, release, src, ms)
		if err != nil {
			fail(2, err)
		}
		for _, m := range ms {
			test := strings.ReplaceAll(m.Test, "{v}", release)
			outcome := results[test]
			verdict := "fails: caught"
			if outcome != "fail" {
				survived++
				verdict = fmt.Sprintf("**%s: survived**", orNone(outcome))
			}
			fmt.Printf("| %s | %s | %s | %s | %s |\n", m.Rule, m.Wrong, release, test, verdict)
		}
	}
	if survived > 0 {
		fmt.Fprintf(os.Stderr, "mutants: %d rule(s) on the wrong line went unnoticed\n", survived)
		os.Exit(1)
	}
}

// run mutates rules.go with every mutant of one release and runs their rows on that release.
func run(dir, release string, src []byte, ms []mutant) (map[string]string, error) {
	mutated := string(src)
	for _, m := range ms {
		for _, e := range m.Edits {
			var err error
			if mutated, err = apply(mutated, e); err != nil {
				return nil, fmt.Errorf("mutant %s: %v", m.Rule, err)
			}
		}
	}
	abs, err := filepath.Abs(rulesFile)
	if err != nil {
		return nil, err
	}
	mutant := filepath.Join(dir, release, "rules.go")
	if err := os.MkdirAll(filepath.Dir(mutant), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(mutant, []byte(mutated), 0o644); err != nil {
		return nil, err
	}
	overlay := filepath.Join(dir, release, "overlay.json")
	doc, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutant}})
	if err := os.WriteFile(overlay, doc, 0o644); err != nil {
		return nil, err
	}
	var tops []string
	for _, m := range ms {
		top, _, _ := strings.Cut(m.Test, "/")
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	stream, err := os.Create(filepath.Join(dir, release, "test.json"))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	cmd := exec.Command("go", "test", "-count=1", "-tags", "lab", "-timeout", "40m", "-json",
		"-run", "^("+strings.Join(tops, "|")+")$/^"+strings.ReplaceAll(release, ".", `\.`)+"$", "./test/e2e/")
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -overlay="+overlay), "UNPRUNE_LAB_MATRIX="+release)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "mutants: %s: %d mutant(s), rows %s\n", release, len(ms), strings.Join(tops, ", "))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results := read(io.TeeReader(out, stream))
	// A failing row is what a mutant should cause: go test's exit status says nothing more.
	_ = cmd.Wait()
	return results, nil
}

// apply makes one edit inside the declaration of e.rule, which must hold e.old exactly once.
func apply(src string, e edit) (string, error) {
	start := strings.Index(src, "\t"+e.rule+" = Rule{")
	if start < 0 {
		return "", fmt.Errorf("%s is not declared in %s", e.rule, rulesFile)
	}
	end := strings.Index(src[start:], "\n\t}\n")
	if end < 0 {
		return "", fmt.Errorf("%s: end of its declaration not found", e.rule)
	}
	decl := src[start : start+end]
	if strings.Count(decl, e.old) != 1 {
		return "", fmt.Errorf("%s does not hold %q exactly once: the mutant is out of date", e.rule, e.old)
	}
	return src[:start] + strings.Replace(decl, e.old, e.new, 1) + src[start+end:], nil
}

// read folds `go test -json` into each test's last pass, fail or skip.
func read(r io.Reader) map[string]string {
	results := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct{ Action, Test string }
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "pass", "fail", "skip":
			results[e.Test] = e.Action
		}
	}
	return results
}

func orNone(s string) string {
	if s == "" {
		return "did not run"
	}
	return s
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	os.Exit(code)
}
