package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/deletion"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/risk"
)

// WhenItsAppIsDeleted: the row is a whole Application that a parent app (automated prune) or its
// ApplicationSet (applicationsSync sync or create-delete) may delete, and whose resources finalizer
// then deletes high-risk resources with it.
const WhenItsAppIsDeleted When = "WhenItsAppIsDeleted"

// Cascade is what a WhenItsAppIsDeleted row adds: who may delete the app and what goes with it.
type Cascade struct {
	// ManagedBy names the parent Application or ApplicationSet, and why it may delete the app.
	ManagedBy string
	Finalizer string
	// Resources counts what the cascade deletes (tracked, not guarded, CRDs excepted); HighRisk
	// are the high-risk ones among them.
	Resources int
	HighRisk  []argocd.Resource
}

// SetReader reads an ApplicationSet, to know whether its policy deletes the apps it owns.
type SetReader interface {
	GetApplicationSet(ctx context.Context, namespace, name string) (map[string]any, error)
}

// familyRows finds the Applications whose deletion by their parent or ApplicationSet would cascade
// into high-risk resources.
func familyRows(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application, o Options) ([]Row, []string) {
	if _, ok := argo.(SetReader); !ok {
		// Argo CD's API serves an Application's resources, not the Application objects with their
		// finalizers and owners: whole apps are audited through the Kubernetes API only.
		return nil, nil
	}
	parents := map[string]argocd.Application{}
	for _, p := range apps {
		for _, r := range p.Resources {
			if r.Group == "argoproj.io" && r.Kind == "Application" && !r.Hook {
				parents[r.Namespace+"/"+r.Name] = p
			}
		}
	}
	var rows []Row
	var warnings []string
	scopes := scopes{settings: s, filter: o.Filter, of: map[string]*deletion.Scope{}}
	for _, app := range apps {
		if !cascadesIntoHighRisk(app, argo.Namespace()) {
			continue
		}
		row, ok, err := familyRow(ctx, argo, s, app, parents, &scopes)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("Application %s: %v: whether its deletion would cascade is not known", app.Ref(), err))
		}
		if ok {
			rows = append(rows, row)
		}
	}
	return rows, warnings
}

// cascadesIntoHighRisk: the app tracks a high-risk resource its cascade could delete (a CRD never is).
func cascadesIntoHighRisk(app argocd.Application, argocdNamespace string) bool {
	return len(HighRiskByIdentity(app, argocdNamespace)) > 0
}

func isCRD(r argocd.Resource) bool {
	return r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition"
}

// familyRow builds the row for one app, when it has a resources finalizer and something may delete it.
func familyRow(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, app argocd.Application, parents map[string]argocd.Application, sc *scopes) (Row, bool, error) {
	home, err := argo.Destination(ctx, argocd.Application{Namespace: app.Namespace, Destination: argocd.Destination{Server: argocd.InClusterServer}})
	if err != nil {
		return Row{}, false, err
	}
	ref, err := home.Resolve(ctx, "argoproj.io", "Application", "", app.Namespace, app.Name)
	if err != nil {
		return Row{}, false, err
	}
	live, err := home.Get(ctx, ref)
	if err != nil {
		return Row{}, false, err
	}
	whole := argocd.ParseWhole(live.Content)
	c := &Cascade{Finalizer: argocd.CascadeFinalizer(whole.Finalizers)}
	if c.Finalizer == "" {
		return Row{}, false, nil // no cascade: its deletion leaves everything in place
	}
	self := argocd.Resource{Group: "argoproj.io", Version: ref.Version, Kind: "Application", Namespace: app.Namespace, Name: app.Name}
	row := Row{App: app, Resource: self, When: WhenItsAppIsDeleted, Risk: risk.High, Cascade: c}
	parent, hasParent := parents[app.Ref()]
	if !hasParent {
		parent, hasParent = trackingParent(ctx, argo, s, live)
	}
	switch {
	case hasParent && parent.AutoPrune:
		c.ManagedBy = fmt.Sprintf("Application %s (automated prune: removing it from git deletes it)", parent.Ref())
		// The parent prunes it like any resource: the object's Prune= options stop that.
		policy, _ := guard.ReadInstalled(ctx, home)
		v := deletion.Judge(deletion.FromLive(live, &self), deletion.Prune, deletion.Context{Version: s.Version, AppSyncOptions: parent.SyncOptions, Policy: policy})
		row.Guards, row.Notes = v.Guards, v.Notes
		row.Guarded = v.Guarded
	default:
		by, err := setManager(ctx, argo, whole)
		if by == "" {
			return Row{}, false, err
		}
		c.ManagedBy = by
	}
	objects, err := argo.Destination(ctx, app)
	if err != nil {
		return Row{}, false, err
	}
	row.Cluster = objects.Info()
	judgeCascade(ctx, sc.in(objects), app, whole, argo.Namespace(), &row)
	return row, len(c.HighRisk) > 0 || row.Guarded, nil
}

