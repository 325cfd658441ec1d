package argocd

// Rule is a behaviour of Argo CD that unprune models and that some releases have and others not.
// It is kept per release line, the way Argo CD ships a change: a fix merged to master lands in the
// next minor release and is sometimes cherry-picked into older lines at some patch, so "from
// v3.4.6" and "from v3.5.0" are two facts, not one interval.
type Rule struct {
	// ID names the rule in output and tests.
	ID string
	// Summary says what a release that follows the rule does.
	Summary string
	// Source is the Argo CD file (and pull request) that decides it, as read in each release.
	Source string
	// Patches: lines that got the rule in a patch release, each with its first patch.
	Patches map[Line]int
	// From: every line from this one on follows the rule from its first release (zero: none).
	From Line
	// Until: the first line that no longer follows it (zero: every line from From does).
	Until Line
}

// Applies reports whether release v follows the rule.
func (r Rule) Applies(v Version) bool {
	line := v.Line()
	if r.Until != (Line{}) && !line.less(r.Until) {
		return false
	}
	if first, ok := r.Patches[line]; ok {
		return v.Patch >= first
	}
	return r.From != (Line{}) && !line.less(r.From)
}

func (l Line) less(o Line) bool {
	if l.Major != o.Major {
		return l.Major < o.Major
	}
	return l.Minor < o.Minor
}

// The version-dependent rules. Each was read in the source of the releases named; the lab proves
// the ones its releases can show (`make test-matrix`, docs/compatibility.md's matrix).
var (
	RuleAnnotationDefault = Rule{
		ID:      "annotation-tracking-default",
		Summary: "with no application.resourceTrackingMethod, tracking is by annotation (before: by label)",
		Source:  "util/settings/settings.go GetTrackingMethod",
		From:    Line{3, 0},
	}
	RuleInstallationIDMustEqual = Rule{
		ID: "installation-id-must-equal",
		Summary: "an object's installation-id annotation must equal the configured installationID, both possibly empty: " +
			"with none configured, an object carrying any installation-id is not tracked (operator-precedence bug)",
		Source:  "util/argo/resource_tracking.go getAppInstanceValue",
		Patches: map[Line]int{{2, 11}: 12, {2, 12}: 12},
		From:    Line{2, 13},
		Until:   Line{3, 6},
	}
	RuleInstallationIDWhenConfigured = Rule{
		ID:      "installation-id-when-configured",
		Summary: "the installation-id annotation is compared only when an installationID is configured",
		Source:  "util/argo/resource_tracking.go getAppInstanceValue (argo-cd #28852, not backported)",
		From:    Line{3, 6},
	}
	RuleAppLevelPrune = Rule{
		ID:      "app-level-prune-option",
		Summary: "the app's syncOptions Prune=false|confirm guard a prune; an object's own Prune= entry (its first) overrides them",
		Source:  "gitops-engine pkg/sync/sync_context.go WithDefaultPruneOption (argo-cd #23370)",
		From:    Line{3, 4},
	}
	RuleAppLevelDelete = Rule{
		ID:      "app-level-delete-option",
		Summary: "the app's syncOptions Delete=false|confirm guard the cascade; an object's own Delete= entry (its first) overrides them",
		Source:  "controller/appcontroller.go shouldBeDeleted, controller/state.go isObjRequiresDeletionConfirmation (argo-cd #23370)",
		From:    Line{3, 4},
	}
	RuleStaleTrackingIsDiff = Rule{
		ID: "stale-tracking-id-is-diff",
		Summary: "a live object whose tracking-id names another app is OutOfSync in the app declaring it, even with the instance label " +
			"(before, the label made Argo CD backfill the annotation and show it Synced)",
		Source:  "util/argo/resource_tracking.go Normalize (argo-cd #28770)",
		Patches: map[Line]int{{3, 4}: 6},
		From:    Line{3, 5},
	}
	RuleResourceSelectors = Rule{
		ID:      "resource-selectors",
		Summary: "argocd-cm resource.selectors narrow the objects the controller caches: an object a selector leaves out is never an app's",
		Source:  "util/settings/settings.go GetResourcesFilter, gitops-engine pkg/cache/cluster.go (ListOptions.LabelSelector)",
		From:    Line{3, 6},
	}
	RuleRefreshTimestamp = Rule{
		ID:      "refresh-timestamp",
		Summary: "a refresh requested during a comparison carries argocd.argoproj.io/refresh-timestamp and survives it",
		Source:  "util/argo/argo.go RefreshApp",
		From:    Line{3, 6},
	}
	RuleForcedReplaceDryRunIsDry = Rule{
		ID: "forced-replace-dry-run-is-dry",
		Summary: "a forced sync's dry run leaves an object synced with Replace=true alone (before, it deleted and created it " +
			"for real: kubectl's forced replace ignored the dry run, so the object was recreated even when the sync then failed)",
		Source:  "gitops-engine pkg/utils/kube/resource_ops.go newReplaceOptions (gitops-engine #623, fixed 2025-09-05)",
		Patches: map[Line]int{{3, 0}: 16, {3, 1}: 4},
		From:    Line{3, 2},
	}
	RuleAppSetFlattenStringMaps = Rule{
		ID:      "appset-flatten-string-maps",
		Summary: "without goTemplate, ApplicationSet parameters that are maps of strings are flattened too",
		Source:  "applicationset/utils/utils.go normalizeMapForFlatten",
		From:    Line{3, 4},
	}
	RuleAppSetFilesExclude = Rule{
		ID:      "appset-files-exclude",
		Summary: "the git files generator leaves out the files of its exclude: true entries (before, it reads them as includes)",
		Source:  "applicationset/generators/git.go generateParamsForGitFiles (argo-cd #22734, not backported)",
		From:    Line{3, 1},
	}
	RuleAppSetMatrixValuesPreResolved = Rule{
		ID:      "appset-matrix-values-pre-resolved",
		Summary: "a matrix's second generator's values are each rendered before the generator runs",
		Source:  "applicationset/generators/matrix.go, applicationset/utils RenderGeneratorParams",
		Patches: map[Line]int{{3, 4}: 4},
		From:    Line{3, 5},
	}
)

// Rules are every version-dependent rule, in the order output lists them.
var Rules = []Rule{
	RuleAnnotationDefault, RuleInstallationIDMustEqual, RuleInstallationIDWhenConfigured, RuleAppLevelPrune,
	RuleAppLevelDelete, RuleStaleTrackingIsDiff, RuleRefreshTimestamp, RuleResourceSelectors, RuleForcedReplaceDryRunIsDry,
	RuleAppSetFlattenStringMaps, RuleAppSetMatrixValuesPreResolved, RuleAppSetFilesExclude,
}

// RulesOf are the IDs of the rules release v follows.
func RulesOf(v Version) []string {
	var ids []string
	for _, r := range Rules {
		if r.Applies(v) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}
