package budget

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/option"
)

// The ApplicationSet controller deletes the Applications its generators no longer produce, each with
// its own DELETE and all of one reconcile concurrently (applicationset/controllers/
// applicationset_controller.go deleteInCluster: an errgroup over the owned apps not generated, a
// refused DELETE recorded and the others still sent). Nothing lists a reconcile's deletions before
// they are sent: the set's status.resources is written after them (updateResourcesStatus). So the
// budget counts what the controller itself asks: the first DELETE of an Application is refused and
// recorded on the ApplicationSet (AnnotationAsked), which both replicas of the webhook read, and the
// controller's next attempt is judged on the whole record. Writing the record is itself what brings
// the next attempt: the controller reconciles a set whose annotations changed
// (shouldRequeueForApplicationSet in v3; every update before), and retries a reconcile that failed.

// AnnotationAsked on an ApplicationSet records the Applications its controller asked to delete
// within AppSetWindow, as JSON: name, uid, when it last asked, and whether the ask is counted.
const AnnotationAsked = "unprune.dev/asked-deletions"

// AppSetSettle is how long a new ask stays refused before it is judged, unless Settled counted it
// sooner. The API server may ask the webhook twice about one DELETE: when the object changed
// between its read and its update (an Application's status being written, as Argo CD's controller
// does all the time), GuaranteedUpdate runs the deletion's validation again on the live object
// (k8s.io/apiserver/pkg/storage/etcd3/store.go; registry/generic/registry/store.go
// updateForGracefulDeletionAndFinalizers). The second answer must be the first's: the ask the first
// call recorded is not yet a judged one. The webhook counts the asks with Settled after this long,
// and that write brings the controller's next attempt.
const AppSetSettle = time.Second

// AppSetWindow is how long an ask counts: an ApplicationSet's controller deletes at most its budget
// of Applications within it without approval, whether it asks them in one reconcile or in several.
// It is longer than the controller's longest retry interval by default (--wq-maxdelay, 1,000 s:
// cmd/argocd-applicationset-controller/commands/applicationset_controller.go), so that a set held
// back keeps its count between two attempts. With a longer one set, an ask older than the window is
// counted again from the start: refused once more, and the record's write brings the next attempt
// at once (an annotation change is an event, not a rate-limited retry), so nothing passes uncounted.
const AppSetWindow = 20 * time.Minute

// AppSetWindowText is AppSetWindow as messages say it.
var AppSetWindowText = fmt.Sprintf("%d minutes", int(AppSetWindow.Minutes()))

// ReasonCounting refuses the first DELETE of an Application: it is recorded, and the next attempt
// is judged on every deletion the set asked.
const ReasonCounting Reason = "counting"

// Asked is one Application an ApplicationSet's controller asked to delete.
type Asked struct {
	Name string    `json:"name"`
	UID  string    `json:"uid"`
	At   time.Time `json:"at"`
	// Counted: the ask is judged on the set's whole record (Settled, or AppSetSettle passed).
	Counted bool `json:"counted,omitempty"`
}

func (a Asked) counted(now time.Time) bool { return a.Counted || now.Sub(a.At) >= AppSetSettle }

// Settled is the record with every ask at least AppSetSettle old counted, or nil when that changes
// nothing: the webhook writes it after AppSetSettle, so that the set's controller, which reconciles
// a set whose annotations changed, comes back for its deletions (Argo CD v2.14 does not retry a
// reconcile whose deletions were refused).
func Settled(annotations map[string]string, now time.Time) *string {
	asked := Fresh(ParseAsked(annotations), now)
	changed := false
	for i := range asked {
		if !asked[i].Counted && now.Sub(asked[i].At) >= AppSetSettle {
			asked[i].Counted, changed = true, true
		}
	}
	if !changed {
		return nil
	}
	return ptr(FormatAsked(asked))
}

// ParseAsked reads AnnotationAsked; an unreadable record reads as empty, so every DELETE is counted
// again from the start (refused first).
func ParseAsked(annotations map[string]string) []Asked {
	var out []Asked
	if v := annotations[AnnotationAsked]; v != "" {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil
		}
	}
	return out
}

