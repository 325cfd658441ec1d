package engine

import "fmt"

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

// Words are the command line's names for what a user can do, which messages about single objects
// mention (they go into reports, so the engine cannot leave the wording to its caller): the engine
// itself names no flag and no command.
type Words struct {
	// Prepare is the option that marks resources before the commit that moves them.
	Prepare string
	// PrepareCommand is the command that does it.
	PrepareCommand string
	// ReadApplications says how to let undo read the Applications of the journal's Argo CD.
	ReadApplications string
}
