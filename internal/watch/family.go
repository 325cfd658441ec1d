package watch

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// enqueueChildren re-evaluates the child Applications an app of apps tracks when what decides
// their whole-app rows changed on the parent: whether it prunes automatically, or which children it
// tracks (audit's familyRow). Status updates that change neither do not touch the children.
func (w *watcher) enqueueChildren(old, obj any) {
	before, after := parentOf(old), parentOf(obj)
	if old != nil && before.autoPrune == after.autoPrune && slices.Equal(before.children, after.children) {
		return
	}
	for _, key := range append(before.children, after.children...) {
		w.enqueue(cache.ExplicitKey(key))
	}
}

// parent is what a parent app's children's rows depend on.
type parent struct {
	autoPrune bool
	children  []string
}

func parentOf(obj any) parent {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return parent{}
	}
	var p parent
	p.autoPrune, _, _ = unstructured.NestedBool(u.Object, "spec", "syncPolicy", "automated", "prune")
	resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range resources {
		m, _ := r.(map[string]any)
		if m["group"] == "argoproj.io" && m["kind"] == "Application" {
			ns, _ := m["namespace"].(string)
			name, _ := m["name"].(string)
			p.children = append(p.children, ns+"/"+name)
		}
	}
	sort.Strings(p.children)
	return p
}