// setManager names the ApplicationSet that owns the app when its policy deletes apps it stops
// generating; "" otherwise.
func setManager(ctx context.Context, argo cluster.ArgoCD, w argocd.Whole) (string, error) {
	owner, ok := w.ControlledBy("ApplicationSet")
	if !ok {
		return "", nil
	}
	reader, ok := argo.(SetReader)
	if !ok {
		return "", fmt.Errorf("owned by ApplicationSet %s, which this backend cannot read", owner.Name)
	}
	content, err := reader.GetApplicationSet(ctx, w.Namespace, owner.Name)
	if err != nil {
		return "", err
	}
	set, err := appset.Parse(content)
	if err != nil {
		return "", err
	}
	controller := appset.Controller{Why: "this backend cannot read argocd-cmd-params-cm"}
	if r, ok := argo.(cluster.ParamsReader); ok {
		if params, err := r.CmdParams(ctx); err == nil {
			if c, err := appset.ControllerFrom(params); err == nil {
				controller = c
			}
		}
	}
	policy, known := set.EffectivePolicy(controller)
	switch {
	case !known:
		return fmt.Sprintf("ApplicationSet %s/%s (its applicationsSync %s; the controller's own policy, which would override it, is not known): an app it stops generating may be deleted",
			w.Namespace, owner.Name, set.Policy()), nil
	case !appset.PolicyDeletes(policy):
		return "", nil
	case policy != set.Policy():
		return fmt.Sprintf("ApplicationSet %s/%s (the controller's applicationsSync %s overrides the set's %s: an app it stops generating is deleted)", w.Namespace, owner.Name, policy, set.Policy()), nil
	}
	return fmt.Sprintf("ApplicationSet %s/%s (applicationsSync %s: an app it stops generating is deleted)", w.Namespace, owner.Name, policy), nil
}

// judgeCascade reads what the app's cascade would delete and what guards it: the row is guarded
// when a guard keeps the app from its parent, or every high-risk resource is kept.
func judgeCascade(ctx context.Context, scope *deletion.Scope, app argocd.Application, whole argocd.Whole, argocdNamespace string, row *Row) {
	var high []string
	targets, notes := cascaded(ctx, scope, app, argocdNamespace)
	row.Notes = append(row.Notes, notes...)
	for _, t := range targets {
		row.Cascade.Resources++
		if c, _ := risk.Classify(t.obj, argocdNamespace); c == risk.High {
			row.Cascade.HighRisk = append(row.Cascade.HighRisk, t.res)
			high = append(high, t.res.String())
		}
	}
	row.Notes = append(row.Notes, deletion.Hooks(whole.Finalizers)...)
	row.Guarded = row.Guarded || len(high) == 0
	row.RiskWhy = fmt.Sprintf("its deletion cascades (%s) into %d resource(s), high-risk: %s", row.Cascade.Finalizer, row.Cascade.Resources, orNone(strings.Join(high, ", ")))
}

// CascadeHighRisk returns the high-risk resources that deleting app would delete with it, for an app
// that has a resources finalizer: its rows high-risk by identity (CRDs never go with it), read live
// for what keeps them — an owner, Delete=false, helm's keep, deletion confirmation, unprune's
// admission policy —, and the high-risk objects whose copied tracking-id names the app. Only those
// are read, so that `unprune watch` can keep the answer for every app.
func CascadeHighRisk(ctx context.Context, objects cluster.Objects, s argocd.Settings, app argocd.Application, argocdNamespace string) []argocd.Resource {
	only := app
	only.Resources = HighRiskByIdentity(app, argocdNamespace)
	targets, _ := cascaded(ctx, deletion.NewScope(objects, s, nil), only, argocdNamespace)
	var out []argocd.Resource
	for _, t := range targets {
		if c, _ := risk.Classify(t.obj, argocdNamespace); c == risk.High {
			out = append(out, t.res)
		}
	}
	return out
}

