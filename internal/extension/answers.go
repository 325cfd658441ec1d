package extension

import (
	"net/http"
	"sort"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/risk"
)

func itemOf(row audit.Row) printer.UIItem {
	it := printer.UIItem{Resource: printer.NewResourceRef(row.Resource), Hook: row.Resource.Hook, Risk: string(row.Risk), RiskWhy: row.RiskWhy,
		Guarded: row.Guarded, Notes: row.Notes, LiveError: row.LiveError, Guards: []printer.UIGuard{}}
	if c := row.Contents; c != nil {
		it.Contents = &printer.UIContents{Objects: c.Objects, CustomResources: c.CustomResources, Partial: c.Partial}
	}
	for _, g := range row.Guards {
		it.Guards = append(it.Guards, printer.UIGuard{Name: string(g), Description: g.Describe(), Hard: g.Hard()})
	}
	return it
}

// auditApp is audit's answer for the request's app.
func (s *server) auditApp(r *request) (audit.Report, error) {
	return audit.Run(r.Context(), r.argo, r.settings.Settings, []argocd.Application{r.app}, audit.Options{Filter: r.settings.KnownFilter()})
}

func (s *server) application(r *request) reply {
	rep, err := s.auditApp(r)
	if err != nil {
		return fail(http.StatusBadGateway, "AuditFailed", "%v", err)
	}
	ans := printer.UIApplication{APIVersion: printer.APIVersion, Kind: "UIApplication", ToolVersion: s.cfg.ToolVersion,
		Application: printer.UIAppRef{AppRef: printer.AppRef{Namespace: r.app.Namespace, Name: r.app.Name}, Project: r.app.Project},
		SyncStatus:  r.app.SyncStatus, AutoPrune: r.app.AutoPrune, Items: []printer.UIItem{}, Warnings: rep.Warnings}
	if !s.cfg.RemoteDestinations && !r.app.Destination.InCluster() {
		ans.Warnings = append([]string{(&RemoteUnreadError{App: r.app.Ref(), Destination: r.app.Destination}).Error()}, ans.Warnings...)
	}
	var cascadeRow *audit.Row
	for i, row := range rep.Rows {
		switch {
		case row.When == audit.WhenItsAppIsDeleted && row.App.Ref() == r.app.Ref():
			cascadeRow = &rep.Rows[i]
		case row.When == audit.Now && row.App.Ref() == r.app.Ref():
			it := itemOf(row)
			ans.Items = append(ans.Items, it)
			ans.Summary.RequiresPruning++
			high := row.Risk == risk.High
			if high {
				ans.Summary.HighRisk++
			}
			if !row.Guarded {
				ans.Summary.Unguarded++
				if high {
					ans.Summary.UnguardedHighRisk++
				}
			}
		}
	}
	sortItems(ans.Items)
	ans.Cascade = s.cascade(r, cascadeRow)
	ans.Budget = s.budgetOf(r)
	return ok(ans)
}

// sortItems puts high-risk rows first, unguarded before guarded, then by name.
func sortItems(items []printer.UIItem) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if (a.Risk == string(risk.High)) != (b.Risk == string(risk.High)) {
			return a.Risk == string(risk.High)
		}
		if a.Guarded != b.Guarded {
			return !a.Guarded
		}
		return a.Resource.String() < b.Resource.String()
	})
}

// cascade is what deleting the app deletes of high risk: audit's whole-app row when a parent or
// ApplicationSet may delete it, else the watch's reading (audit.CascadeHighRisk), nothing without
// a resources finalizer.
func (s *server) cascade(r *request, row *audit.Row) printer.UICascade {
	c := printer.UICascade{HighRisk: []printer.ResourceRef{}}
	if row != nil && row.Cascade != nil {
		c.Finalizer, c.ManagedBy = row.Cascade.Finalizer, row.Cascade.ManagedBy
		for _, h := range row.Cascade.HighRisk {
			c.HighRisk = append(c.HighRisk, printer.NewResourceRef(h))
		}
		return c
	}
	ctx := r.Context()
	home, err := homeObjects(r)
	if err == nil {
		ref, rerr := home.Resolve(ctx, "argoproj.io", "Application", "", r.app.Namespace, r.app.Name)
		if err = rerr; err == nil {
			live, gerr := home.Get(ctx, ref)
			if err = gerr; err == nil {
				c.Finalizer = argocd.CascadeFinalizer(argocd.ParseWhole(live.Content).Finalizers)
			}
		}
	}
	if err != nil {
		c.Unknown = "the Application's finalizers could not be read: " + err.Error()
		return c
	}
	if c.Finalizer == "" {
		return c
	}
	var high []argocd.Resource
	if objects, derr := r.argo.Destination(ctx, r.app); derr != nil {
		high = audit.CascadeHighRiskUnread(r.settings.Settings, r.app, r.argo.Namespace())
		c.Unknown = "the destination could not be read (" + derr.Error() + "): every high-risk resource counts"
	} else {
		high = audit.CascadeHighRisk(ctx, objects, r.settings.Settings, r.app, r.argo.Namespace())
	}
	for _, h := range high {
		c.HighRisk = append(c.HighRisk, printer.NewResourceRef(h))
	}
	return c
}

func changesOf(cs []journalChange) []printer.UIChange {
	out := []printer.UIChange{}
	for _, c := range cs {
		ch := printer.UIChange{Field: string(c.Field), Key: c.Key, Description: c.String()}
		if c.Embedded == nil && c.ManagedFields == nil {
			ch.Before, ch.After = c.Before, c.After
		}
		out = append(out, ch)
	}
	return out
}