// FormatAsked is AnnotationAsked's value, sorted by name.
func FormatAsked(asked []Asked) string {
	s := slices.Clone(asked)
	slices.SortFunc(s, func(a, b Asked) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(s)
	return string(b)
}

// Fresh are the asks within AppSetWindow of now.
func Fresh(asked []Asked, now time.Time) []Asked {
	var out []Asked
	for _, a := range asked {
		if now.Sub(a.At) < AppSetWindow {
			out = append(out, a)
		}
	}
	return out
}

// AppSetRequest is one DELETE of an Application by the ApplicationSet controller.
type AppSetRequest struct {
	// Set is the ApplicationSet (namespace/name) that owns the Application; Annotations its own, as
	// read when the DELETE arrived.
	Set         string
	Annotations map[string]string
	// App and UID name the Application being deleted.
	App, UID string
	Default  int
	Now      time.Time
}

// AppSetDecision is the answer, and the record to write on the ApplicationSet when Record is set.
type AppSetDecision struct {
	Decision
	Record *string
}

// DecideAppSet answers one DELETE of an Application by its ApplicationSet's controller.
func DecideAppSet(r AppSetRequest) AppSetDecision {
	d := AppSetDecision{Decision: Decision{Allowed: true}}
	if r.UID != "" && Approved(r.Annotations)[r.UID] {
		d.Approved = true
		d.Message = fmt.Sprintf("Application %s: approved on ApplicationSet %s", r.App, r.Set)
		return d
	}
	asked := Fresh(ParseAsked(r.Annotations), r.Now)
	i := slices.IndexFunc(asked, func(a Asked) bool { return a.UID == r.UID })
	switch {
	case i < 0:
		asked = append(asked, Asked{Name: r.App, UID: r.UID, At: r.Now})
		d.Record = ptr(FormatAsked(asked))
	case !asked[i].counted(r.Now):
		// Recorded a moment ago: the API server asking again about the same DELETE, or the
		// controller's next attempt before the record settled. Refused alike, nothing written.
		d.Allowed, d.Reason = false, ReasonCounting
		d.Message = fmt.Sprintf("unprune deletion budget: ApplicationSet %s's deletion of Application %s is being counted (recorded in %s); "+
			"the controller's attempt after %s is judged", r.Set, r.App, AnnotationAsked, AppSetSettle)
		return d
	case r.Now.Sub(asked[i].At) >= AppSetWindow/2:
		// Still asked: keep it counted for another window (written at most twice a window).
		asked[i].At, asked[i].Counted = r.Now, true
		d.Record = ptr(FormatAsked(asked))
	}
	approved := Approved(r.Annotations)
	for _, a := range asked {
		if !approved[a.UID] {
			d.Deletes++
		}
	}
	limit, err := parseLimit(r.Annotations, "the ApplicationSet's "+AnnotationBudget)
	if limit == nil {
		limit = &Limit{Max: r.Default, Source: "the installation's default"}
	}
	approve := AppSetApproveCommand(r.Set)
	switch {
	case i < 0:
		d.Allowed, d.Reason = false, ReasonCounting
		d.Message = fmt.Sprintf("unprune deletion budget: ApplicationSet %s asks to delete Application %s; the deletion is recorded in %s "+
			"and judged on the controller's next attempt, with every deletion the set asked within %s (%d so far, budget %d)",
			r.Set, r.App, AnnotationAsked, AppSetWindowText, d.Deletes, limit.Max)
	case d.Deletes > limit.Max:
		d.Allowed, d.Reason = false, ReasonOverBudget
		d.Message = fmt.Sprintf("unprune deletion budget: ApplicationSet %s asked to delete %d Applications within %s, more than its budget of %d (%s); "+
			"none is deleted until someone approves these deletions: %s", r.Set, d.Deletes, AppSetWindowText, limit.Max, limit.Source, approve)
	default:
		d.Message = fmt.Sprintf("ApplicationSet %s asked to delete %d Applications within %s, within its budget of %d", r.Set, d.Deletes, AppSetWindowText, limit.Max)
	}
	if err != nil {
		d.Message += " (" + err.Error() + ")"
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// AppSetApproveCommand is the command that approves the deletions an ApplicationSet asked.
func AppSetApproveCommand(set string) string {
	namespace, name, _ := strings.Cut(set, "/")
	return fmt.Sprintf("unprune guard approve %s %v %s %s %v", name, option.ApplicationSet, option.Namespace.Short(), namespace, option.Yes)
}
