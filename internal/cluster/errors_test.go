package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClassify(t *testing.T) {
	ns := schema.GroupResource{Resource: "namespaces"}
	rbac := apierrors.NewForbidden(ns, "x", errors.New(`User "viewer" cannot delete resource "namespaces" in API group "" at the cluster scope`))
	policy := apierrors.NewForbidden(ns, "x", errors.New(`ValidatingAdmissionPolicy 'unprune-protect-deletion' with binding 'unprune-protect-deletion' denied request: protected`))
	webhook := apierrors.NewBadRequest(`admission webhook "deny.example.com" denied the request: no`)
	tests := map[string]struct {
		err  error
		want Failure
	}{
		"nil":           {nil, FailureNone},
		"rbac":          {rbac, FailureRBAC},
		"wrapped rbac":  {fmt.Errorf("patch: %w", rbac), FailureRBAC},
		"policy":        {policy, FailureAdmission},
		"webhook":       {webhook, FailureAdmission},
		"not found":     {apierrors.NewNotFound(ns, "x"), FailureNotFound},
		"conflict":      {apierrors.NewConflict(ns, "x", errors.New("modified")), FailureConflict},
		"canceled":      {fmt.Errorf("list: %w", context.Canceled), FailureCanceled},
		"deadline":      {context.DeadlineExceeded, FailureTimeout},
		"refused":       {&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, FailureUnreachable},
		"argocd denied": {&ArgoCDDeniedError{Msg: "permission denied"}, FailureArgoCDDenied},
		"other":         {errors.New("boom"), FailureOther},
	}
	for name, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("%s: Classify = %s, want %s", name, got, tt.want)
		}
	}
	if !IsForbidden(rbac) || IsForbidden(policy) || !IsAdmissionDenial(policy) {
		t.Error("RBAC and admission must be told apart")
	}
}
