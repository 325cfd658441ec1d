package argocd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/unprune/unprune/internal/option"
)

// Options that unprune reads or writes in the sync-options and compare-options annotations.
const (
	// OptionPruneDisabled in sync-options stops Argo CD from ever pruning the object.
	OptionPruneDisabled = "Prune=false"
	// OptionPruneConfirm in sync-options makes Argo CD wait for deletion approval before pruning.
	OptionPruneConfirm = "Prune=confirm"
	// OptionIgnoreExtraneous in compare-options keeps an object that requires pruning from
	// making its app OutOfSync.
	OptionIgnoreExtraneous = "IgnoreExtraneous"
)

// ParseOptions splits an options annotation value the way Argo CD does: on commas, trimming
// spaces and dropping empty and repeated entries.
func ParseOptions(value string) []string {
	var options []string
	seen := map[string]bool{}
	for item := range strings.SplitSeq(value, ",") {
		option := strings.TrimSpace(item)
		if option == "" || seen[option] {
			continue
		}
		seen[option] = true
		options = append(options, option)
	}
	return options
}

// HasOption reports whether an options annotation value contains the option. Like Argo CD it
// compares whole entries exactly, so "prune=false" or "Prune = false" do not count.
func HasOption(value, option string) bool {
	return slices.Contains(ParseOptions(value), option)
}

// SetOption merges the option into an options annotation value. An option of the form
// Name=value replaces every entry for Name, at the first one's position, so "Prune=false"
// overrides "Prune=confirm" instead of contradicting it; other entries keep their order.
// A bare option such as IgnoreExtraneous is appended unless present. changed is false, and
// the value is returned untouched, when the option is already the only entry for its name.
func SetOption(value, option string) (merged string, changed bool) {
	option = strings.TrimSpace(option)
	if option == "" {
		return value, false
	}
	name := optionName(option)
	entries := ParseOptions(value)
	result := make([]string, 0, len(entries)+1)
	placed := false
	for _, entry := range entries {
		if optionName(entry) != name {
			result = append(result, entry)
			continue
		}
		if !placed {
			result = append(result, option)
			placed = true
		}
	}
	if !placed {
		result = append(result, option)
	}

	if slices.Equal(result, entries) {
		return value, false
	}
	return strings.Join(result, ","), true
}

// optionName is the part of an option before '=', or the whole bare option.
func optionName(option string) string {
	name, _, _ := strings.Cut(option, "=")
	return name
}

// Options unprune writes for --strategy keep, and the option keys it reads.
const (
	// OptionDeleteDisabled in sync-options keeps the object when its Application is deleted with
	// cascade (the resources finalizer): Prune=false does nothing there.
	OptionDeleteDisabled = "Delete=false"
	// OptionPrune is the name of the Prune sync option.
	OptionPrune = "Prune"
)

// PruneValue is what stops a prune sync from deleting an object.
type PruneValue string

const (
	// PruneAllowed: nothing stops the prune.
	PruneAllowed PruneValue = ""
	// PruneDisabled: Prune=false, Argo CD skips the deletion and the app stays OutOfSync.
	PruneDisabled PruneValue = "false"
	// PruneConfirm: Prune=confirm, Argo CD waits for argocd.argoproj.io/deletion-approved on the app.
	PruneConfirm PruneValue = "confirm"
)

// PruneSource says where the deciding Prune option was set.
type PruneSource string

const (
	PruneSourceNone   PruneSource = ""
	PruneSourceObject PruneSource = "Object"
	PruneSourceApp    PruneSource = "Application"
)

// PruneSetting is Argo CD's verdict on pruning one object.
type PruneSetting struct {
	Value  PruneValue
	Source PruneSource
	// Certain is false when the verdict depends on the Argo CD version, which is unknown; Value is
	// then what holds under every candidate rule, or PruneAllowed.
	Certain bool
	// Notes explain, for humans, app-level options that do not count: before v3.4 Argo CD ignores
	// them for pruning, and an object's own Prune= entry overrides them.
	Notes []string
}

