package audit

import (
	"context"
	"fmt"
	"sort"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// WhenArgoCDUpgraded: the row is an object of another Argo CD installation that one of this
// installation's apps will track — and, since that app does not declare it, require pruning — once
// this installation runs the release the row's note names.
const WhenArgoCDUpgraded When = "WhenArgoCDUpgraded"

// upgradeTo is the release whose tracking rules upgradeRows compares with the installation's: v3.6.0
// stopped ignoring an object's installation-id when argocd-cm sets no installationID
// (util/argo/resource_tracking.go, getAppInstanceValue: `installationID != "" && (… != installationID)`
// where v2.13–v3.5 read `installationID != "" && annotations == nil || annotations[id] != installationID`).
var upgradeTo = argocd.Version{Major: 3, Minor: 6}

// upgradeRows finds, in a cluster several Argo CD installations share, the objects that upgrading this
// installation to upgradeTo hands to one of its apps: objects another installation applied (they carry
// its installation-id) whose tracking-id names an instance of this installation, in the cluster that
// app deploys to, which the app does not declare. After the upgrade the app's comparison lists them as
// requiring pruning, and its next sync with prune deletes the other installation's objects.
//
// The other installations' objects are found through their Applications (listed in every namespace),
// so an object no app lists any more is not found; a backend that sees only this installation's
// Applications (Argo CD's API) finds none, and the report says so.
func upgradeRows(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, o Options) ([]Row, []string) {
	if !o.Upgrade || s.Version == nil || s.Version.AtLeast(upgradeTo) {
		return nil, nil
	}
	next := s
	next.Version = &upgradeTo
	ours := map[string]argocd.Application{}
	for _, app := range apps {
		ours[app.Instance(argo.Namespace())] = app
	}
	// Where each of this installation's apps deploys, resolved once: Argo CD's cluster cache finds
	// an app's objects only in its destination cluster.
	deploysTo := map[string]*cluster.Info{}
	sameCluster := func(app argocd.Application, info cluster.Info) bool {
		mine, seen := deploysTo[app.Ref()]
		if !seen {
			if objects, err := argo.Destination(ctx, app); err == nil {
				i := objects.Info()
				mine = &i
			}
			deploysTo[app.Ref()] = mine
		}
		return mine != nil && ((mine.Server != "" && mine.Server == info.Server) || (mine.Server == "" && mine.Name == info.Name))
	}
	all, err := argo.ListApplications(ctx, cluster.Selector{})
	if err != nil {
		return nil, []string{fmt.Sprintf("objects an upgrade to Argo CD %s would hand to this installation's apps were not looked for: %v", upgradeTo, err)}
	}
	type candidate struct {
		ref   cluster.Ref
		owner argocd.Application
	}
	byDest := map[string][]candidate{}
	dests := map[string]argocd.Destination{}
	seen := map[string]bool{}
	for _, other := range all {
		// Apps in this installation's namespace are its own. Any other may belong to another
		// installation, or to this one (apps in any namespace; audit -A lists those of every
		// installation): the comparison of ownership before and after the upgrade below leaves out
		// the objects this installation tracks already.
		if other.Namespace == argo.Namespace() {
			continue
		}
		d := other.Destination
		key := d.Server + "|" + d.Name
		dests[key] = argocd.Destination{Server: d.Server, Name: d.Name}
		for _, r := range other.Resources {
			id := key + "|" + r.Key()
			if r.Hook || seen[id] {
				continue
			}
			seen[id] = true
			byDest[key] = append(byDest[key], candidate{cluster.Ref{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, other})
		}
	}
	keys := make([]string, 0, len(byDest))
	for k := range byDest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows []Row
	var warnings []string
	for _, key := range keys {
		objects, err := argo.Reach(ctx, dests[key])
		if err != nil {
			// This installation cannot reach the cluster: none of its apps deploys there.
			continue
		}
		cands := byDest[key]
		refs := make([]cluster.Ref, len(cands))
		for i, c := range cands {
			refs[i] = c.ref
			if resolved, err := objects.Resolve(ctx, c.ref.Group, c.ref.Kind, c.ref.Version, c.ref.Namespace, c.ref.Name); err == nil {
				refs[i] = resolved
			}
		}
		var jobs []*job
		for i, res := range objects.Read(ctx, refs) {
			if res.Err != nil || res.Object == nil {
				continue
			}
			live, ref := res.Object, refs[i]
			o := argocd.ObjectRef{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
			after := next.Owner(live.Labels, live.Annotations, o)
			if !after.Tracked || after.Instance == "" || s.Owner(live.Labels, live.Annotations, o).TrackedBy(after.Instance) {
				continue
			}
			app, ok := ours[after.Instance]
			if !ok || declares(app, ref) || !sameCluster(app, objects.Info()) {
				continue
			}
			r := argocd.Resource{Group: ref.Group, Version: ref.Version, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, RequiresPruning: true}
			row := Row{App: app, Cluster: objects.Info(), Resource: r, When: WhenArgoCDUpgraded, Notes: []string{fmt.Sprintf(
				"Application %s of another installation applied it (annotation %s=%q) and its %s names %s; Argo CD %s ignores it, from %s an installation with no %s in %s reads it: %s, which does not declare it, then requires pruning it. Set %s before upgrading",
				cands[i].owner.Ref(), argocd.AnnotationInstallationID, live.Annotations[argocd.AnnotationInstallationID],
				argocd.AnnotationTrackingID, after.Instance, s.Version, upgradeTo, argocd.SettingInstallationID, argocd.ConfigMapName,
				app.Ref(), argocd.SettingInstallationID)}}
			jobs = append(jobs, &job{row: row, objects: objects, ref: ref, live: live})
		}
		if len(jobs) == 0 {
			continue
		}
		judged, warns := judgeCluster(ctx, objects, jobs, next, argo, o)
		rows, warnings = append(rows, judged...), append(warnings, warns...)
	}
	return rows, warnings
}

// declares reports whether the app's comparison lists the object as one of its own (not one that
// requires pruning): after an upgrade it keeps it, whoever applied it.
func declares(app argocd.Application, ref cluster.Ref) bool {
	for _, r := range app.Resources {
		if r.Group == ref.Group && r.Kind == ref.Kind && r.Namespace == ref.Namespace && r.Name == ref.Name && !r.RequiresPruning {
			return true
		}
	}
	return false
}
