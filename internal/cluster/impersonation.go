package cluster

import (
	"fmt"

	"github.com/unprune/unprune/internal/option"
)

// ChainedImpersonationError is a request as As that was not sent because the client already acts
// as ActingAs (kubectl's --as, --as-group, --as-uid): the API server does not let an impersonated
// user impersonate in turn, and replacing the impersonation would send the request with the
// credentials' own rights instead of ActingAs's.
type ChainedImpersonationError struct {
	ActingAs string
	As       string
}

func (e *ChainedImpersonationError) Error() string {
	return fmt.Sprintf("cannot act as %s while acting as %s (%v): Kubernetes does not chain impersonation; run without %v to act as %s", e.As, e.ActingAs, option.As, option.As, e.As)
}
