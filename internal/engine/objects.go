package engine

import (
	"context"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/plan"
)

// ObjectsRequest is a metadata change on objects named one by one, outside any Application (guard
// protect|confirm), with the same preview, dry run, journal and undo as detach. What the change
// is belongs to the caller (package guard): the engine resolves, reads, plans and applies.
type ObjectsRequest struct {
	// Command and Strategy name the change in reports and the journal (guard, protect).
	Command, Strategy string
	Resources         []ResourceArg
	// Build plans the change for one object.
	Build func(plan.Target) plan.Plan
}

// PlanObjects resolves and reads the named objects in objects' cluster and plans each change.
func (e *Engine) PlanObjects(ctx context.Context, objects cluster.Objects, req ObjectsRequest) (*Planned, error) {
	p := &Planned{Command: req.Command, Strategy: req.Strategy, planner: objectsPlanner(req.Build)}
	for _, arg := range req.Resources {
		ref, err := objects.Resolve(ctx, arg.Group, arg.Kind, "", arg.Namespace, arg.Name)
		if err != nil {
			return nil, invalid("%s: %v", Quote(arg.Raw), err)
		}
		if ref.Namespaced && ref.Namespace == "" {
			return nil, invalid("%s is namespaced: use %s/NAMESPACE/%s", ref.Kind, arg.Kind, arg.Name)
		}
		p.Items = append(p.Items, &Item{Objects: objects, Ref: ref, Entry: -1})
	}
	e.readAndPlan(ctx, p, nil)
	return p, nil
}

// objectsPlanner plans an object outside any app: it sees no tracking, only the object's metadata.
type objectsPlanner func(plan.Target) plan.Plan

func (build objectsPlanner) Plan(_ *Item, live *cluster.Object) plan.Plan {
	return build(plan.Target{Ref: live.Ref.ObjectRef(), Labels: live.Labels, Annotations: live.Annotations, Deleting: live.Deleting})
}
