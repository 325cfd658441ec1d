package extension

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/printer"
)

// homeObjects are the objects of the cluster Argo CD runs in, where the app and its project live.
func homeObjects(r *request) (cluster.Objects, error) {
	return r.argo.Destination(r.Context(), argocd.Application{Namespace: r.app.Namespace, Destination: argocd.Destination{Server: argocd.InClusterServer}})
}

// budgetOf is the deletion budget's view of the app: its budget where the app or its project sets
// one (budget.LimitOf's order), and what its next operation deletes (budget.Pending), each object
// approved or not.
func (s *server) budgetOf(r *request) printer.UIBudget {
	b := printer.UIBudget{Pending: []printer.UIPendingDeletion{}, Source: fmt.Sprintf("the installation's default (unprune watch %v)", option.DeletionBudget)}
	var project map[string]string
	if p, err := r.argo.Project(r.Context(), r.app.Project); err == nil {
		project = p.Annotations
	}
	// The default is the webhook's, unknown here: -1 marks it.
	if l, err := budget.LimitOf(r.app.Annotations, project, r.app.Project, -1); l.Max >= 0 {
		n := l.Max
		b.Limit, b.Source = &n, l.Source
		if err != nil {
			b.Source += " (" + err.Error() + ")"
		}
	}
	what, ds, err := budget.Pending(r.Context(), r.argo, r.app)
	b.Operation = what
	if err != nil {
		b.Unknown = err.Error()
		return b
	}
	approved := budget.Approved(r.app.Annotations)
	for _, d := range ds {
		if !d.Gone {
			b.Pending = append(b.Pending, printer.UIPendingDeletion{Resource: printer.NewResourceRef(d.Row), UID: d.UID, Approved: approved[d.UID]})
		}
	}
	return b
}

// beginApprove is POST /approvals: the approval `unprune guard approve` makes — the UIDs of what the
// app's next operation deletes, in budget.AnnotationApproved on the Application — planned by the
// engine, journaled, and returned as the patch of the Application for the browser to send through
// argocd-server (applications, update). It approves only what the view showed: when Argo CD's
// comparison shows other deletions now, nothing is approved.
func (s *server) beginApprove(r *request) reply {
	var req printer.UIApproveRequest
	if err := decodeBody(r, &req); err != nil {
		return fail(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	_, ds, err := budget.Pending(r.Context(), r.argo, r.app)
	if err != nil {
		return fail(http.StatusBadGateway, "PendingUnreadable", "read what the next operation of %s deletes: %v", r.app.Ref(), err)
	}
	uids := budget.UIDs(ds)
	switch {
	case len(uids) == 0:
		return fail(http.StatusConflict, "NothingToApprove", "Argo CD's comparison shows no deletion for Application %s now: nothing to approve", r.app.Ref())
	case !sameSet(uids, req.UIDs):
		return fail(http.StatusConflict, "ChangedSincePreview", "Argo CD's comparison of %s shows other deletions than the ones you saw (%d now, %d seen): review them again before approving", r.app.Ref(), len(uids), len(req.UIDs))
	}
	objects, err := homeObjects(r)
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	e := &engine.Engine{ArgoCD: r.argo, Settings: r.settings.Settings, ToolVersion: s.cfg.ToolVersion, Now: s.cfg.Now}
	arg := engine.ResourceArg{Group: "argoproj.io", Kind: "Application", Namespace: r.app.Namespace, Name: r.app.Name, Raw: "applications.argoproj.io/" + r.app.Namespace + "/" + r.app.Name}
	p, err := e.PlanObjects(r.Context(), objects, engine.ObjectsRequest{Command: guard.Command, Strategy: "approve", Resources: []engine.ResourceArg{arg},
		Build: guard.AnnotationPlan(budget.AnnotationApproved, budget.FormatApproved(uids))})
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	if len(p.Items) != 1 {
		return fail(http.StatusBadGateway, "PlanFailed", "the engine planned nothing for Application %s", r.app.Ref())
	}
	it := p.Items[0]
	it.App = &engine.AppRun{App: r.app, Instance: r.app.Instance(r.argo.Namespace())}
	if it.Outcome != engine.OutcomePlanned {
		return reply{http.StatusConflict, printer.UIError{APIVersion: printer.APIVersion, Kind: "Error", Reason: string(it.Outcome),
			Message: "nothing to change: " + orDefault(planOf(it).Message, "these deletions are approved already")}}
	}
	return s.journalAndPatch(r, it, guard.Command, "approve", req.ArgoCDServer, planOf(it))
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// patchFor is the argocd-server request that applies patch to ref as the clicker: a resource of
// the app through the app's resource API, or the Application itself through the app's own
// (PATCH /api/v1/applications/{name}, ApplicationPatchRequest, body "*": argocd-server replaces the
// app's labels and annotations with the merged ones, server/application/application.go Patch).
func patchFor(app argocd.Application, ref cluster.Ref, patch []byte) printer.UIPatch {
	if ref.Group == "argoproj.io" && ref.Kind == "Application" && ref.Namespace == app.Namespace && ref.Name == app.Name {
		body := map[string]string{"name": app.Name, "appNamespace": app.Namespace, "patch": string(patch), "patchType": "merge"}
		if app.Project != "" {
			body["project"] = app.Project
		}
		encoded, _ := json.Marshal(body)
		return printer.UIPatch{Method: "PATCH", Path: "/api/v1/applications/" + url.PathEscape(app.Name), Query: map[string]string{}, Body: string(encoded)}
	}
	return patchRequest(app, ref, patch)
}
