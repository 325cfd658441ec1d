package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/unprune/unprune/internal/option"
)

// Failure classifies an error from a backend, so that messages and exit codes say what happened.
type Failure string

const (
	FailureNone            Failure = ""
	FailureNotFound        Failure = "NotFound"
	FailureConflict        Failure = "Conflict"
	FailureRBAC            Failure = "Forbidden"       // Kubernetes RBAC refused the user
	FailureAdmission       Failure = "AdmissionDenied" // an admission policy or webhook refused the request
	FailureArgoCDDenied    Failure = "ArgoCDDenied"    // Argo CD's RBAC refused the user
	FailureInvalid         Failure = "Invalid"
	FailureUnreachable     Failure = "Unreachable"
	FailureTimeout         Failure = "Timeout"
	FailureCanceled        Failure = "Interrupted"
	FailureUnauthenticated Failure = "Unauthenticated"
	FailureOther           Failure = "Error"
)

// ArgoCDDeniedError is Argo CD's API refusing a call under its RBAC.
type ArgoCDDeniedError struct {
	Server string
	Msg    string
}

func (e *ArgoCDDeniedError) Error() string {
	return fmt.Sprintf("Argo CD denied: %s (ask your Argo CD admin for the permission, or use a user that has it)", e.Msg)
}

// UnreachableError says a server could not be reached at all.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: %s", e.Server, rootCause(e.Err))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Classify tells what kind of failure err is.
func Classify(err error) Failure {
	if err == nil {
		return FailureNone
	}
	var denied *ArgoCDDeniedError
	var unreachable *UnreachableError
	switch {
	case errors.Is(err, context.Canceled):
		return FailureCanceled
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return FailureTimeout
	case errors.As(err, &denied):
		return FailureArgoCDDenied
	case errors.As(err, &unreachable):
		return FailureUnreachable
	case apierrors.IsNotFound(err):
		return FailureNotFound
	case apierrors.IsConflict(err):
		return FailureConflict
	case apierrors.IsUnauthorized(err):
		return FailureUnauthenticated
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		if IsAdmissionDenial(err) {
			return FailureAdmission
		}
		if apierrors.IsForbidden(err) {
			return FailureRBAC
		}
		return FailureInvalid
	}
	if isNetwork(err) {
		return FailureUnreachable
	}
	return FailureOther
}

// IsNotFound reports a missing object.
func IsNotFound(err error) bool { return Classify(err) == FailureNotFound }

// IsConflict reports a resourceVersion precondition that failed.
func IsConflict(err error) bool { return Classify(err) == FailureConflict }

// IsForbidden reports an authorization refusal (Kubernetes RBAC or Argo CD's RBAC), not an
// admission denial.
func IsForbidden(err error) bool {
	f := Classify(err)
	return f == FailureRBAC || f == FailureArgoCDDenied
}

// IsAdmissionDenial reports a refusal by an admission policy or webhook. The API server answers
// both RBAC and admission refusals with 403 (or 422 for a policy without reason Forbidden), so the
// message tells them apart: RBAC says `User "x" cannot <verb> resource`, admission names the policy
// or webhook that denied the request.
func IsAdmissionDenial(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	msg := status.Status().Message
	switch {
	case strings.Contains(msg, "ValidatingAdmissionPolicy"), strings.Contains(msg, "admission webhook"),
		strings.Contains(msg, "denied request"), strings.Contains(msg, "denied the request"):
		return true
	}
	return false
}

func isNetwork(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var urlErr *url.Error
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &opErr) || errors.As(err, &netErr) || errors.As(err, &unknownAuthority) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) || (errors.As(err, &urlErr) && !apierrorsIn(err))
}

func apierrorsIn(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// Explain rewrites a failure to talk to a cluster into a message that says what to do. what is
// the action, e.g. "list Applications in namespace argocd"; where names the cluster.
func Explain(err error, what string, where Info) error {
	if err == nil {
		return nil
	}
	server := where.URL
	if server == "" {
		server = where.Server
	}
	switch Classify(err) {
	case FailureCanceled:
		return fmt.Errorf("%s: interrupted: %w", what, err)
	case FailureTimeout:
		return fmt.Errorf("%s: %s did not answer in time (raise %v, or check the cluster): %w", what, orCluster(server), option.RequestTimeout, err)
	case FailureUnreachable:
		return fmt.Errorf("%s: cannot reach %s: %s (check %v/%v, the network or VPN)", what, orCluster(server), rootCause(err), option.Context, option.Kubeconfig)
	case FailureUnauthenticated:
		return fmt.Errorf("%s: %s does not accept your credentials (log in again, or check %v): %w", what, orCluster(server), option.Context, err)
	case FailureRBAC:
		return fmt.Errorf("%s: forbidden in cluster %s: your user lacks the RBAC permission (check with `kubectl auth can-i`): %w", what, where.Name+orEmpty(where.Server), err)
	case FailureNotFound:
		return fmt.Errorf("%s: not found: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func orCluster(server string) string {
	if server == "" {
		return "the API server"
	}
	return server
}

func orEmpty(server string) string {
	if server == "" {
		return ""
	}
	return " (" + server + ")"
}

// rootCause is the innermost message of a chain of wrapped network errors: "connection refused"
// rather than three layers of Get "…": dial tcp ….
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		var opErr *net.OpError
		if errors.As(err, &opErr) && opErr.Err != nil {
			return opErr.Op + " " + addr(opErr) + ": " + opErr.Err.Error()
		}
		err = next
	}
}

func addr(op *net.OpError) string {
	if op.Addr != nil {
		return op.Addr.String()
	}
	return ""
}
