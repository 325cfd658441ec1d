package argocdapi

import (
	"context"
	"errors"
)

// errNoApplicationWrites says why rename cannot go through Argo CD's API: its application service
// has no dry run, and its delete has no uid or resourceVersion precondition
// (server/application/application.go, Delete), so unprune could not prove that the object it
// deletes is the one whose finalizers it removed.
var errNoApplicationWrites = errors.New("creating, patching and deleting Applications through Argo CD's API is not supported " +
	"(no dry run, no preconditions on delete): use your kubeconfig (--via kubeconfig)")

// ApplicationObject is not supported through Argo CD's API.
func (a *ArgoCD) ApplicationObject(context.Context, string, string) (map[string]any, error) {
	return nil, errNoApplicationWrites
}

// CreateApplication is not supported through Argo CD's API.
func (a *ArgoCD) CreateApplication(context.Context, map[string]any, bool) (map[string]any, error) {
	return nil, errNoApplicationWrites
}

// PatchApplication is not supported through Argo CD's API.
func (a *ArgoCD) PatchApplication(context.Context, string, string, []byte, bool) (map[string]any, error) {
	return nil, errNoApplicationWrites
}

// DeleteApplication is not supported through Argo CD's API.
func (a *ArgoCD) DeleteApplication(context.Context, string, string, string, string, bool) error {
	return errNoApplicationWrites
}
