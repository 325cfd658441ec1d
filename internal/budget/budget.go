// Package budget is the deletion budget's verdict on one DELETE that Argo CD's application
// controller sends. It is refused when the operation it belongs to deletes more objects than the
// app's budget, or when the object is high-risk; an approval of the object, by UID, lets it through
// either way.
//
// The operation's deletions are what Argo CD's own comparison says it deletes: for a sync, the
// app's status.resources requiring pruning (hooks left out, as gitops-engine's sync leaves them:
// pkg/sync/sync_context.go getSyncTasks prunes only resources without a target that are not hooks);
// for the cascade of an app being deleted, every resource it tracks
// (controller/appcontroller.go finalizeApplicationDeletion). Each is judged with deletion.Judge, the
// verdict audit and check give, so that a row a hard guard keeps is not counted (a soft one, the
// app's own Prune= option, is: a sync request with its own options replaces it). Every DELETE of one
// operation sees the same count, so an operation over its budget deletes nothing, not its first N
// objects. Decide is pure: the admission server reads the app and its objects and passes them;
// Pending, for the approval, reads them itself.
package budget

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/risk"
)

// Annotations the budget reads.
const (
	// AnnotationBudget on an Application, or on its AppProject for every app of the project, is the
	// most objects one operation of the app may delete without approval: a whole number, 0 meaning
	// that every deletion waits for approval.
	AnnotationBudget = "unprune.dev/deletion-budget"
	// AnnotationApproved on an Application lists, comma-separated, the UIDs of objects whose deletion
	// someone approved (`unprune guard approve`). A UID names one object once: an approval is spent
	// when the object is deleted, and never covers its re-creation.
	AnnotationApproved = "unprune.dev/approved-deletions"
)

// Reason is why a deletion was refused, as the metric's reason label says it.
type Reason string

const (
	ReasonOverBudget Reason = "over_budget"
	ReasonHighRisk   Reason = "high_risk"
)

// Limit is an app's budget and where it comes from.
type Limit struct {
	Max int
	// Source names where Max was read, for messages: the app's annotation, its project's, or the
	// installation's default.
	Source string
}

// LimitOf resolves an app's budget: its own annotation, else its project's, else def. A value
// that is not a whole number is an error, which callers answer with the strictest budget.
func LimitOf(appAnnotations, projectAnnotations map[string]string, project string, def int) (Limit, error) {
	if l, err := parseLimit(appAnnotations, "the app's "+AnnotationBudget); l != nil {
		return *l, err
	}
	if l, err := parseLimit(projectAnnotations, "the "+AnnotationBudget+" of project "+project); l != nil {
		return *l, err
	}
	return Limit{Max: def, Source: "the installation's default"}, nil
}

// parseLimit reads AnnotationBudget from annotations (nil when absent); source names them.
func parseLimit(annotations map[string]string, source string) (*Limit, error) {
	v, ok := annotations[AnnotationBudget]
	if !ok {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return &Limit{Max: 0, Source: source}, fmt.Errorf("%s is %q, not a whole number: read as 0, every deletion waits for approval", source, v)
	}
	return &Limit{Max: n, Source: source}, nil
}

// Approved parses AnnotationApproved.
func Approved(annotations map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, uid := range strings.Split(annotations[AnnotationApproved], ",") {
		if uid = strings.TrimSpace(uid); uid != "" {
			out[uid] = true
		}
	}
	return out
}

// FormatApproved is AnnotationApproved's value for the UIDs.
func FormatApproved(uids []string) string { return strings.Join(uids, ",") }

// Request is one DELETE and what Argo CD's comparison says of its operation.
type Request struct {
	// Object is the object the DELETE names, as the API server sent it (read); UID its uid.
	Object deletion.Object
	UID    string
	// App is the app the object's tracking names, read after the request arrived.
	App argocd.Application
	// Rows are the operation's deletions as the app's status lists them, read live where they could
	// be (an unread row counts unless its row alone shows a guard).
	Rows  []deletion.Object
	Limit Limit
	// Approved are the UIDs approved on the app.
	Approved map[string]bool
	Version  *argocd.Version
	// ArgoCDNamespace marks Argo CD's own objects as high-risk (risk.Classify).
	ArgoCDNamespace string
	// Approve is the command that approves the operation's deletions, for the message.
	Approve string
}

// Decision is the answer.
type Decision struct {
	Allowed bool
	// Reason is empty when allowed.
	Reason Reason
	Event  deletion.Event
	// Deletes is how many objects the operation deletes, the object of the request included.
	Deletes int
	// Approved: the object's deletion was approved (whatever the budget says).
	Approved bool
	Message  string
}

// Decide answers one DELETE.
func Decide(r Request) Decision {
	d := Decision{Event: deletion.Prune, Allowed: true}
	if r.App.Deleting {
		d.Event = deletion.Cascade
	}
	d.Deletes = count(r, d.Event)
	if r.UID != "" && r.Approved[r.UID] {
		d.Approved = true
		d.Message = fmt.Sprintf("%s: approved on app %s", r.Object.Resource(), r.App.Ref())
		return d
	}
	what := "sync"
	if d.Event == deletion.Cascade {
		what = "deletion"
	}
	switch class, why := risk.Classify(risk.Object{Group: r.Object.Group, Kind: r.Object.Kind, Namespace: r.Object.Namespace, Name: r.Object.Name,
		Labels: r.Object.Labels, Annotations: r.Object.Annotations}, r.ArgoCDNamespace); {
	case d.Deletes > r.Limit.Max:
		d.Allowed, d.Reason = false, ReasonOverBudget
		d.Message = fmt.Sprintf("unprune deletion budget: this %s of app %s deletes %d objects, more than its budget of %d (%s); "+
			"nothing is deleted until someone approves these deletions: %s", what, r.App.Ref(), d.Deletes, r.Limit.Max, r.Limit.Source, r.Approve)
	case class == risk.High:
		d.Allowed, d.Reason = false, ReasonHighRisk
		d.Message = fmt.Sprintf("unprune deletion budget: %s is high-risk (%s) and is deleted only once approved: %s",
			r.Object.Resource(), why, r.Approve)
	default:
		d.Message = fmt.Sprintf("this %s of app %s deletes %d objects, within its budget of %d", what, r.App.Ref(), d.Deletes, r.Limit.Max)
	}
	return d
}

// count is how many objects the operation deletes: each row whose verdict deletes it (or waits for
// Argo CD's own approval, then deletes it), and the object of the request, which Argo CD is
// deleting whatever its row says.
func count(r Request, e deletion.Event) int {
	c := deletion.Context{Version: r.Version, AppSyncOptions: r.App.SyncOptions}
	n, self := 0, false
	for _, o := range r.Rows {
		if sameObject(o, r.Object) {
			self = true
			n++
			continue
		}
		switch deletion.Judge(o, e, c).Outcome {
		case deletion.Deleted, deletion.Waits:
			n++
		}
	}
	if !self {
		n++
	}
	return n
}

func sameObject(a, b deletion.Object) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// ApproveCommand is the command that approves an app's pending deletions.
func ApproveCommand(app argocd.Application) string {
	return fmt.Sprintf("unprune guard approve %s %s %s %v", app.Name, option.Namespace.Short(), app.Namespace, option.Yes)
}
