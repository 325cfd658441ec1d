package kube

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/cluster"
)

func fromMeta(r cluster.Ref, m *metav1.PartialObjectMetadata) *cluster.Object {
	if r.Name == "" {
		r.Name, r.Namespace = m.Name, m.Namespace
	}
	obj := &cluster.Object{
		Ref: r, UID: string(m.UID), ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, Annotations: m.Annotations, Deleting: m.DeletionTimestamp != nil,
	}
	for _, o := range m.OwnerReferences {
		obj.Owners = append(obj.Owners, o.Kind+"/"+o.Name)
	}
	return obj
}

func fromMap(r cluster.Ref, content map[string]any) *cluster.Object {
	u := &unstructured.Unstructured{Object: content}
	obj := &cluster.Object{
		Ref: r, UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Deleting: u.GetDeletionTimestamp() != nil,
		Content: content,
	}
	for _, o := range u.GetOwnerReferences() {
		obj.Owners = append(obj.Owners, o.Kind+"/"+o.Name)
	}
	return obj
}

// withRef gives an object read by a LIST the ref it was asked for.
func withRef(r cluster.Ref, obj *cluster.Object) *cluster.Object {
	out := *obj
	out.Ref = r
	return &out
}

func notFound(r cluster.Ref) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: r.Group, Resource: r.Resource}, r.Name)
}
