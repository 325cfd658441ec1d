package check

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// namespace follows the Applications a deleted Namespace holds (apps in any namespace): the
// namespace controller deletes every object in it, Applications included, and each app's
// finalizer then runs — when Argo CD's controller watches that namespace; otherwise the app waits
// in deletion for ever and its resources stay.
func (d *follower) namespace(ctx context.Context, objects cluster.Objects, name, by string, through []string) []AppChange {
	if info := objects.Info(); info.Name != argocd.InClusterName && info.Server != argocd.InClusterServer {
		return nil // Applications live in the cluster Argo CD runs in
	}
	apps, err := d.argo.ListApplications(ctx, cluster.Selector{Namespace: name})
	if err != nil {
		return []AppChange{{App: argocd.Application{Namespace: name}, Fate: NotEvaluated, Through: through,
			DeletedBy: by + " deletes Namespace " + name + ", and with it every Application in it", Error: fmt.Sprintf("cannot list its Applications: %v", err)}}
	}
	var out []AppChange
	for _, a := range apps {
		deletedBy := fmt.Sprintf("%s deletes Namespace %s, and with it every object in it, this Application included", by, name)
		watched, known := d.watches(ctx, name)
		if !watched {
			c := AppChange{App: a, DeletedBy: deletedBy, Through: through, Fate: NotEvaluated}
			if known {
				c.Fate = NotDeleted
				c.Notes = []string{fmt.Sprintf("Argo CD's controller does not watch namespace %s (%s): the app's finalizer is never processed, "+
					"so it waits in deletion and its resources stay; the Namespace stays Terminating", name, argocd.ParamAppNamespaces)}
			} else {
				c.Notes = []string{fmt.Sprintf("whether Argo CD's controller watches namespace %s is not known (%s could not be read or matched): "+
					"if it does, the app's finalizer deletes its resources", name, argocd.ParamAppNamespaces)}
			}
			out = append(out, c)
			continue
		}
		out = append(out, d.app(ctx, objects, a.Namespace, a.Name, deletedBy, through)...)
	}
	return out
}

// watches reports whether the application controller processes Applications in namespace: its own
// namespace, or one application.namespaces names (util/security IsNamespaceEnabled).
func (d *follower) watches(ctx context.Context, namespace string) (watched, known bool) {
	if namespace == d.argo.Namespace() {
		return true, true // without reading the parameters
	}
	if !d.paramsRead {
		d.paramsRead = true
		if r, ok := d.argo.(cluster.ParamsReader); ok {
			d.params, d.paramsErr = r.CmdParams(ctx)
		} else {
			d.paramsErr = fmt.Errorf("this backend cannot read argocd-cmd-params-cm")
		}
	}
	if d.paramsErr != nil {
		return false, false
	}
	return argocd.AppNamespaces{ArgoCD: d.argo.Namespace(), Patterns: argocd.SplitList(d.params[argocd.ParamAppNamespaces])}.Enabled(namespace)
}
