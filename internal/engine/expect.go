package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
)

// The expectations checks judge Argo CD's comparisons with. Each reads only the app's status as
// the controller wrote it: its rows (controller/state.go, CompareAppState: one row per desired
// object, live or missing, and one per live object the app tracks that git no longer holds, marked
// requiresPruning) and their sync status and health.

// healthMissing is the health Argo CD gives a row whose desired object does not exist.
const healthMissing = "Missing"

// rowsOf are the app's rows by key, hooks left out: Argo CD lists every live hook as requiring
// pruning, yet no sync prunes one and none counts against the app's sync status.
func rowsOf(rows []argocd.Resource) map[string]argocd.Resource {
	out := map[string]argocd.Resource{}
	for _, r := range rows {
		if !r.Hook {
			out[r.Key()] = r
		}
	}
	return out
}

// expectSameAs expects the app to list exactly the resources want lists (hooks aside), each as want
// shows it: the same sync status, requiring pruning only where want does, missing only where want
// is. It is what a renamed app must show before it is given the old app's automation and
// finalizers, and what its rendering must show before anything else is changed (beforeRewrite:
// the resources are still tracked by the old app, so only the list and the missing ones count).
// fix says what to do when the lists differ.
func expectSameAs(want []argocd.Resource, beforeRewrite bool, fix string) Expectation {
	wanted := rowsOf(want)
	return func(app argocd.Application) *Mismatch {
		got := rowsOf(app.Resources)
		var renders, lacks, differs, unseen []string
		for _, k := range slices.Sorted(maps.Keys(got)) {
			r := got[k]
			w, ok := wanted[k]
			switch {
			case !ok && r.RequiresPruning:
				renders = append(renders, fmt.Sprintf("%s, which carries its tracking already and would be pruned", r))
			case !ok:
				renders = append(renders, r.String())
			case r.Health == healthMissing && w.Health != healthMissing:
				differs = append(differs, r.String()+" is missing")
			case r.RequiresPruning && !w.RequiresPruning:
				differs = append(differs, r.String()+" requires pruning")
			case !beforeRewrite && r.Status != w.Status:
				// A comparison whose live state still holds the old tracking diffs it against
				// the desired object's new one: OutOfSync until the controller's cache sees it.
				differs, unseen = append(differs, fmt.Sprintf("%s is %s (it was %s)", r, orUnknown(r.Status), orUnknown(w.Status))), append(unseen, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(wanted)) {
			if _, ok := got[k]; !ok {
				lacks = append(lacks, wanted[k].String())
			}
		}
		if len(renders)+len(lacks)+len(differs) == 0 {
			return nil
		}
		m := &Mismatch{Summary: fmt.Sprintf("Argo CD's comparison of Application %s does not show the same resources", app.Ref())}
		if len(renders)+len(lacks) == 0 && len(unseen) == len(differs) {
			m.Unseen = unseen
		}
		if len(renders) > 0 {
			m.Details = append(m.Details, "it lists "+strings.Join(renders, ", "))
		}
		if len(lacks) > 0 {
			m.Details = append(m.Details, "it does not list "+strings.Join(lacks, ", "))
		}
		m.Details = append(m.Details, differs...)
		if len(renders)+len(lacks) > 0 {
			m.Fix = fix
		}
		return m
	}
}

// expectDeclares expects the app to list every one of rows as a resource it declares (listed, not
// requiring pruning): tracking handed to it, or a mark that kept a prune away taken off, then
// deletes nothing, since no sync of the app prunes an object its git holds.
func expectDeclares(rows []argocd.Resource, fix string) Expectation {
	return func(app argocd.Application) *Mismatch {
		got := rowsOf(app.Resources)
		var missing []string
		for _, r := range rows {
			g, ok := got[r.Key()]
			switch {
			case !ok:
				missing = append(missing, r.String()+" is not listed")
			case g.RequiresPruning:
				missing = append(missing, r.String()+" requires pruning")
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return &Mismatch{Summary: fmt.Sprintf("Application %s does not declare every resource", app.Ref()), Details: missing, Fix: fix}
	}
}

// expectNotPruning expects the app not to list any of rows as requiring pruning: it no longer tracks
// them (or declares them), so none of its syncs deletes them.
func expectNotPruning(rows []argocd.Resource, fix string) Expectation {
	return func(app argocd.Application) *Mismatch {
		got := rowsOf(app.Resources)
		var pruning, keys []string
		for _, r := range rows {
			if g, ok := got[r.Key()]; ok && g.RequiresPruning {
				pruning, keys = append(pruning, r.String()), append(keys, r.Key())
			}
		}
		if len(pruning) == 0 {
			return nil
		}
		// Until the controller's cache sees the object's tracking handed on, the app still
		// tracks it: requiring pruning is what such a comparison shows.
		return &Mismatch{Summary: fmt.Sprintf("Application %s still lists resources as requiring pruning", app.Ref()), Details: pruning, Fix: fix, Unseen: keys}
	}
}

// expectUnchanged expects the app's rows of the given resources to show the sync status they had
// (marks placed on the objects must not make Argo CD see a difference from git: it would write its
// manifest's value back over them).
func expectUnchanged(rows []argocd.Resource, fix string) Expectation {
	return func(app argocd.Application) *Mismatch {
		got := rowsOf(app.Resources)
		var differs []string
		for _, r := range rows {
			g, ok := got[r.Key()]
			switch {
			case !ok:
				differs = append(differs, r.String()+" is no longer listed")
			case g.Status != r.Status:
				differs = append(differs, fmt.Sprintf("%s is %s (it was %s)", r, orUnknown(g.Status), orUnknown(r.Status)))
			}
		}
		if len(differs) == 0 {
			return nil
		}
		return &Mismatch{Summary: fmt.Sprintf("Argo CD's comparison of Application %s sees the change", app.Ref()), Details: differs, Fix: fix}
	}
}

// expectAll expects every one of es.
func expectAll(es ...Expectation) Expectation {
	return func(app argocd.Application) *Mismatch {
		for _, e := range es {
			if m := e(app); m != nil {
				return m
			}
		}
		return nil
	}
}