// EffectivePrune decides how a prune sync treats an object, from its sync-options annotation and
// the app's spec.syncPolicy.syncOptions (a sync request carrying its own option list replaces the
// latter, so app-level options are as good as the syncs people run).
//
// From v3.4.0 (gitops-engine sync_context.go, isPruningDisabled / objRequiresPruneConfirmation) the
// first Prune= entry of the object decides, else the first of the app (SyncOptions.GetOptionValue):
// "Prune=true,Prune=false" on the object allows the prune. Before v3.4 the object is searched for
// the exact entries Prune=false and Prune=confirm (HasAnnotationOption) and app-level options play
// no part.
func EffectivePrune(version *Version, objectOptions string, appOptions []string) PruneSetting {
	if version != nil {
		return prune(RuleAppLevelPrune.Applies(*version), objectOptions, appOptions)
	}
	before := prune(false, objectOptions, appOptions)
	after := prune(true, objectOptions, appOptions)
	if before.Value == after.Value {
		after.Notes = append(before.Notes, after.Notes...)
		after.Notes = dedupeStrings(after.Notes)
		return after
	}
	return PruneSetting{Value: PruneAllowed, Notes: []string{fmt.Sprintf(
		"Argo CD before v3.4 reads Prune=%s here, v3.4 and later Prune=%s; the version is unknown, so neither counts as a guard (pass %v)",
		orAllowed(before.Value), orAllowed(after.Value), option.ArgoCDVersion)}}
}

func prune(appLevel bool, objectOptions string, appOptions []string) PruneSetting {
	s := PruneSetting{Certain: true}
	appValue, appHas := firstOptionValue(appOptions, OptionPrune)
	if !appLevel {
		switch {
		case HasOption(objectOptions, OptionPruneDisabled):
			s.Value, s.Source = PruneDisabled, PruneSourceObject
		case HasOption(objectOptions, OptionPruneConfirm):
			s.Value, s.Source = PruneConfirm, PruneSourceObject
		}
		if appHas && (appValue == string(PruneDisabled) || appValue == string(PruneConfirm)) {
			s.Notes = append(s.Notes, fmt.Sprintf("the app's syncOptions Prune=%s does nothing for pruning before Argo CD v3.4", appValue))
		}
		return s
	}
	if value, ok := firstOptionValue(ParseOptions(objectOptions), OptionPrune); ok {
		s.Value, s.Source = pruneValue(value), PruneSourceObject
		if appHas && appValue != value {
			s.Notes = append(s.Notes, fmt.Sprintf("the object's own Prune=%s overrides the app's syncOptions Prune=%s", value, appValue))
		}
		return s
	}
	if appHas {
		s.Value, s.Source = pruneValue(appValue), PruneSourceApp
		if s.Value == PruneAllowed {
			s.Source = PruneSourceNone
		}
	}
	return s
}

func pruneValue(v string) PruneValue {
	switch v {
	case string(PruneDisabled):
		return PruneDisabled
	case string(PruneConfirm):
		return PruneConfirm
	}
	return PruneAllowed
}

// firstOptionValue is the value of the first name=value entry for name, as Argo CD's
// GetOptionValue and GetAnnotationOptionValue read it.
func firstOptionValue(options []string, name string) (string, bool) {
	prefix := name + "="
	for _, o := range options {
		if v, ok := strings.CutPrefix(o, prefix); ok {
			return v, true
		}
	}
	return "", false
}

func orAllowed(v PruneValue) string {
	if v == PruneAllowed {
		return "<none>"
	}
	return string(v)
}

func dedupeStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// RefreshTimestampSupported reports whether the controller consumes the refresh-timestamp
// annotation; older controllers would leave it on the Application for good.
func RefreshTimestampSupported(v *Version) bool {
	return v != nil && RuleRefreshTimestamp.Applies(*v)
}

// AnnotationRefreshTimestamp identifies one refresh request (v3.6+).
const AnnotationRefreshTimestamp = "argocd.argoproj.io/refresh-timestamp"
