package argocd

import (
	"slices"
	"strings"
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
