package engine

import (
	"fmt"

	"github.com/unprune/unprune/internal/option"
)

// RequestError is a request that cannot be carried out as asked: nothing was read beyond what
// showed it, nothing was changed. Kind says which rule it breaks, so that the command line can say
// what to do with its own flags; Err says what is wrong without naming any.
type RequestError struct {
	Kind RequestKind
	Err  error
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// RequestKind is the rule a request breaks.
type RequestKind int

const (
	// RequestInvalid: Err says all there is to say.
	RequestInvalid RequestKind = iota
	// ResourcesForOneApp: resources were named along with several apps, or a selection of apps.
	ResourcesForOneApp
	// SameApp: a move names the app the resources are in already as the one to move them to.
	SameApp
	// UnlistedResource: the app lists no such resource (asked for, it can be read anyway).
	UnlistedResource
)

func invalid(format string, args ...any) error {
	return &RequestError{Kind: RequestInvalid, Err: fmt.Errorf(format, args...)}
}

// The command line's options that messages about single objects recommend: they go into reports,
// so the engine cannot leave the wording to its caller, and names the options (package option)
// without spelling them.
func prepareOption() string  { return "`" + option.Prepare.String() + "`" }
func prepareCommand() string { return "`move " + option.Prepare.String() + "`" }
func readApplicationsHow() string {
	return fmt.Sprintf("%v for the cluster Argo CD runs in, or %v argocd and `applications, get` on the app", option.ArgoCDContext, option.Via)
}
