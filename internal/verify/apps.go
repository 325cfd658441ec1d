package verify

import (
	"context"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/progress"
)

// Request is one Application to wait for.
type Request struct {
	App argocd.Application
	// Rows are the app's status rows of the objects changed (released, or moved).
	Rows []argocd.Resource
	Want Expectation
	// Objects is the app's destination cluster, read to drop from the rows keeping the app
	// OutOfSync those Argo CD does not count (IgnoreExtraneous); nil keeps them all.
	Objects cluster.Objects
}

// Result is what Argo CD showed about an app after the change.
type Result struct {
	// Verified is true when a comparison that started after the last patch showed the expectation
	// met (the released objects gone from the app, or no longer making it OutOfSync; the moved
	// objects adopted).
	Verified bool
	// Compared is true when Argo CD compared the app after the change; false means its controller
	// has not got to it yet (busy, or stopped), so the status says nothing about the change.
	Compared   bool
	Synced     bool
	SyncStatus string
	Revision   string
	// Elapsed is from the last patch to the comparison that proved it.
	Elapsed time.Duration
	// StillListed are changed objects Argo CD still counts as the expectation forbids.
	StillListed []argocd.Resource
	// OutOfSync are other resources keeping the app OutOfSync (not unprune's to change).
	OutOfSync []argocd.Resource
	// Error is why verification could not run.
	Error string
}

// Progress names the progress line Apps shows; empty shows none.
type Progress string

// Apps waits for every request at once (Wait, each with its own refresh) and returns the results
// in the order of the requests. patchedAt is when the last patch returned.
func Apps(ctx context.Context, argo cluster.ArgoCD, reqs []Request, patchedAt time.Time, opts Options, show Progress) []Result {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	out := make([]Result, len(reqs))
	var step *progress.Step // nil draws nothing
	if show != "" {
		step = progress.Start(ctx, string(show), len(reqs))
	}
	defer step.Finish()
	parallel.ForEach(len(reqs), len(reqs), func(i int) {
		out[i] = one(ctx, argo, reqs[i], patchedAt, opts, now)
		step.Add(1)
	})
	return out
}

func one(ctx context.Context, argo cluster.ArgoCD, r Request, patchedAt time.Time, opts Options, now func() time.Time) Result {
	o, err := Wait(ctx, argo, r.App, r.Rows, r.Want, patchedAt, opts)
	v := Result{Verified: o.Verified, Compared: o.Fresh, Synced: o.App.SyncStatus == "Synced", SyncStatus: o.App.SyncStatus,
		Revision: o.App.Revision, Elapsed: now().Sub(patchedAt), StillListed: o.Lingering, OutOfSync: o.OutOfSync}
	if err != nil {
		v.Verified = false
		v.Error = cluster.Explain(err, "verify Application "+r.App.Ref(), argo.Cluster()).Error()
	}
	if r.Objects != nil {
		v.OutOfSync = counted(ctx, r.Objects, o.OutOfSync)
	}
	return v
}

// counted drops, from the rows keeping an app OutOfSync, those whose live object is marked
// IgnoreExtraneous: Argo CD does not count them against the app.
func counted(ctx context.Context, objects cluster.Objects, rows []argocd.Resource) []argocd.Resource {
	var check []int
	var refs []cluster.Ref
	for i, r := range rows {
		if !r.RequiresPruning {
			continue
		}
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			continue
		}
		check = append(check, i)
		refs = append(refs, ref)
	}
	ignored := map[int]bool{}
	for k, res := range objects.Read(ctx, refs) {
		if res.Object != nil && argocd.HasOption(res.Object.Annotations[argocd.AnnotationCompareOptions], argocd.OptionIgnoreExtraneous) {
			ignored[check[k]] = true
		}
	}
	var out []argocd.Resource
	for i, r := range rows {
		if !ignored[i] {
			out = append(out, r)
		}
	}
	return out
}
