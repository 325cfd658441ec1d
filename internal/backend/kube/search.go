package kube

import (
	"context"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
)

// searchTTL is how long one search of the cluster serves again: a watch re-evaluating many apps
// in a burst lists the cluster once, and sees a new object within this long.
const searchTTL = 30 * time.Second

// search is the last listing of every object, kept for searchTTL.
type search struct {
	mu      sync.Mutex
	at      time.Time
	objects []*cluster.Object
	skipped []string
}

// EachObject calls fn with the metadata of every object of every kind the cluster serves and lists
// (namespaced kinds across all namespaces), as Argo CD's cluster cache watches them: what an app's
// cascade may reach beyond the rows its status lists. Kinds the user may not list are skipped and
// named. One listing serves for searchTTL.
func (o *Objects) EachObject(ctx context.Context, fn func(*cluster.Object)) ([]string, error) {
	o.search.mu.Lock()
	defer o.search.mu.Unlock()
	if o.search.objects == nil || time.Since(o.search.at) > searchTTL {
		objects, skipped, err := o.listEverything(ctx)
		if err != nil {
			return nil, err
		}
		o.search.objects, o.search.skipped, o.search.at = objects, skipped, time.Now()
	}
	for _, obj := range o.search.objects {
		fn(obj)
	}
	return o.search.skipped, nil
}

func (o *Objects) listEverything(ctx context.Context) ([]*cluster.Object, []string, error) {
	lists, err := o.Discovery.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, nil, cluster.Explain(err, "discover the cluster's API resources", o.Clients.Info)
	}
	var likes []cluster.Ref
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			// Subresources are not objects; events are never managed (Argo CD excludes them).
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") || gv.Group == "events.k8s.io" || (gv.Group == "" && res.Kind == "Event") {
				continue
			}
			likes = append(likes, cluster.Ref{Group: gv.Group, Version: gv.Version, Resource: res.Name, Kind: res.Kind, Namespaced: res.Namespaced})
		}
	}
	per := make([][]*cluster.Object, len(likes))
	failed := make([]bool, len(likes))
	parallel.ForEach(len(likes), 8, func(i int) {
		err := o.ListAll(ctx, likes[i], func(obj *cluster.Object) { per[i] = append(per[i], obj) })
		failed[i] = err != nil
	})
	var out []*cluster.Object
	var skipped []string
	for i, objs := range per {
		if failed[i] {
			skipped = append(skipped, likes[i].Resource+"."+likes[i].Group)
			continue
		}
		out = append(out, objs...)
	}
	return out, skipped, ctx.Err()
}
