package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
)

// probeDelete asks the API server whether it would delete the object, deleting nothing. It probes
// as Argo CD's controller when it can, since only a denial that also stops the controller guards
// anything; as the prober only when there is no controller to act as, or the API server refuses to
// let the prober act as it. The second DELETE is sent only when the first leaves the question open.
func probeDelete(ctx context.Context, p cluster.Prober, ref cluster.Ref, controllerAs string) *Probe {
	var asController, asSelf error
	if controllerAs != "" {
		asController = p.ProbeDelete(ctx, ref, controllerAs)
	}
	if controllerAs == "" || impersonationDenied(asController) {
		asSelf = p.ProbeDelete(ctx, ref, "")
	}
	return decideProbe(controllerAs, asController, asSelf)
}

// decideProbe turns the API server's answers into the probe's result. as is the user Argo CD's
// controller acts as ("" when unknown), asController the answer to the DELETE sent as it, asSelf the
// answer to the DELETE sent as the prober (only read when the first does not decide).
func decideProbe(as string, asController, asSelf error) *Probe {
	if as == "" {
		return judgeAsSelf(asSelf)
	}
	if !impersonationDenied(asController) {
		return judgeAsController(as, asController)
	}
	// The prober may not act as the controller: its own answer stands in, and says why.
	p := judgeAsSelf(asSelf)
	why := fmt.Sprintf("probed as you, who may not act as Argo CD's controller %s (%s)", as, message(asController))
	if p.Result == ProbeInconclusive && cluster.Classify(asSelf) == cluster.FailureRBAC {
		p.Message = "you may neither delete it nor act as Argo CD's controller " + as + ", so the probe cannot judge " +
			"(get RBAC verb impersonate on that service account or user, or probe as a user who may delete it)"
		return p
	}
	p.Message += "; " + why
	return p
}

// judgeAsController reads the answer to the DELETE sent as Argo CD's controller: what the API
// server does to the controller is what guards the object.
func judgeAsController(as string, err error) *Probe {
	switch f := cluster.Classify(err); {
	case err == nil:
		return &Probe{Result: ProbeAllowed, As: as, Message: "the API server would delete it for Argo CD's controller"}
	case f == cluster.FailureAdmission || isImmortal(err):
		return &Probe{Result: ProbeDenied, As: as, Message: message(err)}
	case f == cluster.FailureNotFound:
		return &Probe{Result: ProbeGone, As: as, Message: "the object no longer exists"}
	case f == cluster.FailureRBAC:
		return &Probe{Result: ProbeControllerForbidden, As: as, Message: message(err)}
	}
	return &Probe{Result: ProbeInconclusive, As: as, Message: "the probe as Argo CD's controller failed, so nothing was judged (run it again): " + err.Error()}
}

// judgeAsSelf reads the answer to the DELETE sent as the prober. An RBAC refusal of the prober
// says nothing about the controller.
func judgeAsSelf(err error) *Probe {
	switch f := cluster.Classify(err); {
	case err == nil:
		return &Probe{Result: ProbeAllowed, Message: "the API server would delete it"}
	case f == cluster.FailureAdmission || isImmortal(err):
		return &Probe{Result: ProbeDenied, Message: message(err)}
	case f == cluster.FailureNotFound:
		return &Probe{Result: ProbeGone, Message: "the object no longer exists"}
	case f == cluster.FailureRBAC:
		return &Probe{Result: ProbeInconclusive, Message: "your user may not delete it, so the API server's answer says nothing about Argo CD's controller " +
			"(probe as a user who may delete it, or let unprune probe as the controller: " + option.ControllerAs.String() + ")"}
	}
	return &Probe{Result: ProbeInconclusive, Message: "the probe failed: " + err.Error()}
}

func isImmortal(err error) bool {
	// The API server's own refusal to delete default, kube-system and kube-public.
	return err != nil && strings.Contains(err.Error(), "this namespace may not be deleted")
}

// impersonationResources are what the API server authorizes the verb impersonate on
// (k8s.io/apiserver pkg/endpoints/filters/impersonation: impersonation.go, and mode.go's
// authorizeUsername for service accounts).
var impersonationResources = map[string]bool{"users": true, "serviceaccounts": true, "groups": true, "userextras": true, "uids": true}

// deniedVerbRE reads the verb out of an RBAC refusal, whose message k8s.io/apiserver builds as
// `User "<name>" cannot <verb> resource "<resource>" …` (responsewriters.forbiddenMessage).
var deniedVerbRE = regexp.MustCompile(`User "(?:[^"\\]|\\.)*" cannot (\S+) (?:resource|path) `)

// impersonationDenied tells the API server refusing to let the prober act as another user from the
// impersonated user being refused the request itself. The impersonation filter answers 403
// Forbidden naming, in the status details, the impersonated user or service account as the object
// (kind users or serviceaccounts), and the verb impersonate in the message, about the prober. The
// constrained impersonation of Kubernetes 1.35 (alpha) asks for impersonate:<mode> and
// impersonate-on:<mode>:<verb> instead. A refusal of the impersonated user carries the request's
// own verb (delete). ChainedImpersonationError is the client declining to try: the prober itself
// acts as someone else (--as), and impersonation does not chain.
func impersonationDenied(err error) bool {
	if err == nil {
		return false
	}
	var chained *cluster.ChainedImpersonationError
	if errors.As(err, &chained) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Code != http.StatusForbidden || s.Reason != metav1.StatusReasonForbidden {
		return false
	}
	m := deniedVerbRE.FindStringSubmatch(s.Message)
	if m == nil {
		return false
	}
	switch verb := m[1]; {
	case verb == "impersonate":
		return s.Details != nil && impersonationResources[s.Details.Kind]
	case strings.HasPrefix(verb, "impersonate:"), strings.HasPrefix(verb, "impersonate-on:"):
		return true
	}
	return false
}

// message is the API server's own words, without the client's wrapping.
func message(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
