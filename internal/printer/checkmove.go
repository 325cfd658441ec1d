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
			if strings.Contains(n, "unprune move") {
				fmt.Fprintf(w, "%s: %s\n", it.Resource.String(), Line(n))
			}
		}
	}
}