// rowOf finds the request's resource among the app's status rows.
func rowOf(r *request, want printer.ResourceRef) (argocd.Resource, bool) {
	for _, row := range r.app.Resources {
		if row.Group == want.Group && row.Kind == want.Kind && row.Namespace == want.Namespace && row.Name == want.Name {
			return row, true
		}
	}
	return argocd.Resource{}, false
}

func queryResource(r *request) printer.ResourceRef {
	q := r.URL.Query()
	return printer.ResourceRef{Group: q.Get("group"), Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name")}
}

func (s *server) resource(r *request) reply {
	want := queryResource(r)
	row, found := rowOf(r, want)
	if !found {
		return fail(http.StatusNotFound, "NotInApplication", "Application %s lists no %s", r.app.Ref(), want)
	}
	ans := printer.UIResource{APIVersion: printer.APIVersion, Kind: "UIResource", ToolVersion: s.cfg.ToolVersion,
		Application:     printer.UIAppRef{AppRef: printer.AppRef{Namespace: r.app.Namespace, Name: r.app.Name}, Project: r.app.Project},
		RequiresPruning: row.RequiresPruning}
	rep, err := s.auditApp(r)
	if err != nil {
		return fail(http.StatusBadGateway, "AuditFailed", "%v", err)
	}
	ans.Item = printer.UIItem{Resource: printer.NewResourceRef(row), Hook: row.Hook, Guards: []printer.UIGuard{}}
	for _, ar := range rep.Rows {
		if ar.When == audit.Now && ar.Resource.Key() == row.Key() {
			ans.Item = itemOf(ar)
		}
	}
	if ans.Item.Risk == "" {
		c, why := risk.Classify(risk.Object{Group: row.Group, Kind: row.Kind, Namespace: row.Namespace, Name: row.Name}, r.argo.Namespace())
		ans.Item.Risk, ans.Item.RiskWhy = string(c), why
	}
	it, err := s.planRelease(r, row)
	if err != nil {
		return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
	}
	ans.Release = planOf(it)
	if row.RequiresPruning {
		c, err := s.planConfirm(r, row)
		if err != nil {
			return fail(http.StatusBadGateway, "PlanFailed", "%v", err)
		}
		ans.Confirm = planOf(c)
	}
	return ok(ans)
}

// planConfirm is guard confirm's plan for one row of the app: only for a row that requires
// pruning, whose sync-options git no longer sets (Argo CD would write a manifest's value back).
func (s *server) planConfirm(r *request, row argocd.Resource) (*engine.Item, error) {
	objects, err := r.argo.Destination(r.Context(), r.app)
	if err != nil {
		return nil, err
	}
	e := &engine.Engine{ArgoCD: r.argo, Settings: r.settings.Settings, ToolVersion: s.cfg.ToolVersion, Now: s.cfg.Now}
	arg := engine.ResourceArg{Kind: row.Kind, Group: row.Group, Namespace: row.Namespace, Name: row.Name, Raw: row.String()}
	p, err := e.PlanObjects(r.Context(), objects, engine.ObjectsRequest{Command: guard.Command, Strategy: "confirm", Resources: []engine.ResourceArg{arg}, Build: guard.ConfirmPlan})
	if err != nil {
		return nil, err
	}
	if len(p.Items) != 1 {
		return nil, errNotPlanned(row)
	}
	it := p.Items[0]
	it.App = &engine.AppRun{App: r.app, Instance: r.app.Instance(r.argo.Namespace())}
	return it, nil
}

// planRelease is the engine's plan for releasing one row of the app, as `unprune detach APP
// RESOURCE` plans it.
func (s *server) planRelease(r *request, row argocd.Resource) (*engine.Item, error) {
	e := &engine.Engine{ArgoCD: r.argo, Settings: r.settings.Settings, Journals: s.cfg.Journals(""), ToolVersion: s.cfg.ToolVersion, Now: s.cfg.Now}
	arg := engine.ResourceArg{Kind: row.Kind, Group: row.Group, Namespace: row.Namespace, Name: row.Name, Raw: row.String()}
	p, err := e.PlanDetach(r.Context(), engine.DetachRequest{Apps: []engine.AppName{{Namespace: r.app.Namespace, Name: r.app.Name}},
		Resources: []engine.ResourceArg{arg}, Strategy: plan.StrategyUntrack})
	if err != nil {
		return nil, err
	}
	for _, it := range p.Items {
		if it.Ref.Kind == row.Kind && it.Ref.Name == row.Name && it.Ref.Namespace == row.Namespace {
			return it, nil
		}
	}
	if len(p.Items) == 1 {
		return p.Items[0], nil
	}
	return nil, errNotPlanned(row)
}

func planOf(it *engine.Item) printer.UIPlan {
	p := printer.UIPlan{Outcome: string(it.Outcome), Reason: it.Reason, Message: it.Message, Changes: changesOf(it.Plan.Changes), Notes: it.Plan.Notes}
	if it.Live != nil {
		p.ResourceVersion, p.UID = it.Live.ResourceVersion, it.Live.UID
		if len(it.Plan.Changes) > 0 {
			name := it.Ref.String()
			p.Diff = printer.UnifiedDiff(name, printer.MetadataLines(it.Live.Labels, it.Live.Annotations, nil),
				printer.MetadataLines(it.Live.Labels, it.Live.Annotations, it.Plan.Changes))
		}
	}
	if p.Outcome == string(engine.OutcomeRefused) && p.Message == "" && it.Plan.Refusal != nil {
		p.Message = it.Plan.Refusal.Message
	}
	p.Message = strings.TrimSpace(p.Message)
	return p
}
