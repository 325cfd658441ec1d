package argocdapi

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/unprune/unprune/internal/option"
)

// Credentials problems: argocd-server cannot be reached with what unprune was given.
type CredentialsProblem int

const (
	NoServer      CredentialsProblem = iota + 1 // no server address anywhere
	NoToken                                     // a server, but no token for it
	TokenRejected                               // the server answered 401 to the token
)

// CredentialsError says why unprune cannot talk to argocd-server with the credentials it has. Its
// remedy names the options for the server and the token, which the binaries spell differently
// (--server in the argocd plugin, --argocd-server in unprune): the command line words it with Say;
// Error says it as unprune spells them.
type CredentialsError struct {
	Problem CredentialsProblem
	Server  string
	// Reason is the server's answer, for TokenRejected.
	Reason string
}

func (e *CredentialsError) Error() string {
	return e.Say(option.ArgoCDServer.String(), option.ArgoCDAuthToken.String())
}

// Unwrap keeps a rejected token an Unauthorized API error, as cluster.Classify tells failures apart.
func (e *CredentialsError) Unwrap() error {
	if e.Problem == TokenRejected {
		return apierrors.NewUnauthorized(e.Reason)
	}
	return nil
}

// Say is the message with the server and token options spelled as given.
func (e *CredentialsError) Say(serverOption, tokenOption string) string {
	switch e.Problem {
	case NoServer:
		return "no Argo CD server: pass " + serverOption + " (or set ARGOCD_SERVER), or log in with `argocd login`"
	case NoToken:
		return fmt.Sprintf("no token for Argo CD server %s: pass %s (or set ARGOCD_AUTH_TOKEN), or log in with `argocd login`", e.Server, tokenOption)
	}
	return fmt.Sprintf("Argo CD server %s does not accept the token (%s): log in again (`argocd login`) or pass another %s", e.Server, e.Reason, tokenOption)
}
