// Package audit answers, before it happens, what a prune would delete: every resource that requires
// pruning now (a sync with PRUNE deletes it, whatever the app's automated policy says), every
// high-risk resource of an app that prunes automatically (the next revert deletes it), how much goes
// with each deletion, and which guard — if any — would stop it.
package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/progress"
	"github.com/unprune/unprune/internal/risk"
)

// When says when a prune would delete the resource.
type When string

const (
	// Now: the resource requires pruning; any sync with prune deletes it.
	Now When = "Now"
	// WhenRemovedFromGit: the app prunes automatically; removing the resource from git deletes it.
	WhenRemovedFromGit When = "WhenRemovedFromGit"
)

// Guards beyond the object's own (risk.Guard), read from a probe.
const (
	GuardProbeDenied = deletion.GuardProbeDenied // a dry-run DELETE was refused by admission or the API server
	GuardController  = deletion.GuardController  // Argo CD's controller may not delete it (RBAC)
)

// ProbeResult is the API server's answer to a dry-run DELETE.
type ProbeResult = deletion.ProbeResult

const (
	ProbeAllowed             = deletion.ProbeAllowed
	ProbeDenied              = deletion.ProbeDenied
	ProbeControllerForbidden = deletion.ProbeControllerForbidden
	ProbeInconclusive        = deletion.ProbeInconclusive
	ProbeGone                = deletion.ProbeGone
)

// Probe is one probe's answer.
type Probe struct {
	Result  ProbeResult
	Message string
	// As is the user the probe acted as; empty for the prober itself.
	As string
}

// Row is one resource a prune could delete.
type Row struct {
	App      argocd.Application
	Cluster  cluster.Info
	Resource argocd.Resource
	When     When
	Risk     risk.Class
	RiskWhy  string
	Contents *risk.Contents
	Guards   []risk.Guard
	// Guarded: a hard guard stops the deletion (app-level options are soft and do not count).
	Guarded   bool
	Probe     *Probe
	Notes     []string
	LiveError string
	// Cascade is set on WhenItsAppIsDeleted rows: the row is a whole Application.
	Cascade *Cascade
	// judged is the object as the deletion verdict read it, and the verdict.
	judged *judged
}

type judged struct {
	object  deletion.Object
	verdict deletion.Verdict
}

// Deletes says whether the deletion budget counts the row as a deletion (budget.Decide's rule): its
// verdict deletes it, or waits for Argo CD's approval and then deletes it. A row not judged counts.
func (r Row) Deletes() bool {
	if r.judged == nil {
		return true
	}
	o := r.judged.verdict.Outcome
	return o == deletion.Deleted || o == deletion.Waits
}

// Report is a whole audit.
type Report struct {
	ArgoCDNamespace string
	AppsAudited     int
	Rows            []Row
	// Softened are apps whose sync options would soften pruning, with whether they count.
	Softened []string
	Warnings []string
}

// Options control an audit.
type Options struct {
	// Probe sends DELETE with dryRun=All for every row: the API server runs admission and answers,
	// persisting nothing. It is the one DELETE unprune can send, and only with this option.
	Probe bool
	// ControllerAs is the user Argo CD's controller acts as in the in-cluster destination, for
	// probing as it (e.g. system:serviceaccount:argocd:argocd-application-controller); empty
	// probes as the user, whose own rights then limit what the probe can tell.
	ControllerAs string
	Workers      int
	// Upgrade also looks for what upgrading the installation to Argo CD v3.6 would hand to its apps
	// (WhenArgoCDUpgraded): it lists the Applications of every namespace and reads their objects, so
	// only a whole audit asks for it, not the watch's per-app evaluations.
	Upgrade bool
	// Filter is resource.exclusions/inclusions, which decide what Argo CD watches and so what a
	// cascade can reach; nil applies only Argo CD's built-in exclusions.
	Filter *argocd.ResourceFilter
}

type job struct {
	row     Row
	objects cluster.Objects
	ref     cluster.Ref
	live    *cluster.Object
}

