package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/cluster"
)

func dryRunAll(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// ApplicationObject reads an Application in full.
func (a *ArgoCD) ApplicationObject(ctx context.Context, namespace, name string) (map[string]any, error) {
	u, err := a.Objects.Dynamic.Resource(GVRApplication).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, cluster.Explain(err, fmt.Sprintf("get Application %s/%s", namespace, name), a.Cluster())
	}
	return u.Object, nil
}

// CreateApplication creates an Application.
func (a *ArgoCD) CreateApplication(ctx context.Context, obj map[string]any, dryRun bool) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: obj}
	out, err := a.Objects.Dynamic.Resource(GVRApplication).Namespace(u.GetNamespace()).Create(ctx, u,
		metav1.CreateOptions{FieldManager: a.Objects.FieldManager, DryRun: dryRunAll(dryRun)})
	if err != nil {
		return nil, cluster.Explain(err, fmt.Sprintf("create Application %s/%s", u.GetNamespace(), u.GetName()), a.Cluster())
	}
	return out.Object, nil
}

// PatchApplication applies a JSON merge patch to an Application.
func (a *ArgoCD) PatchApplication(ctx context.Context, namespace, name string, mergePatch []byte, dryRun bool) (map[string]any, error) {
	out, err := a.Objects.Dynamic.Resource(GVRApplication).Namespace(namespace).Patch(ctx, name, types.MergePatchType, mergePatch,
		metav1.PatchOptions{FieldManager: a.Objects.FieldManager, DryRun: dryRunAll(dryRun)})
	if err != nil {
		return nil, cluster.Explain(err, fmt.Sprintf("patch Application %s/%s", namespace, name), a.Cluster())
	}
	return out.Object, nil
}

// DeleteApplication deletes the Application object under uid and resourceVersion preconditions.
func (a *ArgoCD) DeleteApplication(ctx context.Context, namespace, name, uid, resourceVersion string, dryRun bool) error {
	u, rv := types.UID(uid), resourceVersion
	err := a.Objects.Dynamic.Resource(GVRApplication).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &u, ResourceVersion: &rv}, DryRun: dryRunAll(dryRun)})
	if err != nil {
		return cluster.Explain(err, fmt.Sprintf("delete Application %s/%s", namespace, name), a.Cluster())
	}
	return nil
}
