package risk

import (
	"context"
	"fmt"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Contents is what a deletion takes with it.
type Contents struct {
	// Objects in a Namespace; CustomResources of a CRD; -1 when not counted.
	Objects         int64
	CustomResources int64
	// Partial says some kinds could not be counted (the count is a minimum).
	Partial string
}

// ContentsOf says what a deletion takes with it: the objects in a Namespace, the custom resources
// of a CRD. Nil for other kinds, or when the backend cannot count.
func ContentsOf(ctx context.Context, objects cluster.Objects, ref cluster.Ref, r argocd.Resource) *Contents {
	counter, ok := objects.(cluster.Counter)
	if !ok {
		return nil
	}
	switch {
	case r.Group == "" && r.Kind == "Namespace":
		n, skipped, err := counter.CountInNamespace(ctx, r.Name)
		c := &Contents{Objects: n, CustomResources: -1}
		switch {
		case err != nil:
			c.Objects, c.Partial = -1, "not counted: "+err.Error()
		case skipped > 0:
			c.Partial = fmt.Sprintf("at least; %d kinds unreadable", skipped)
		}
		return c
	case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
		crd, err := objects.Get(ctx, ref)
		c := &Contents{Objects: -1, CustomResources: -1}
		if err == nil {
			c.CustomResources, err = counter.CountCustomResources(ctx, crd)
		}
		if err != nil {
			c.CustomResources, c.Partial = -1, "not counted: "+err.Error()
		}
		return c
	}
	return nil
}
