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
		if it.Kind != string(check.Move) && it.Reason != string(check.TrackedByOtherApp) {
			continue
		}
		for _, n := range it.Notes {
			if strings.Contains(n, "unprune move") || strings.HasPrefix(n, "in between") {
				fmt.Fprintf(w, "%s: %s\n", it.Resource.String(), Line(n))
			}
		}
	}
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
