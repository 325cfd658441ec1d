package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/cluster"
)

const controller = "system:serviceaccount:argocd:argocd-application-controller"

// The API server's answers, built as k8s.io/apiserver builds them (responsewriters.ForbiddenStatusError,
// the namespace lifecycle admission plugin, the validating admission policy plugin).
var (
	namespaces = schema.GroupResource{Resource: "namespaces"}

	// Impersonation refused: the object is the impersonated service account or user, the verb
	// impersonate, the user the prober.
	impersonateSADenied = apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "argocd-application-controller",
		errors.New(`User "viewer" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "argocd"`))
	impersonateUserDenied = apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, "deployer",
		errors.New(`User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope`))
	constrainedDenied = apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "argocd-application-controller",
		errors.New(`User "viewer" cannot impersonate:serviceaccount resource "serviceaccounts" in API group "" in the namespace "argocd"`))
	chained = &cluster.ChainedImpersonationError{ActingAs: "viewer", As: controller}

	// The impersonated controller refused the delete by RBAC, once for a ServiceAccount object whose
	// details look like an impersonation refusal's: only the verb tells them apart.
	controllerRBAC = apierrors.NewForbidden(namespaces, "team-a",
		fmt.Errorf(`User %q cannot delete resource "namespaces" in API group "" in the namespace "team-a"`, controller))
	controllerRBACOnSA = apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "argocd-application-controller",
		fmt.Errorf(`User %q cannot delete resource "serviceaccounts" in API group "" in the namespace "argocd"`, controller))
	selfRBAC = apierrors.NewForbidden(namespaces, "team-a",
		errors.New(`User "viewer" cannot delete resource "namespaces" in API group "" in the namespace "team-a"`))

	admission = apierrors.NewForbidden(namespaces, "team-a",
		errors.New(`ValidatingAdmissionPolicy 'unprune-protect-deletion' with binding 'unprune-protect-deletion' denied request: protected from deletion`))
	immortal = apierrors.NewForbidden(namespaces, "kube-system", errors.New("this namespace may not be deleted"))
	notFound = apierrors.NewNotFound(namespaces, "team-a")
	timeout  = apierrors.NewServerTimeout(namespaces, "delete", 1)
	network  = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
)

