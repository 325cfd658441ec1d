// Package scan finds the Applications stuck on "requires pruning" and describes each such resource:
// the tracking metadata actually on the live object, whether a sync would prune it automatically, how
// bad that deletion would be, and what already guards it.
package scan

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sort"
	"sync"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/risk"
)

// Finding is one resource that requires pruning.
type Finding struct {
	App       cluster.Application
	Instance  string
	Resource  cluster.Resource
	Tracking  []argocd.Field // tracking metadata found on the live object
	Ownership string         // Argo CD's view of the object, for humans
	Risk      risk.Class
	RiskWhy   string
	Guards    []risk.Guard
	// LiveError is why the live object could not be read (gone, forbidden, kind not served).
	LiveError string
}

// Report is a whole scan.
type Report struct {
	Settings        argocd.Settings
	ArgoCDNamespace string
	AppsScanned     int
	Findings        []Finding
	Warnings        []string
}

// Run reads the live object behind every requires-pruning row of apps, with bounded concurrency.
func Run(ctx context.Context, c *cluster.Client, s argocd.Settings, argocdNamespace string, apps []cluster.Application, workers int) Report {
	rep := Report{Settings: s, ArgoCDNamespace: argocdNamespace, AppsScanned: len(apps)}
	type job struct {
		app cluster.Application
		res cluster.Resource
	}
	var jobs []job
	for _, a := range apps {
		if !a.InCluster() {
			if len(a.Pruning()) > 0 {
				rep.Warnings = append(rep.Warnings, "Application "+a.Ref()+" deploys to another cluster ("+dest(a)+"); its resources requiring pruning live there: run unprune with that cluster's --context")
			}
			continue
		}
		for _, r := range a.Pruning() {
			jobs = append(jobs, job{a, r})
		}
	}
	if workers <= 0 {
		workers = 8
	}
	findings := make([]Finding, len(jobs))
	forbidden := map[string]bool{}
	var mu sync.Mutex
	parallel.ForEach(len(jobs), workers, func(i int) {
		j := jobs[i]
		f := describe(ctx, c, s, argocdNamespace, j.app, j.res)
		if f.LiveError != "" && f.forbidden {
			mu.Lock()
			forbidden[j.res.GroupVersionKind().GroupKind().String()] = true
			mu.Unlock()
		}
		findings[i] = f.Finding
	})
	for gk := range forbidden {
		rep.Warnings = append(rep.Warnings, "forbidden to read "+gk+": those rows show no live metadata (ask for get permission on that kind)")
	}
	sort.Strings(rep.Warnings)
	rep.Findings = findings
	return rep
}

func dest(a cluster.Application) string {
	if a.DestName != "" {
		return a.DestName
	}
	return a.DestServer
}

type described struct {
	Finding
	forbidden bool
}

// describe reads one resource's live object and classifies it.
func describe(ctx context.Context, c *cluster.Client, s argocd.Settings, argocdNamespace string, a cluster.Application, r cluster.Resource) described {
	f := Finding{App: a, Resource: r, Instance: argocd.InstanceName(a.Namespace, a.Name, argocdNamespace)}
	obj := risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	live, m, err := c.Live(ctx, r)
	d := described{}
	if err != nil {
		f.LiveError = err.Error()
		d.forbidden = cluster.IsForbidden(err)
	} else {
		obj.Labels, obj.Annotations = live.GetLabels(), live.GetAnnotations()
		ref := argocd.ObjectRef{Group: r.Group, Kind: r.Kind, Namespace: live.GetNamespace(), Name: r.Name,
			ClusterScoped: m.Scope.Name() == meta.RESTScopeNameRoot}
		own := s.Owner(obj.Labels, obj.Annotations, ref)
		f.Ownership = own.Detail
		for _, cl := range own.Claims {
			f.Tracking = append(f.Tracking, cl.Fields...)
		}
		f.Tracking = append(f.Tracking, own.Informational...)
	}
	f.Risk, f.RiskWhy = risk.Classify(obj, argocdNamespace)
	f.Guards = risk.Guards(obj)
	d.Finding = f
	return d
}
