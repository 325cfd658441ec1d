package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/cluster"
)

var gvrSelfSubjectAccessReview = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// impersonating returns a dynamic client acting as user (the clients' own when user is empty).
// When the clients already act as someone (--as), the API server cannot be asked as a third user:
// replacing the impersonation would send the request with the credentials' own rights.
func (o *Objects) impersonating(user string) (dynamic.Interface, error) {
	acting := o.Config.Impersonate
	if user == "" || (acting.UserName == user && len(acting.Groups) == 0 && acting.UID == "" && len(acting.Extra) == 0) {
		return o.Dynamic, nil
	}
	if acting.UserName != "" || len(acting.Groups) > 0 || acting.UID != "" {
		who := acting.UserName
		if who == "" {
			who = "groups " + strings.Join(acting.Groups, ",")
		}
		return nil, &cluster.ChainedImpersonationError{ActingAs: who, As: user}
	}
	cfg := rest.CopyConfig(o.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return dynamic.NewForConfig(cfg)
}

// ProbeDelete sends DELETE with dryRun=All: the API server authorizes it, runs every admission
// policy and webhook, and answers — deleting nothing. It is the only DELETE of a resource unprune
// sends (rename deletes an Application object, without finalizers: DeleteApplication).
func (o *Objects) ProbeDelete(ctx context.Context, r cluster.Ref, as string) error {
	dyn, err := o.impersonating(as)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
	if r.Namespace != "" {
		return dyn.Resource(o.gvr(r)).Namespace(r.Namespace).Delete(ctx, r.Name, opts)
	}
	return dyn.Resource(o.gvr(r)).Delete(ctx, r.Name, opts)
}

// CanI asks the API server with a SelfSubjectAccessReview (as the user, or impersonating as).
func (o *Objects) CanI(ctx context.Context, verb string, r cluster.Ref, as string) (bool, string, error) {
	dyn, err := o.impersonating(as)
	if err != nil {
		return false, "", err
	}
	review := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{
			"verb": verb, "group": r.Group, "resource": r.Resource, "namespace": r.Namespace, "name": r.Name,
		}},
	}}
	out, err := dyn.Resource(gvrSelfSubjectAccessReview).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
	reason, _, _ := unstructured.NestedString(out.Object, "status", "reason")
	return allowed, reason, nil
}

// GetClusterObject reads a cluster-scoped object in full.
func (o *Objects) GetClusterObject(ctx context.Context, group, version, resource, name string) (map[string]any, error) {
	u, err := o.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: resource}).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// count lists one item and reads remainingItemCount: the API server counts without sending the list.
func (o *Objects) count(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (int64, error) {
	list, err := o.quietMetadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	n := int64(len(list.Items))
	if list.RemainingItemCount != nil {
		n += *list.RemainingItemCount
	}
	return n, nil
}

// CountInNamespace counts the objects of every listable namespaced kind in a namespace, but the
// kinds of Options.Uncounted.
func (o *Objects) CountInNamespace(ctx context.Context, namespace string) (int64, int, error) {
	lists, err := o.Discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return 0, 0, err
	}
	var total int64
	skipped := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			// Subresources are not objects; events are counted once, in the core group.
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") || gv.Group == "events.k8s.io" ||
				slices.Contains(o.options.Uncounted, schema.GroupResource{Group: gv.Group, Resource: res.Name}) {
				continue
			}
			n, err := o.count(ctx, gv.WithResource(res.Name), namespace)
			if err != nil {
				skipped++
				continue
			}
			total += n
		}
	}
	return total, skipped, nil
}

// CountCustomResources counts the custom resources of a CRD, cluster-wide, in its served storage version.
func (o *Objects) CountCustomResources(ctx context.Context, crd *cluster.Object) (int64, error) {
	if crd.Content == nil {
		return 0, fmt.Errorf("the CRD was not read in full")
	}
	group, _, _ := unstructured.NestedString(crd.Content, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Content, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Content, "spec", "versions")
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			version, _ = m["name"].(string)
			if storage, _ := m["storage"].(bool); storage {
				break
			}
		}
	}
	if group == "" || plural == "" || version == "" {
		return 0, fmt.Errorf("the CRD serves no version")
	}
	return o.count(ctx, schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, "")
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// Apply server-side applies a cluster-scoped object (unprune's admission policy), as the field
// manager, taking over fields from other managers.
func (o *Objects) Apply(ctx context.Context, group, version, resource string, obj map[string]any, dryRun bool) error {
	u := &unstructured.Unstructured{Object: obj}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: o.FieldManager, Force: &force}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = o.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: resource}).
		Patch(ctx, u.GetName(), types.ApplyPatchType, body, opts)
	return err
}
