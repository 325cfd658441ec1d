package scan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/parallel"
)

// Prepared is an object `move --prepare` marked that still carries the marks: the move was not
// finished (its app keeps Prune=false,Delete=false, so it can never prune it nor its cascade delete
// it), and nothing else would say so.
type Prepared struct {
	// App is the app the object was prepared to leave.
	App      *argocd.Application
	Resource argocd.Resource
	Journal  string
	At       time.Time
	// Marks are the options of the prepare still in the object's sync-options.
	Marks []string
	// TrackedBy is the app instance tracking the object now: the source app's (the commit has not
	// landed, or its target has not taken it), or another's (the target's sync took it over).
	TrackedBy string
}

// FindPrepared reads, for every preparation of this machine's journals whose source app is among
// apps, the live object, and returns those that still carry the marks it added. An object gone,
// recreated, or whose marks someone took off is left out; one that cannot be read is a warning.
func FindPrepared(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, preps map[string]journal.Preparation) ([]Prepared, []string) {
	byApp := map[string]*argocd.Application{}
	for i := range apps {
		byApp[apps[i].Ref()] = &apps[i]
	}
	type job struct {
		p   journal.Preparation
		app *argocd.Application
	}
	var jobs []job
	for _, p := range preps {
		ref := p.App.Namespace + "/" + p.App.Name
		if app := byApp[ref]; app != nil {
			jobs = append(jobs, job{p, app})
		}
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].p.Object.String() < jobs[k].p.Object.String() })
	found := make([]*Prepared, len(jobs))
	warnings := make([]string, len(jobs))
	parallel.ForEach(len(jobs), 8, func(i int) {
		found[i], warnings[i] = preparedOf(ctx, argo, s, jobs[i].app, jobs[i].p)
	})
	var out []Prepared
	var warn []string
	for i := range jobs {
		if found[i] != nil {
			out = append(out, *found[i])
		}
		if warnings[i] != "" {
			warn = append(warn, warnings[i])
		}
	}
	return out, warn
}

func preparedOf(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, app *argocd.Application, p journal.Preparation) (*Prepared, string) {
	objects, err := argo.Destination(ctx, *app)
	if err != nil {
		return nil, fmt.Sprintf("cannot check whether %s still carries the marks of `move %v` (journal %s): %v", p.Object, option.Prepare, p.Path, err)
	}
	live, err := objects.Get(ctx, p.Object.Ref())
	switch {
	case cluster.IsNotFound(err):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("cannot check whether %s still carries the marks of `move %v` (journal %s): %v", p.Object, option.Prepare, p.Path, err)
	case live.UID != p.Object.UID:
		return nil, ""
	}
	after, _ := p.Change.Value()
	var before []string
	if p.Change.Before != nil {
		before = argocd.ParseOptions(*p.Change.Before)
	}
	var marks []string
	current := live.Annotations[argocd.AnnotationSyncOptions]
	for _, o := range argocd.ParseOptions(after) {
		if !slices.Contains(before, o) && argocd.HasOption(current, o) {
			marks = append(marks, o)
		}
	}
	if len(marks) == 0 {
		return nil, ""
	}
	o := p.Object
	own := s.Owner(live.Labels, live.Annotations, live.Ref.ObjectRef())
	return &Prepared{App: app, Resource: argocd.Resource{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name},
		Journal: p.Path, At: p.At, Marks: marks, TrackedBy: own.Instance}, ""
}
