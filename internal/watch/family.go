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
func (mgr *manager) enqueueChildren(old, obj any) {
	before, after := mgr.parentOf(old), mgr.parentOf(obj)
	if old != nil && before.autoPrune == after.autoPrune && slices.Equal(before.children, after.children) {
		return
	}
	for _, key := range append(before.children, after.children...) {
		mgr.enqueue(cache.ExplicitKey(key))
	}
}

// parent is what a parent app's children's rows depend on.
type parent struct {
	autoPrune bool
	children  []string
}

func (mgr *manager) parentOf(obj any) parent {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	a := mgr.informed.AsApp(obj)
	if a == nil {
		return parent{}
	}
	var p parent
	p.autoPrune, _, _ = unstructured.NestedBool(a.Object, "spec", "syncPolicy", "automated", "prune")
	for _, r := range a.Resources() {
		if r.Group == "argoproj.io" && r.Kind == "Application" {
			p.children = append(p.children, r.Namespace+"/"+r.Name)
		}
	}
	sort.Strings(p.children)
	return p
}
