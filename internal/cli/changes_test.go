package cli

import (
	"errors"
	"testing"

	"github.com/unprune/unprune/internal/engine"
)

// TestEngineErrorsAreWordedWithFlags: the engine names no flag; the command line says which flag
// fixes a request, in the very words users (and the lab's goldens) have seen, with exit 2 (bad
// input).
func TestEngineErrorsAreWordedWithFlags(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&engine.RequestError{Kind: engine.ResourcesForOneApp, Err: errors.New("name resources for one app only")},
			"name resources for one app only; for several apps use --all"},
		{&engine.RequestError{Kind: engine.SameApp, Err: errors.New("argocd/a holds the resources already: name another app")},
			"--to names the app the resources are in already: name another app"},
		{&engine.RequestError{Kind: engine.UnlistedResource, Err: errors.New(`Application argocd/a lists no resource "Namespace/nope"; none of its resources requires pruning`)},
			`Application argocd/a lists no resource "Namespace/nope"; none of its resources requires pruning (--force reads an unlisted object anyway)`},
		{&engine.RequestError{Err: errors.New("anything else")}, "anything else"},
	} {
		err := engineError(c.err)
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Code != ExitFailure || err.Error() != c.want {
			t.Errorf("%v: got %T %q, want exit %d %q", c.err, err, err, ExitFailure, c.want)
		}
	}
	if err := engineError(errors.New("boom")); err.Error() != "boom" || ExitCode(err) != ExitFailure {
		t.Errorf("a failure: %q exit %d", err, ExitCode(err))
	}
}
