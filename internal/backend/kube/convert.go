package kube

import (
	"time"

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
		ManagedFields: managedFields(m.ManagedFields),
	}
	for _, o := range m.OwnerReferences {
		obj.Owners = append(obj.Owners, o.Kind+"/"+o.Name)
	}
	return obj
}

// FromContent is the object a full read of content gives: its metadata, and content itself.
func FromContent(r cluster.Ref, content map[string]any) *cluster.Object {
	u := &unstructured.Unstructured{Object: content}
	obj := &cluster.Object{
		Ref: r, UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Deleting: u.GetDeletionTimestamp() != nil,
		ManagedFields: managedFields(u.GetManagedFields()), Content: content,
	}
	for _, o := range u.GetOwnerReferences() {
		obj.Owners = append(obj.Owners, o.Kind+"/"+o.Name)
	}
	return obj
}

// managedFields converts managedFields entries as the API server sent them: the time in the form
// metav1.Time encodes it (RFC 3339, UTC, seconds), fieldsV1 as its raw JSON.
func managedFields(entries []metav1.ManagedFieldsEntry) []cluster.ManagedFieldsEntry {
	if len(entries) == 0 {
		return nil
	}
	out := make([]cluster.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		out[i] = cluster.ManagedFieldsEntry{Manager: e.Manager, Operation: string(e.Operation), APIVersion: e.APIVersion,
			FieldsType: e.FieldsType, Subresource: e.Subresource}
		if e.Time != nil {
			out[i].Time = e.Time.UTC().Format(time.RFC3339)
		}
		if e.FieldsV1 != nil {
			out[i].FieldsV1 = append([]byte(nil), e.FieldsV1.Raw...)
		}
	}
	return out
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
