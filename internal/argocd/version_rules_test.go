package argocd

import (
	"slices"
	"strings"
	"testing"
)

// TestRulesPerReleaseLine: each rule on the releases around its changes, line by line; a rule
// backported at a patch must not leak into that line's earlier patches, nor into a line that never
// got it.
func TestRulesPerReleaseLine(t *testing.T) {
	releases := []string{"v2.11.11", "v2.11.12", "v2.12.11", "v2.12.12", "v2.13.0", "v2.14.11", "v3.0.15", "v3.0.16", "v3.0.23", "v3.1.3", "v3.1.4", "v3.1.16", "v3.2.0", "v3.2.12",
		"v3.3.19", "v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"}
	want := map[string][]string{
		RuleAnnotationDefault.ID:             {"v3.0.15", "v3.0.16", "v3.0.23", "v3.1.3", "v3.1.4", "v3.1.16", "v3.2.0", "v3.2.12", "v3.3.19", "v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleInstallationIDMustEqual.ID:       {"v2.11.12", "v2.12.12", "v2.13.0", "v2.14.11", "v3.0.15", "v3.0.16", "v3.0.23", "v3.1.3", "v3.1.4", "v3.1.16", "v3.2.0", "v3.2.12", "v3.3.19", "v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7"},
		RuleInstallationIDWhenConfigured.ID:  {"v3.6.0", "v3.6.1"},
		RuleAppLevelPrune.ID:                 {"v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleAppLevelDelete.ID:                {"v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleStaleTrackingIsDiff.ID:           {"v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleRefreshTimestamp.ID:              {"v3.6.0", "v3.6.1"},
		RuleResourceSelectors.ID:             {"v3.6.0", "v3.6.1"},
		RuleAppSetFlattenStringMaps.ID:       {"v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleAppSetMatrixValuesPreResolved.ID: {"v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleForcedReplaceDryRunIsDry.ID:      {"v3.0.16", "v3.0.23", "v3.1.4", "v3.1.16", "v3.2.0", "v3.2.12", "v3.3.19", "v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
		RuleAppSetFilesExclude.ID:            {"v3.1.3", "v3.1.4", "v3.1.16", "v3.2.0", "v3.2.12", "v3.3.19", "v3.4.0", "v3.4.3", "v3.4.4", "v3.4.5", "v3.4.6", "v3.4.13", "v3.5.0", "v3.5.7", "v3.6.0", "v3.6.1"},
	}
	for _, r := range Rules {
		if r.Source == "" || r.Summary == "" {
			t.Errorf("rule %s names no Argo CD source or summary", r.ID)
		}
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("rule %s is not in this table", r.ID)
			continue
		}
		for _, s := range releases {
			v, err := ParseVersion(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Applies(v); got != slices.Contains(w, s) {
				t.Errorf("%s on %s: %t", r.ID, s, got)
			}
		}
	}
}

func TestRulesOf(t *testing.T) {
	for v, want := range map[Version]string{
		{2, 14, 11}: "installation-id-must-equal",
		{3, 4, 6}:   "annotation-tracking-default installation-id-must-equal app-level-prune-option app-level-delete-option stale-tracking-id-is-diff forced-replace-dry-run-is-dry appset-flatten-string-maps appset-matrix-values-pre-resolved appset-files-exclude",
		{3, 6, 1}:   "annotation-tracking-default installation-id-when-configured app-level-prune-option app-level-delete-option stale-tracking-id-is-diff refresh-timestamp resource-selectors forced-replace-dry-run-is-dry appset-flatten-string-maps appset-matrix-values-pre-resolved appset-files-exclude",
	} {
		if got := strings.Join(RulesOf(v), " "); got != want {
			t.Errorf("RulesOf(%s) = %s, want %s", v, got, want)
		}
	}
}

func TestRulesLine(t *testing.T) {
	v := Version{2, 14, 11}
	if got, want := NewSettings(nil, &v).RulesLine(), "Argo CD v2.14.11, release line v2.14: rules installation-id-must-equal"; got != want {
		t.Errorf("RulesLine() = %q, want %q", got, want)
	}
	if got := NewSettings(nil, nil).RulesLine(); got != "" {
		t.Errorf("RulesLine() without a version = %q; the backend's warning says it is unknown", got)
	}
}
