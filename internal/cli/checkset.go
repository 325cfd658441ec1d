package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
)

// cutSetPrefix recognises applicationset/NAME (or appset/, applicationsets/), kubectl's TYPE/NAME.
func cutSetPrefix(arg string) (string, bool) {
	for _, p := range []string{"applicationset/", "applicationsets/", "appset/", "applicationset.argoproj.io/"} {
		if rest, ok := strings.CutPrefix(arg, p); ok {
			return rest, true
		}
	}
	return arg, false
}

// runSet checks a change to an ApplicationSet: the changed set is the one of that name in --manifests.
func (o *CheckOptions) runSet(ctx context.Context, argo cluster.ArgoCD, namespace string) error {
	var changed map[string]any
	for _, m := range o.given {
		gvk := m.Object.GroupVersionKind()
		if gvk.Group == "argoproj.io" && gvk.Kind == "ApplicationSet" && m.Object.GetName() == o.App.Name &&
			(m.Object.GetNamespace() == "" || m.Object.GetNamespace() == namespace) {
			changed = m.Object.Object
			changed["metadata"].(map[string]any)["namespace"] = namespace
		}
	}
	if changed == nil {
		return usageError("--manifests holds no ApplicationSet %s/%s: give the set as it is after the change", namespace, o.App.Name)
	}
	src := appset.Sources{}
	if o.RepoDir != "" {
		repo, err := appset.OpenRepo(ctx, o.RepoDir)
		if err != nil {
			return usageError("--repo-dir: %v", err)
		}
		src.Repo = repo
	}
	rep, err := check.RunSet(ctx, argo, o.installed.settings, changed, src, o.ask)
	if err != nil {
		return failure(fmt.Errorf("check ApplicationSet %s/%s: %w", namespace, o.App.Name, err))
	}
	return o.print(argo, rep, len(o.given))
}
