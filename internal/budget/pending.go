package budget

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Deletion is one object an app's next operation deletes, as Argo CD's comparison lists it, and
// the UID it has now (empty when it is gone already).
type Deletion struct {
	Row  argocd.Resource
	UID  string
	Gone bool
}

// Pending reads what Argo CD's comparison says the app's next operation deletes: the resources
// requiring pruning (hooks left out), or, while the app is being deleted, everything it tracks;
// each read live for its UID, which an approval names. What says it in words: "its next sync with
// prune deletes" or "its deletion deletes". Unlike Decide, this reads the cluster.
func Pending(ctx context.Context, argo cluster.ArgoCD, app argocd.Application) (what string, out []Deletion, err error) {
	rows := app.Pruning()
	what = "its next sync with prune deletes"
	if app.Deleting {
		rows, what = app.Resources, "its deletion deletes"
	}
	if len(rows) == 0 {
		return what, nil, nil
	}
	objects, err := argo.Destination(ctx, app)
	if err != nil {
		return what, nil, err
	}
	refs := make([]cluster.Ref, 0, len(rows))
	for _, r := range rows {
		ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			return what, nil, fmt.Errorf("%s: %w", r, err)
		}
		refs = append(refs, ref)
	}
	for i, res := range objects.Read(ctx, refs) {
		switch {
		case res.Err != nil && cluster.IsNotFound(res.Err):
			out = append(out, Deletion{Row: rows[i], Gone: true})
		case res.Err != nil:
			return what, nil, fmt.Errorf("read %s: %w", rows[i], res.Err)
		default:
			out = append(out, Deletion{Row: rows[i], UID: res.Object.UID})
		}
	}
	return what, out, nil
}

// UIDs are the UIDs of the deletions that are not gone.
func UIDs(ds []Deletion) []string {
	var out []string
	for _, d := range ds {
		if !d.Gone {
			out = append(out, d.UID)
		}
	}
	return out
}