// Run audits apps.
func Run(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, o Options) (Report, error) {
	rep := Report{ArgoCDNamespace: argo.Namespace(), AppsAudited: len(apps)}
	byCluster := map[string][]*job{}
	objectsOf := map[string]cluster.Objects{}
	var order []string
	for _, app := range apps {
		if p := argocd.EffectivePrune(s.Version, "", app.SyncOptions); p.Value != argocd.PruneAllowed || len(p.Notes) > 0 {
			counts := "counts for every object without its own Prune= option"
			if p.Value == argocd.PruneAllowed {
				counts = strings.Join(p.Notes, "; ")
			}
			rep.Softened = append(rep.Softened, fmt.Sprintf("%s: syncOptions %s (%s)", app.Ref(), strings.Join(app.SyncOptions, ","), counts))
		}
		var jobs []*job
		for _, r := range app.Resources {
			switch {
			case r.Hook:
				// Hooks are never pruned; their delete policy handles them.
			case r.RequiresPruning:
				jobs = append(jobs, &job{row: Row{App: app, Resource: r, When: Now}})
			case app.AutoPrune:
				if c, _ := risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, argo.Namespace()); c == risk.High {
					jobs = append(jobs, &job{row: Row{App: app, Resource: r, When: WhenRemovedFromGit}})
				}
			}
		}
		if len(jobs) == 0 {
			continue
		}
		objects, err := argo.Destination(ctx, app)
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
			for _, j := range jobs {
				j.row.LiveError = err.Error()
				j.row.Cluster = cluster.Info{Name: app.Destination.Name, Server: app.Destination.Server}
				j.row.Risk, j.row.RiskWhy = risk.Classify(risk.Object{Group: j.row.Resource.Group, Kind: j.row.Resource.Kind, Name: j.row.Resource.Name}, argo.Namespace())
				rep.Rows = append(rep.Rows, j.row)
			}
			continue
		}
		key := objects.Info().Name + "|" + objects.Info().Server
		if _, ok := objectsOf[key]; !ok {
			objectsOf[key] = objects
			order = append(order, key)
		}
		for _, j := range jobs {
			j.objects = objects
			j.row.Cluster = objects.Info()
		}
		byCluster[key] = append(byCluster[key], jobs...)
	}
	var mu sync.Mutex
	parallel.ForEach(len(order), len(order), func(i int) {
		rows, warnings := auditCluster(ctx, objectsOf[order[i]], byCluster[order[i]], s, argo, o)
		mu.Lock()
		rep.Rows = append(rep.Rows, rows...)
		rep.Warnings = append(rep.Warnings, warnings...)
		mu.Unlock()
	})
	rep.Rows = together(rep.Rows)
	noteNamespacedApps(ctx, argo, rep.Rows)
	family, warnings := familyRows(ctx, argo, s, apps, o)
	rep.Rows, rep.Warnings = append(rep.Rows, family...), append(rep.Warnings, warnings...)
	upgrade, warnings := upgradeRows(ctx, argo, s, apps, o)
	rep.Rows, rep.Warnings = append(rep.Rows, upgrade...), append(rep.Warnings, warnings...)
	replaced, warnings := replaceRows(ctx, argo, s, apps, o)
	rep.Rows, rep.Warnings = append(rep.Rows, replaced...), append(rep.Warnings, warnings...)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool {
		a, b := rep.Rows[i], rep.Rows[j]
		if a.When != b.When {
			return a.When == Now
		}
		if a.App.Ref() != b.App.Ref() {
			return a.App.Ref() < b.App.Ref()
		}
		return a.Resource.String() < b.Resource.String()
	})
	sort.Strings(rep.Warnings)
	return rep, nil
}

// auditCluster reads one destination's rows in bulk and judges each.
func auditCluster(ctx context.Context, objects cluster.Objects, jobs []*job, s argocd.Settings, argo cluster.ArgoCD, o Options) ([]Row, []string) {
	refs := make([]cluster.Ref, len(jobs))
	for i, j := range jobs {
		r := j.row.Resource
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			ref = cluster.Ref{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		}
		j.ref, refs[i] = ref, ref
	}
	for i, res := range objects.Read(ctx, refs) {
		if res.Err != nil {
			jobs[i].row.LiveError = res.Err.Error()
		} else {
			jobs[i].live = res.Object
		}
	}
	return judgeCluster(ctx, objects, jobs, s, argo, o)
}

// judgeCluster judges one destination's jobs, their live objects read, with the cluster's installed
// policy and, in the cluster Argo CD runs in, the probe acting as its controller.
func judgeCluster(ctx context.Context, objects cluster.Objects, jobs []*job, s argocd.Settings, argo cluster.ArgoCD, o Options) ([]Row, []string) {
	return judgeClusterAs(ctx, objects, jobs, s, argo, o, deletion.Prune)
}

