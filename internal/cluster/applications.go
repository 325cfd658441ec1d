package cluster

import "context"

// ApplicationWriter creates, patches and deletes Application objects themselves: what `unprune
// rename` and its undo need. Objects are the Application as the API stores it (apiVersion, kind,
// metadata, spec, and status where the API returns it).
type ApplicationWriter interface {
	// ApplicationObject reads an Application in full; a missing one satisfies IsNotFound.
	ApplicationObject(ctx context.Context, namespace, name string) (map[string]any, error)
	// CreateApplication creates obj (which carries no uid or resourceVersion). dryRun asks the API
	// server to judge it without persisting.
	CreateApplication(ctx context.Context, obj map[string]any, dryRun bool) (map[string]any, error)
	// PatchApplication applies a JSON merge patch, which carries metadata.resourceVersion so that a
	// concurrent change makes it fail with a conflict.
	PatchApplication(ctx context.Context, namespace, name string, mergePatch []byte, dryRun bool) (map[string]any, error)
	// DeleteApplication deletes the Application object, only if it still has this uid and
	// resourceVersion (preconditions): a finalizer added back since it was read, or a new app of
	// the same name, makes it fail with a conflict. It never deletes anything else; callers remove
	// the app's finalizers first so that Argo CD deletes none of its resources.
	DeleteApplication(ctx context.Context, namespace, name, uid, resourceVersion string, dryRun bool) error
}
