package argocdapi

import (
	"context"

	"github.com/unprune/unprune/internal/option"
)

// errNoApplicationWrites says why rename cannot go through Argo CD's API: its application service
// has no dry run, and its delete has no uid or resourceVersion precondition
// (server/application/application.go, Delete), so unprune could not prove that the object it
// deletes is the one whose finalizers it removed.
var errNoApplicationWrites error = &sentinel{func() string {
	return "creating, patching and deleting Applications through Argo CD's API is not supported " +
		"(no dry run, no preconditions on delete): use your kubeconfig (" + option.Via.String() + " kube)"
}}

// sentinel is an error of this package's own, compared by identity, whose message is made when it
// is said: package variables are set before the command line has said how options are spelled.
type sentinel struct{ say func() string }

func (e *sentinel) Error() string { return e.say() }

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