// judgeClusterAs is judgeCluster for the event that deletes the objects.
func judgeClusterAs(ctx context.Context, objects cluster.Objects, jobs []*job, s argocd.Settings, argo cluster.ArgoCD, o Options, e deletion.Event) ([]Row, []string) {
	var warnings []string
	policy, warn := guard.ReadInstalled(ctx, objects)
	if warn != "" {
		warnings = append(warnings, warn)
	}
	controllerAs := ""
	if objects.Info().Name == argocd.InClusterName || objects.Info().Server == argocd.InClusterServer {
		controllerAs = o.ControllerAs
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 8
	}
	rows := make([]Row, len(jobs))
	step := progress.Start(ctx, "auditing deletions in cluster "+objects.Info().Name, len(jobs))
	defer step.Finish()
	parallel.ForEach(len(jobs), workers, func(i int) {
		rows[i] = judge(ctx, objects, jobs[i], s, argo.Namespace(), policy, o.Probe, controllerAs, e)
		step.Add(1)
	})
	return rows, warnings
}

func judge(ctx context.Context, objects cluster.Objects, j *job, s argocd.Settings, argocdNamespace string, policy *guard.Installed, probe bool, controllerAs string, e deletion.Event) Row {
	row := j.row
	r := row.Resource
	obj := deletion.FromRow(r)
	if j.live != nil {
		obj = deletion.FromLive(j.live, &r)
		row.Contents = risk.ContentsOf(ctx, objects, j.ref, r)
	}
	row.Risk, row.RiskWhy = risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Labels: obj.Labels, Annotations: obj.Annotations}, argocdNamespace)
	c := deletion.Context{Version: s.Version, AppSyncOptions: row.App.SyncOptions, Policy: policy}
	if prober, canProbe := objects.(cluster.Prober); probe && j.live != nil && canProbe {
		row.Probe = probeDelete(ctx, prober, j.ref, controllerAs)
		c.Probe = row.Probe.Result
	}
	v := deletion.Judge(obj, e, c)
	row.Guards, row.Guarded, row.Notes = v.Guards, v.Guarded, append(row.Notes, v.Notes...)
	row.judged = &judged{object: obj, verdict: v}
	return row
}

// together judges the rows one sync with prune deletes as the one event they are
// (deletion.Together): an app's rows requiring pruning now, in one cluster. A row kept by its own
// guards inside a Namespace the same sync prunes is deleted with it. Rows of WhenRemovedFromGit are
// each a deletion of its own (only what leaves git is pruned), and stay as judged.
func together(rows []Row) []Row {
	type event struct{ app, server, name string }
	at := map[event][]int{}
	var order []event
	for i, r := range rows {
		if r.When != Now || r.judged == nil {
			continue
		}
		e := event{r.App.Ref(), r.Cluster.Server, r.Cluster.Name}
		if _, ok := at[e]; !ok {
			order = append(order, e)
		}
		at[e] = append(at[e], i)
	}
	for _, e := range order {
		objects := make([]deletion.Object, len(at[e]))
		verdicts := make([]deletion.Verdict, len(at[e]))
		for k, i := range at[e] {
			objects[k], verdicts[k] = rows[i].judged.object, rows[i].judged.verdict
		}
		for k, v := range deletion.Together(objects, verdicts) {
			r := &rows[at[e][k]]
			r.Notes = append(r.Notes, v.Notes[len(r.judged.verdict.Notes):]...)
			r.Guarded, r.judged.verdict = v.Guarded, v
		}
	}
	return rows
}

// noteNamespacedApps says which Applications a Namespace's deletion would delete with it (apps in
// any namespace): the namespace controller deletes every object in it, and each app's resources
// finalizer then cascades. `unprune check` follows each of them.
func noteNamespacedApps(ctx context.Context, argo cluster.ArgoCD, rows []Row) {
	for i := range rows {
		r := &rows[i]
		if r.Resource.Group != "" || r.Resource.Kind != "Namespace" || r.Guarded ||
			(r.Cluster.Name != argocd.InClusterName && r.Cluster.Server != argocd.InClusterServer) {
			continue
		}
		apps, err := argo.ListApplications(ctx, cluster.Selector{Namespace: r.Resource.Name})
		if err != nil || len(apps) == 0 {
			continue
		}
		var names []string
		for _, a := range apps {
			names = append(names, a.Ref())
		}
		sort.Strings(names)
		r.Notes = append(r.Notes, fmt.Sprintf("holds %d Application(s) (%s): deleting the namespace deletes them, and their resources finalizers then delete what they track",
			len(apps), strings.Join(names, ", ")))
	}
}
