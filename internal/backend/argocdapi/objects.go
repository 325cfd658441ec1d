package argocdapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/progress"
)

// Objects are one app's live objects, read and patched through Argo CD's API (the endpoints of
// `argocd app resources`, `argocd app patch-resource`): Argo CD acts with its own credentials for
// the destination cluster, under its RBAC for the user's token.
type Objects struct {
	c   *Client
	app argocd.Application
}

var _ cluster.Objects = (*Objects)(nil)

// ErrNoDryRun is returned for a server-side dry run: Argo CD's API has none.
var ErrNoDryRun error = &sentinel{func() string {
	return fmt.Sprintf("Argo CD's API cannot send a patch as a dry run: preview with %v=client, or use a kubeconfig for the cluster", option.DryRun)
}}

// Info names the app's destination cluster.
func (o *Objects) Info() cluster.Info { return DestinationInfo(o.c, o.app.Destination) }

// Resolve builds the ref of an object of the app. The API takes group, version and kind, so no
// discovery is needed; the version must be known (status rows carry it).
func (o *Objects) Resolve(_ context.Context, group, kind, version, namespace, name string) (cluster.Ref, error) {
	if version == "" {
		for _, r := range o.app.Resources {
			if r.Group == group && strings.EqualFold(r.Kind, kind) && r.Name == name && r.Namespace == namespace {
				version, kind = r.Version, r.Kind
			}
		}
	}
	if version == "" {
		return cluster.Ref{}, fmt.Errorf("Application %s lists no %s %s: through Argo CD's API only the app's own resources can be reached", o.app.Ref(), kind, name)
	}
	return cluster.Ref{Group: group, Version: version, Resource: strings.ToLower(kind) + "s", Kind: kind,
		Namespace: namespace, Name: name, Namespaced: namespace != ""}, nil
}

func (o *Objects) query(r cluster.Ref) url.Values {
	q := url.Values{}
	q.Set("namespace", r.Namespace)
	q.Set("resourceName", r.Name)
	q.Set("version", r.Version)
	q.Set("group", r.Group)
	q.Set("kind", r.Kind)
	q.Set("appNamespace", o.app.Namespace)
	if o.app.Project != "" {
		q.Set("project", o.app.Project)
	}
	return q
}

func (o *Objects) path(suffix string) string {
	return "/api/v1/applications/" + url.PathEscape(o.app.Name) + suffix
}

type resourceResponse struct {
	Manifest string `json:"manifest"`
}

func fromManifest(r cluster.Ref, manifest string) (*cluster.Object, error) {
	var content map[string]any
	if err := json.Unmarshal([]byte(manifest), &content); err != nil {
		return nil, fmt.Errorf("the live %s Argo CD returned is not JSON: %w", r, err)
	}
	u := &unstructured.Unstructured{Object: content}
	obj := &cluster.Object{Ref: r, UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Deleting: u.GetDeletionTimestamp() != nil, Content: content}
	// Argo CD returns the live object with its managedFields (server/application/application.go,
	// GetResource and PatchResource only mask Secrets' data), and passes a merge patch to the
	// destination unchanged: releasing Argo CD's field ownership works through its API too.
	var meta struct {
		Metadata struct {
			ManagedFields []cluster.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(manifest), &meta); err == nil {
		obj.ManagedFields = meta.Metadata.ManagedFields
	}
	for _, ref := range u.GetOwnerReferences() {
		obj.Owners = append(obj.Owners, ref.Kind+"/"+ref.Name)
	}
	return obj, nil
}

// Get reads one live object through GET /api/v1/applications/{app}/resource: fresh from the
// destination's API server.
func (o *Objects) Get(ctx context.Context, r cluster.Ref) (*cluster.Object, error) {
	var resp resourceResponse
	if err := o.c.do(ctx, "GET", o.path("/resource"), o.query(r), nil, &resp); err != nil {
		return nil, o.explain(err, "get "+r.String()+" through Argo CD")
	}
	return fromManifest(r, resp.Manifest)
}

// explain says what Argo CD's "not found as part of application" means here: its API reaches only
// an app's resources (server/application/application.go, getAppLiveResource), and a released
// object has left the app.
func (o *Objects) explain(err error, what string) error {
	if err != nil && strings.Contains(err.Error(), "not found as part of application") {
		return fmt.Errorf("%s: Argo CD's API reaches only Application %s's resources, and this object is not one (any more): "+
			"reach its cluster %s with your kubeconfig instead (%v kube; %v for another cluster): %w",
			what, o.app.Ref(), o.Info().Name, option.Via, option.ClusterContext, err)
	}
	return cluster.Explain(err, what, o.Info())
}

// Read reads the objects one by one through the resource endpoint, concurrently. (Argo CD's
// managed-resources endpoint would read them at once, but from the controller's cache and with
// Secrets' data masked.)
func (o *Objects) Read(ctx context.Context, refs []cluster.Ref) []cluster.ReadResult {
	out := make([]cluster.ReadResult, len(refs))
	step := progress.Start(ctx, "reading live objects through Argo CD", len(refs))
	defer step.Finish()
	parallel.ForEach(len(refs), 16, func(i int) {
		obj, err := o.Get(ctx, refs[i])
		out[i] = cluster.ReadResult{Object: obj, Err: err}
		step.Add(1)
	})
	return out
}

// Patch sends the merge patch through POST /api/v1/applications/{app}/resource; it carries
// metadata.resourceVersion, which the destination's API server enforces as a precondition.
func (o *Objects) Patch(ctx context.Context, r cluster.Ref, body []byte, dryRun bool) (*cluster.Object, error) {
	if dryRun {
		return nil, ErrNoDryRun
	}
	q := o.query(r)
	q.Set("patchType", "application/merge-patch+json")
	var resp resourceResponse
	// The request's body is its "patch" field (application.proto: body: "patch"): a JSON string.
	if err := o.c.do(ctx, "POST", o.path("/resource"), q, string(body), &resp); err != nil {
		if strings.Contains(err.Error(), "not found as part of application") {
			return nil, o.explain(err, "patch "+r.String()+" through Argo CD")
		}
		return nil, err
	}
	return fromManifest(r, resp.Manifest)
}