func TestImpersonationDenied(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"service account impersonation refused", impersonateSADenied, true},
		{"user impersonation refused", impersonateUserDenied, true},
		{"constrained impersonation refused", constrainedDenied, true},
		{"client does not chain impersonation", fmt.Errorf("probe: %w", chained), true},
		{"controller may not delete", controllerRBAC, false},
		{"controller may not delete its own service account", controllerRBACOnSA, false},
		{"impersonate verb on another resource", apierrors.NewForbidden(namespaces, "x",
			errors.New(`User "viewer" cannot impersonate resource "namespaces" in API group "" at the cluster scope`)), false},
		{"admission policy", admission, false},
		{"admission quoting an impersonation refusal", apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "x",
			errors.New(`admission webhook "x" denied the request: cannot impersonate`)), false},
		{"immortal namespace", immortal, false},
		{"not found", notFound, false},
		{"plain error with the words", errors.New(`User "viewer" cannot impersonate resource "serviceaccounts"`), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := impersonationDenied(tt.err); got != tt.want {
				t.Errorf("impersonationDenied(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestDecideProbe covers every branch of the probe's decision. asSelf is set, in the rows where the
// controller's answer decides, to an answer that would decide otherwise: a decision read from the
// wrong answer fails.
func TestDecideProbe(t *testing.T) {
	tests := []struct {
		name                 string
		as                   string
		asController, asSelf error
		want                 ProbeResult
		wantAs               string
		wantMessage          string // a part of the message
	}{
		// As the controller: its answer decides.
		{name: "controller allowed", as: controller, asSelf: admission, want: ProbeAllowed, wantAs: controller},
		{name: "controller denied by admission", as: controller, asController: admission, asSelf: nil, want: ProbeDenied, wantAs: controller, wantMessage: "ValidatingAdmissionPolicy"},
		{name: "controller denied: immortal namespace", as: controller, asController: immortal, asSelf: nil, want: ProbeDenied, wantAs: controller, wantMessage: "may not be deleted"},
		{name: "controller forbidden by RBAC", as: controller, asController: controllerRBAC, asSelf: nil, want: ProbeControllerForbidden, wantAs: controller},
		{name: "controller forbidden on a ServiceAccount object", as: controller, asController: controllerRBACOnSA, asSelf: nil, want: ProbeControllerForbidden, wantAs: controller},
		{name: "controller: not found", as: controller, asController: notFound, asSelf: nil, want: ProbeGone, wantAs: controller},
		{name: "controller: server timeout", as: controller, asController: timeout, asSelf: nil, want: ProbeInconclusive, wantAs: controller, wantMessage: "failed"},
		{name: "controller: network error", as: controller, asController: network, asSelf: nil, want: ProbeInconclusive, wantAs: controller, wantMessage: "connection refused"},

		// Impersonation refused: the prober's own answer, which says it probed as the prober.
		{name: "impersonation refused, self allowed", as: controller, asController: impersonateSADenied, asSelf: nil, want: ProbeAllowed, wantMessage: "probed as you"},
		{name: "impersonation refused, self denied by admission", as: controller, asController: impersonateSADenied, asSelf: admission, want: ProbeDenied, wantMessage: "probed as you"},
		{name: "impersonation refused, self: immortal", as: controller, asController: impersonateUserDenied, asSelf: immortal, want: ProbeDenied},
		{name: "impersonation refused, self forbidden", as: controller, asController: impersonateSADenied, asSelf: selfRBAC, want: ProbeInconclusive, wantMessage: "neither delete it nor act as"},
		{name: "impersonation refused, self: not found", as: controller, asController: impersonateSADenied, asSelf: notFound, want: ProbeGone},
		{name: "impersonation refused, self: other error", as: controller, asController: impersonateSADenied, asSelf: network, want: ProbeInconclusive, wantMessage: "the probe failed"},
		{name: "constrained impersonation refused, self allowed", as: controller, asController: constrainedDenied, asSelf: nil, want: ProbeAllowed},
		{name: "chained impersonation, self forbidden", as: controller, asController: chained, asSelf: selfRBAC, want: ProbeInconclusive},

		// No controller to act as: the prober's answer, where RBAC says nothing about the controller.
		{name: "self allowed", asController: admission, want: ProbeAllowed},
		{name: "self denied by admission", asSelf: admission, want: ProbeDenied},
		{name: "self: immortal namespace", asSelf: immortal, want: ProbeDenied},
		{name: "self forbidden by RBAC", asSelf: selfRBAC, want: ProbeInconclusive, wantMessage: "your user may not delete it"},
		{name: "self: not found", asSelf: notFound, want: ProbeGone},
		{name: "self: other error", asSelf: timeout, want: ProbeInconclusive, wantMessage: "the probe failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideProbe(tt.as, tt.asController, tt.asSelf)
			if got.Result != tt.want || got.As != tt.wantAs || !strings.Contains(got.Message, tt.wantMessage) {
				t.Errorf("decideProbe(%q, %v, %v) = %+v; want result %s as %q, message containing %q",
					tt.as, tt.asController, tt.asSelf, got, tt.want, tt.wantAs, tt.wantMessage)
			}
		})
	}
}

// recordingProber answers each DELETE from a table and records who asked.
type recordingProber struct {
	answers map[string]error // by as
	asked   []string
}

func (p *recordingProber) ProbeDelete(_ context.Context, _ cluster.Ref, as string) error {
	p.asked = append(p.asked, as)
	return p.answers[as]
}

func (p *recordingProber) CanI(context.Context, string, cluster.Ref, string) (bool, string, error) {
	return false, "", errors.New("not used")
}

// TestProbeDeleteSendsTheSecondDeleteOnlyWhenNeeded: the DELETE as the prober is sent when there is
// no controller to act as or the API server refuses the impersonation, and only then.
func TestProbeDeleteSendsTheSecondDeleteOnlyWhenNeeded(t *testing.T) {
	tests := []struct {
		name      string
		as        string
		answers   map[string]error
		wantAsked []string
		want      ProbeResult
	}{
		{"controller decides", controller, map[string]error{controller: admission}, []string{controller}, ProbeDenied},
		{"controller forbidden decides", controller, map[string]error{controller: controllerRBAC}, []string{controller}, ProbeControllerForbidden},
		{"impersonation refused", controller, map[string]error{controller: impersonateSADenied, "": selfRBAC}, []string{controller, ""}, ProbeInconclusive},
		{"no controller", "", map[string]error{"": nil}, []string{""}, ProbeAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &recordingProber{answers: tt.answers}
			got := probeDelete(context.Background(), p, cluster.Ref{Version: "v1", Kind: "Namespace", Name: "team-a"}, tt.as)
			if got.Result != tt.want || fmt.Sprint(p.asked) != fmt.Sprint(tt.wantAsked) {
				t.Errorf("probeDelete as %q = %s after asking as %q; want %s after asking as %q", tt.as, got.Result, p.asked, tt.want, tt.wantAsked)
			}
		})
	}
}
