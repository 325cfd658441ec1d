package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/unprune/unprune/internal/check"
)

// CheckMoves writes, under the check's table, the recipe for every object the change moves (or may
// move) between apps: the steps that leave no deletion window.
func CheckMoves(w io.Writer, doc CheckReport) {
	for _, it := range doc.Items {
		for _, n := range moveNotes(it) {
			fmt.Fprintf(w, "%s: %s\n", it.Resource.String(), Line(n))
		}
	}
}

// moveNotes are the notes of an item that say how to move its object without a deletion window.
func moveNotes(it CheckItem) []string {
	if it.Kind != string(check.Move) && it.Reason != string(check.TrackedByOtherApp) {
		return nil
	}
	var out []string
	for _, n := range it.Notes {
		if strings.Contains(n, "unprune move") || strings.HasPrefix(n, "in between") {
			out = append(out, n)
		}
	}
	return out
}

// CheckFixes writes, under the check's table, how to make each rename the change holds without
// deleting anything, and what the apps show in between.
func CheckFixes(w io.Writer, doc CheckReport) {
	for _, a := range doc.Applications {
		if a.Fix == "" {
			continue
		}
		fmt.Fprintf(w, "%s/%s renamed to %s: %s\n", a.Application.Namespace, a.Application.Name, a.RenamedTo, Line(a.Fix))
		for _, n := range a.Notes {
			if strings.HasPrefix(n, "in between") || strings.HasPrefix(n, "the app's name feeds") {
				fmt.Fprintf(w, "  %s\n", Line(n))
			}
		}
	}
}

// CheckMovedOut writes, for the app a change moves objects away from, where each went: the Move item
// of the app it joins says what happens to it, and counts it.
func CheckMovedOut(w io.Writer, doc CheckReport) {
	for _, m := range doc.MovedOut {
		fmt.Fprintf(w, "%s: moved to %s by this change (its report counts it)\n", m.Resource.String(), Safe(m.To))
	}
}

// CheckPrunes counts the prunes of a check in words, saying how many are moves nothing prepared.
func CheckPrunes(s CheckSummary) string {
	n := Count(s.Prunes, "prune")
	if s.UnguardedMoves > 0 {
		n += fmt.Sprintf(" (%s not prepared)", Count(s.UnguardedMoves, "move"))
	}
	return n
}
