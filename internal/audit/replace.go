package audit

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
)

// WhenForceSynced: the row is an object two apps declare, which a sync of the row's app with FORCE
// ticked (or every sync, with Force=true on the object) deletes and creates anew, because that app
// syncs it with Replace=true (argocd.Recreated; argo-cd #29739). The other app's Prune=false or
// Delete=false does not stop it.
const WhenForceSynced When = "WhenForceSynced"

// replaceRows finds the objects the audited apps declare twice — listed by two apps that deploy to
// the same cluster — that one of them recreates at a forced sync: its syncOptions, or the live
// object's sync-options annotation, say Replace=true, and the object is neither a Namespace nor a
// CRD (which gitops-engine updates instead). Each is a row of the replacing app: whatever the other
// app's guards, a forced sync of that app sends the DELETE.
//
// Only what the audit can read counts: an app's syncOptions and the live object. Replace=true in
// the replacing app's manifest is in Argo CD's rendering, not in either; `unprune check` reads the
// manifests of a change and says it there. Apps are matched by their destination as their specs
// name it (server, or name; the in-cluster destination by either), so an audit of one app finds
// the apps it shares objects with only among the apps audited with it: `audit -A` finds them all.
func replaceRows(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, o Options) ([]Row, []string) {
	type claim struct {
		app argocd.Application
		res argocd.Resource
	}
	claims := map[string][]claim{}
	var keys []string
	for _, app := range apps {
		for _, r := range app.Resources {
			if r.Hook {
				continue
			}
			key := destinationKey(app.Destination) + "|" + r.Key()
			if _, ok := claims[key]; !ok {
				keys = append(keys, key)
			}
			claims[key] = append(claims[key], claim{app, r})
		}
	}
	sort.Strings(keys)
	type byApp struct {
		app  argocd.Application
		jobs []*job
		// others names, for each job, the other apps that declare the object.
		others [][]string
	}
	var order []string
	found := map[string]*byApp{}
	for _, key := range keys {
		cs := claims[key]
		if len(cs) < 2 {
			continue
		}
		for i, c := range cs {
			var others []string
			for k, other := range cs {
				if k != i && other.app.Ref() != c.app.Ref() {
					others = append(others, other.app.Ref())
				}
			}
			if len(others) == 0 {
				continue
			}
			b, ok := found[c.app.Ref()]
			if !ok {
				b = &byApp{app: c.app}
				found[c.app.Ref()] = b
				order = append(order, c.app.Ref())
			}
			b.jobs = append(b.jobs, &job{row: Row{App: c.app, Resource: c.res, When: WhenForceSynced}})
			b.others = append(b.others, others)
		}
	}
	var rows []Row
	var warnings []string
	for _, ref := range order {
		b := found[ref]
		objects, err := argo.Destination(ctx, b.app)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("objects %s shares with other apps were not read: %v", ref, err))
			continue
		}
		refs := make([]cluster.Ref, len(b.jobs))
		for i, j := range b.jobs {
			r := j.row.Resource
			refs[i] = cluster.Ref{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
			if resolved, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name); err == nil {
				refs[i] = resolved
			}
		}
		var jobs []*job
		for i, res := range objects.Read(ctx, refs) {
			if res.Err != nil || res.Object == nil {
				continue
			}
			j, live := b.jobs[i], res.Object
			r := j.row.Resource
			how := argocd.Recreated(r.Group, r.Kind, b.app.SyncOptions, "", live.Annotations[argocd.AnnotationSyncOptions])
			if how == argocd.Never {
				continue
			}
			where := "the app's syncOptions"
			if !slices.Contains(b.app.SyncOptions, argocd.OptionReplace) {
				where = "the object's " + argocd.AnnotationSyncOptions
			}
			when := "a sync of " + ref + " with FORCE ticked"
			if how == argocd.Always {
				when = "every sync of " + ref + " (Force=true on the object)"
			}
			j.row.Cluster = objects.Info()
			j.row.Notes = append(j.row.Notes, fmt.Sprintf(
				"also declared by %s; %s says Replace=true, so %s deletes it and creates it anew (a forced kubectl replace: a DELETE, then a CREATE with a new UID). "+
					"Prune=false and Delete=false do not stop that; only an admission policy that denies its DELETE does (%v). Keep the object in one app, or drop Replace=true",
				strings.Join(b.others[i], ", "), where, when, guard.ByNameCommand(refs[i].Group, refs[i].Resource, refs[i].Namespace, refs[i].Name)))
			if note := dryRunNote(s.Version); note != "" {
				j.row.Notes = append(j.row.Notes, note)
			}
			j.ref, j.live, j.objects = refs[i], live, objects
			jobs = append(jobs, j)
		}
		if len(jobs) == 0 {
			continue
		}
		judged, warns := judgeClusterAs(ctx, objects, jobs, s, argo, o, deletion.Replace)
		warnings = append(warnings, warns...)
		for _, r := range judged {
			// What the replace does not delete (an owned object) is no row.
			if out := r.judged.verdict.Outcome; out == deletion.Deleted || out == deletion.Kept || out == deletion.Waits {
				rows = append(rows, r)
			}
		}
	}
	return rows, warnings
}

// dryRunNote says when the forced sync's own dry run already recreates the object: before
// gitops-engine #623's fix, kubectl's replace --force ran its DELETE and CREATE for real in the dry
// run (argocd.RuleForcedReplaceDryRunIsDry), so the object is recreated even when that dry run then
// fails on another object, and twice when the sync goes on. Unknown release: said as a possibility.
func dryRunNote(v *argocd.Version) string {
	const what = "the forced sync's dry run already deletes and creates it anew (kubectl's forced replace ignores the dry run: gitops-engine #623), " +
		"so it is recreated even when the sync then fails, and twice when it succeeds"
	switch {
	case v == nil:
		return "on Argo CD before v3.0.16, v3.1.4 and v3.2.0, " + what
	case !argocd.RuleForcedReplaceDryRunIsDry.Applies(*v):
		return "on Argo CD " + v.String() + ", " + what
	}
	return ""
}

// destinationKey names the cluster an app deploys to as its spec does, the in-cluster destination
// the same by name or server.
func destinationKey(d argocd.Destination) string {
	if d.Server == argocd.InClusterServer || d.Server == "" && d.Name == argocd.InClusterName {
		return "in-cluster"
	}
	if d.Server != "" {
		return "server:" + d.Server
	}
	return "name:" + d.Name
}
