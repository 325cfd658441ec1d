package engine

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/plan"
)

// RefuseNamespacePruned: a mark that keeps an object from its app's prune is worth nothing while
// the same app prunes the object's Namespace (deletion.Together).
const RefuseNamespacePruned plan.RefusalCode = "NamespacePruned"

// prunedNamespace says whether app's prune deletes Namespace ns — the app lists it as requiring
// pruning and, read live, nothing keeps it (the one deletion verdict) — and so everything in it,
// whatever marks an object there carries: the namespace controller reads none of them. marked are
// the Namespaces this very run guards (their keys), which then hold.
func (e *Engine) prunedNamespace(ctx context.Context, app argocd.Application, objects cluster.Objects, ns string, marked map[string]bool) (bool, error) {
	row, ok := namespaceRow(app, ns)
	if !ok || marked[row.Key()] {
		return false, nil
	}
	ref, err := objects.Resolve(ctx, "", "Namespace", "v1", "", ns)
	if err != nil {
		return false, err
	}
	res := objects.Read(ctx, []cluster.Ref{ref})[0]
	switch {
	case cluster.IsNotFound(res.Err):
		return false, nil
	case res.Err != nil:
		return false, res.Err
	}
	policy, _ := guard.ReadInstalled(ctx, objects)
	v := deletion.Judge(deletion.FromLive(res.Object, &row), deletion.Prune, deletion.Context{Version: e.Settings.Version, AppSyncOptions: app.SyncOptions, Policy: policy})
	return v.Deletes(), nil
}

// namespaceRow is app's status row for Namespace ns when the app lists it as requiring pruning.
func namespaceRow(app argocd.Application, ns string) (argocd.Resource, bool) {
	for _, r := range app.Resources {
		if r.Group == "" && r.Kind == "Namespace" && r.Name == ns && r.RequiresPruning && !r.Hook {
			return r, true
		}
	}
	return argocd.Resource{}, false
}

// namespaceGoesWhy is the message for an object whose mark the prune of its Namespace undoes.
func namespaceGoesWhy(app, ns, mark, verb string) string {
	return fmt.Sprintf("its Namespace %s requires pruning in %s too, and nothing guards it: a sync with prune deletes the Namespace and everything in it, "+
		"%s on this object aside (the namespace controller reads no Argo CD option); %s Namespace/%s as well", ns, app, mark, verb, ns)
}
