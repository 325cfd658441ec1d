package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/lab"
)

// TestEveryRuleHasAMutant: each rule of internal/argocd/rules.go has a mutant, on a release the lab
// builds, and every mutant still applies to rules.go — so that `make test-mutants` moves every rule.
func TestEveryRuleHasAMutant(t *testing.T) {
	src, err := os.ReadFile("../../" + rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]bool{}
	for _, m := range mutants {
		moved[m.Rule] = true
		if !slices.Contains(lab.ArgoCDVersions, m.Release) {
			t.Errorf("mutant %s: release %s is not one the lab builds", m.Rule, m.Release)
		}
		if !strings.HasPrefix(m.Test, "Test") || !strings.Contains(m.Test, "{v}") {
			t.Errorf("mutant %s: row %q names no test per release", m.Rule, m.Test)
		}
		out := string(src)
		for _, e := range m.Edits {
			if out, err = apply(out, e); err != nil {
				t.Errorf("mutant %s: %v", m.Rule, err)
			}
		}
		if out == string(src) {
			t.Errorf("mutant %s changes nothing", m.Rule)
		}
	}
	for _, r := range argocd.Rules {
		if !moved[r.ID] {
			t.Errorf("rule %s has no mutant", r.ID)
		}
	}
	for _, m := range mutants {
		if !slices.ContainsFunc(argocd.Rules, func(r argocd.Rule) bool { return r.ID == m.Rule }) {
			t.Errorf("mutant of unknown rule %s", m.Rule)
		}
	}
	// Mutants of one release must touch rows no other mutant of that release touches.
	rows := map[string]string{}
	for _, m := range mutants {
		key := m.Release + " " + m.Test
		if other, ok := rows[key]; ok {
			t.Errorf("mutants %s and %s both target %s", other, m.Rule, key)
		}
		rows[key] = m.Rule
	}
}

// TestApplyRefusesAStaleMutant: an edit whose text is gone, or that would match twice, is an error.
func TestApplyRefusesAStaleMutant(t *testing.T) {
	src := "var (\n\tRuleA = Rule{\n\t\tFrom:    Line{3, 4},\n\t}\n\tRuleB = Rule{\n\t\tFrom:    Line{3, 4},\n\t}\n)\n"
	if got, err := apply(src, edit{"RuleB", "From:    Line{3, 4}", "From:    Line{3, 3}"}); err != nil || !strings.Contains(got, "RuleA = Rule{\n\t\tFrom:    Line{3, 4}") || !strings.Contains(got, "RuleB = Rule{\n\t\tFrom:    Line{3, 3}") {
		t.Errorf("apply to RuleB: %q, %v", got, err)
	}
	for _, e := range []edit{{"RuleC", "x", "y"}, {"RuleA", "Until:", "x"}} {
		if _, err := apply(src, e); err == nil {
			t.Errorf("apply %+v: no error", e)
		}
	}
}