// HighRiskByIdentity are the app's resources a cascade could delete that are high-risk by their
// identity alone: what CascadeHighRisk reads.
func HighRiskByIdentity(app argocd.Application, argocdNamespace string) []argocd.Resource {
	var out []argocd.Resource
	for _, r := range app.Resources {
		if c, _ := risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, argocdNamespace); c == risk.High && !isCRD(r) {
			out = append(out, r)
		}
	}
	return out
}

// CascadeHighRiskUnread is CascadeHighRisk when the objects cannot be read: the guards their
// identity, their rows and the app's options show (an immortal namespace, a row requiring
// deletion confirmation) still keep them; the others count, since what would keep them cannot be
// seen.
func CascadeHighRiskUnread(s argocd.Settings, app argocd.Application, argocdNamespace string) []argocd.Resource {
	var out []argocd.Resource
	for _, r := range HighRiskByIdentity(app, argocdNamespace) {
		if deletion.Judge(deletion.FromRow(r), deletion.Cascade, deletion.Context{Version: s.Version, AppSyncOptions: app.SyncOptions}).Deletes() {
			out = append(out, r)
		}
	}
	return out
}

// target is one resource a cascade deletes, with its live labels and annotations.
type target struct {
	res argocd.Resource
	obj risk.Object
}

// cascaded returns what the app's cascade deletes, as the one verdict judges each member (its rows
// read live and the copies of its tracking): those deleted without anyone's approval. A row that
// cannot be read is left out: it is not known to exist.
func cascaded(ctx context.Context, scope *deletion.Scope, app argocd.Application, argocdNamespace string) ([]target, []string) {
	policy, _ := guard.ReadInstalled(ctx, scope.Objects)
	members, notes := scope.Members(ctx, app, app.Instance(argocdNamespace))
	var out []target
	for _, r := range app.Resources {
		if r.RequiresDeletionConfirmation {
			return nil, append(notes, waitsNote(r.String()))
		}
	}
	var objects []deletion.Object
	var verdicts []deletion.Verdict
	for _, m := range members {
		if m.Live == nil {
			continue
		}
		v := deletion.Judge(m.Object, deletion.Cascade, deletion.Context{Version: scope.Settings.Version, AppSyncOptions: app.SyncOptions, Policy: policy,
			SelfApp: isSelf(m.Object, app)})
		if v.Outcome == deletion.Waits {
			// finalizeApplicationDeletion deletes nothing while one resource awaits approval.
			return nil, append(notes, waitsNote(m.Object.Resource().String()))
		}
		objects, verdicts = append(objects, m.Object), append(verdicts, v)
	}
	// What a Namespace the cascade deletes holds goes with it, its own guards aside.
	for i, v := range deletion.Together(objects, verdicts) {
		if !v.Deletes() {
			continue
		}
		o := objects[i]
		out = append(out, target{res: o.Resource(), obj: risk.Object{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Labels: o.Labels, Annotations: o.Annotations}})
	}
	return out, notes
}

func waitsNote(r string) string {
	return r + " requires deletion confirmation: " + deletion.Approval(deletion.Cascade)
}

// isSelf: the object is the app's own Application (isSelfReferencedApp).
func isSelf(o deletion.Object, app argocd.Application) bool {
	return o.Group == "argoproj.io" && o.Kind == "Application" && o.Namespace == app.Namespace && o.Name == app.Name
}

// scopes are the clusters of one audit run, each searched at most once.
type scopes struct {
	settings argocd.Settings
	filter   *argocd.ResourceFilter
	of       map[string]*deletion.Scope
}

func (s *scopes) in(objects cluster.Objects) *deletion.Scope {
	key := objects.Info().Name + "|" + objects.Info().Server
	if sc, ok := s.of[key]; ok {
		return sc
	}
	sc := deletion.NewScope(objects, s.settings, s.filter)
	s.of[key] = sc
	return sc
}

func orNone(s string) string {
	if s == "" {
		return "none (each is guarded)"
	}
	return s
}

// trackingParent finds the app that tracks the Application object itself when it is not among the
// audited apps: the instance in its tracking metadata names it (NAME in Argo CD's namespace,
// NAMESPACE_NAME elsewhere).
func trackingParent(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, live *cluster.Object) (argocd.Application, bool) {
	own := s.Owner(live.Labels, live.Annotations, live.Ref.ObjectRef())
	if !own.Tracked {
		return argocd.Application{}, false
	}
	ns, name := argo.Namespace(), own.Instance
	if before, after, found := strings.Cut(own.Instance, "_"); found {
		ns, name = before, after
	}
	parent, err := argo.GetApplication(ctx, ns, name)
	return parent, err == nil
}
