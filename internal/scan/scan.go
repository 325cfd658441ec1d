// Package scan finds the Applications stuck on "requires pruning" and describes each such resource:
// the tracking metadata actually on the live object, what Argo CD's rules make of it, whether a sync
// would prune it automatically, how bad that deletion would be, and what already guards it.
package scan

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/risk"
)

// Finding is one resource that requires pruning.
type Finding struct {
	// App is shared by the app's findings: a copy in each would weigh on scans of thousands of rows.
	App      *argocd.Application
	Instance string
	// Cluster is the destination the object lives in, shared by the findings of that cluster.
	Cluster  *cluster.Info
	Resource argocd.Resource
	// Tracking is the tracking metadata found on the live object.
	Tracking []argocd.Field
	// Ownership is Argo CD's view of the object under the settings, for humans.
	Ownership string
	// ModelMismatch: Argo CD lists the object as the app's, but the settings find no tracking of
	// it — unprune's view of the installation is wrong, or the status predates a release.
	ModelMismatch bool
	Risk          risk.Class
	RiskWhy       string
	Guards        []risk.Guard
	Notes         []string
	// LiveError is why the live object could not be read (gone, forbidden, cluster unreachable).
	LiveError string
}

// Report is a whole scan.
type Report struct {
	Settings        argocd.Settings
	ArgoCDNamespace string
	AppsScanned     int
	Findings        []Finding
	// Prepared are objects `move --prepare` marked (journals of this machine) that still carry the
	// marks: moves not finished.
	Prepared []Prepared
	Warnings []string
}

// StuckApps counts the apps with findings.
func (r Report) StuckApps() int {
	seen := map[string]bool{}
	for _, f := range r.Findings {
		seen[f.App.Ref()] = true
	}
	return len(seen)
}

// group is the findings whose objects live in one destination cluster.
type group struct {
	objects cluster.Objects
	info    *cluster.Info
	idx     []int
}

// Run reads, in bulk per destination cluster, the live object behind every requires-pruning row of
// apps (hooks are never pruned and are left out). A destination that cannot be reached is a
// warning on its rows, not a failed scan. It returns ctx's error when interrupted.
func Run(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application) (Report, error) {
	rep := Report{Settings: s, ArgoCDNamespace: argo.Namespace(), AppsScanned: len(apps)}
	groups := collect(ctx, argo, s, apps, &rep)
	var mu sync.Mutex
	forbidden := map[string]bool{}
	parallel.ForEach(len(groups), len(groups), func(i int) {
		for _, what := range readGroup(ctx, groups[i], s, argo.Namespace(), rep.Findings) {
			mu.Lock()
			forbidden[what] = true
			mu.Unlock()
		}
	})
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	for what := range forbidden {
		rep.Warnings = append(rep.Warnings, "forbidden to read "+what+": those rows show no live metadata (ask for get/list permission on that kind)")
	}
	sort.Strings(rep.Warnings)
	return rep, nil
}

// collect makes a finding of every prunable row of apps and groups them by destination cluster. A
// destination that cannot be reached marks its findings and warns.
func collect(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, rep *Report) []*group {
	total := 0
	for i := range apps {
		for _, r := range apps[i].Resources {
			if r.Prunable() {
				total++
			}
		}
	}
	rep.Findings = make([]Finding, 0, total)
	byCluster := map[string]*group{}
	var groups []*group
	for i := range apps {
		app := &apps[i]
		rows := app.Pruning()
		if len(rows) == 0 {
			continue
		}
		instance := app.Instance(argo.Namespace())
		if s.Method == argocd.MethodLabel && !argocd.LabelValueFits(instance) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("Application %s: its instance %q is longer than 63 characters, which label tracking cannot write: Argo CD cannot apply its resources", app.Ref(), instance))
		}
		objects, err := argo.Destination(ctx, *app)
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
			info := &cluster.Info{Name: app.Destination.Name, Server: app.Destination.Server}
			for _, r := range rows {
				rep.Findings = append(rep.Findings, Finding{App: app, Instance: instance, Resource: r, LiveError: err.Error(), Cluster: info})
			}
			continue
		}
		key := objects.Info().Name + "|" + objects.Info().Server
		g := byCluster[key]
		if g == nil {
			info := objects.Info()
			g = &group{objects: objects, info: &info}
			byCluster[key] = g
			groups = append(groups, g)
		}
		for _, r := range rows {
			g.idx = append(g.idx, len(rep.Findings))
			rep.Findings = append(rep.Findings, Finding{App: app, Instance: instance, Resource: r, Cluster: g.info})
		}
	}
	return groups
}

// readGroup reads the live objects of a group's findings and describes each. It returns the kinds
// it was forbidden to read.
func readGroup(ctx context.Context, g *group, s argocd.Settings, argocdNamespace string, findings []Finding) []string {
	refs := make([]cluster.Ref, len(g.idx))
	for k, fi := range g.idx {
		r := findings[fi].Resource
		ref, err := g.objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			ref = cluster.Ref{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		}
		refs[k] = ref
	}
	var mu sync.Mutex
	var forbidden []string
	each := func(k int, res cluster.ReadResult) {
		f := &findings[g.idx[k]]
		describe(f, s, argocdNamespace, refs[k], res)
		if cluster.IsForbidden(res.Err) {
			mu.Lock()
			forbidden = append(forbidden, fmt.Sprintf("%s in cluster %s", refs[k].Kind, f.Cluster.Name))
			mu.Unlock()
		}
	}
	// Described as they arrive, each object's metadata can go at once: the objects still to
	// describe and the findings described never all weigh at the same time.
	if r, ok := g.objects.(cluster.EachReader); ok {
		r.ReadEach(ctx, refs, each)
		return forbidden
	}
	for k, res := range g.objects.Read(ctx, refs) {
		each(k, res)
	}
	return forbidden
}

// describe classifies one finding from its live object.
func describe(f *Finding, s argocd.Settings, argocdNamespace string, ref cluster.Ref, res cluster.ReadResult) {
	obj := risk.Object{Group: f.Resource.Group, Kind: f.Resource.Kind, Namespace: f.Resource.Namespace, Name: f.Resource.Name}
	if res.Err != nil {
		f.LiveError = res.Err.Error()
	} else {
		live := res.Object
		obj.Labels, obj.Annotations = live.Labels, live.Annotations
		own := s.Owner(live.Labels, live.Annotations, ref.ObjectRef())
		f.Ownership = own.Detail
		for _, cl := range own.Claims {
			f.Tracking = append(f.Tracking, cl.Fields...)
		}
		f.Tracking = append(f.Tracking, own.Informational...)
		if !own.Tracked {
			f.ModelMismatch = true
			f.Notes = append(f.Notes, fmt.Sprintf("Argo CD lists it as this app's, but under the settings unprune read it is not tracked: "+
				"the settings or version are not what Argo CD runs with (pass %v), or Argo CD has not compared since it was released", option.ArgoCDVersion))
		}
	}
	f.Risk, f.RiskWhy = risk.Classify(obj, argocdNamespace)
	// What keeps a prune from deleting it, as the one deletion verdict reads it (the object's own
	// options and identity: scan reads no admission policy).
	row := f.Resource
	v := deletion.Judge(deletion.Object{Group: obj.Group, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name,
		Labels: obj.Labels, Annotations: obj.Annotations, Read: res.Err == nil, Row: &row},
		deletion.Prune, deletion.Context{Version: s.Version, AppSyncOptions: f.App.SyncOptions})
	f.Guards = v.Guards
	f.Notes = append(f.Notes, v.Notes...)
}
