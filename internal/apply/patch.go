// Package apply changes live objects' metadata exactly as a plan or a journal says: JSON merge patches
// that carry the resourceVersion they were planned against (so a concurrent write is never clobbered),
// a field manager of unprune's own, optional server-side dry-run, bounded retries that re-read and
// re-plan on conflict, a journal entry written before each patch and marked after it, and bounded
// concurrency within the client's rate limits. It never sends DELETE.
package apply

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/journal"
)

// FieldManager is how unprune's writes show in managedFields.
const FieldManager = "unprune"

// MergePatch builds the JSON merge patch for changes: null removes a key, a string sets it. The
// resourceVersion makes the API server refuse the patch with 409 Conflict when the object changed
// since it was read.
func MergePatch(resourceVersion string, changes []journal.Change) ([]byte, error) {
	labels := map[string]any{}
	annotations := map[string]any{}
	for _, c := range changes {
		target := annotations
		if c.Field == journal.FieldLabel {
			target = labels
		}
		if c.After == nil {
			target[c.Key] = nil
		} else {
			target[c.Key] = *c.After
		}
	}
	meta := map[string]any{"resourceVersion": resourceVersion}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// Mismatches compares an object (as the API server returned it after a patch or a dry-run) with what
// the changes should have produced, and lists every difference.
func Mismatches(u *unstructured.Unstructured, changes []journal.Change) []string {
	var out []string
	for _, c := range changes {
		current := u.GetAnnotations()
		if c.Field == journal.FieldLabel {
			current = u.GetLabels()
		}
		v, has := current[c.Key]
		switch {
		case c.After == nil && has:
			out = append(out, fmt.Sprintf("%s %s is still %q", c.Field, c.Key, v))
		case c.After != nil && !has:
			out = append(out, fmt.Sprintf("%s %s is absent, want %q", c.Field, c.Key, *c.After))
		case c.After != nil && v != *c.After:
			out = append(out, fmt.Sprintf("%s %s is %q, want %q", c.Field, c.Key, v, *c.After))
		}
	}
	return out
}

// Diff renders the metadata change as a unified-diff-like block, one line per key, for previews.
func Diff(header string, changes []journal.Change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s (live)\n+++ %s (after)\n", header, header)
	sorted := append([]journal.Change(nil), changes...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Field != sorted[j].Field {
			return sorted[i].Field > sorted[j].Field // labels first
		}
		return sorted[i].Key < sorted[j].Key
	})
	section := journal.Field("")
	for _, c := range sorted {
		if c.Field != section {
			section = c.Field
			fmt.Fprintf(&b, "  metadata.%ss:\n", section)
		}
		if c.Before != nil {
			fmt.Fprintf(&b, "-   %s: %s\n", c.Key, quoteValue(*c.Before))
		}
		if c.After != nil {
			fmt.Fprintf(&b, "+   %s: %s\n", c.Key, quoteValue(*c.After))
		}
	}
	return b.String()
}

// quoteValue keeps a diff line on one line and readable: long JSON (last-applied-configuration)
// is shortened, anything with special characters is quoted.
func quoteValue(v string) string {
	const max = 150
	if r := []rune(v); len(r) > max {
		return fmt.Sprintf("%q… (%d bytes)", string(r[:max]), len(v))
	}
	return fmt.Sprintf("%q", v)
}
