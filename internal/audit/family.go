package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/unprune/unprune/internal/appset"
	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
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
func familyRows(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, apps []argocd.Application) ([]Row, []string) {
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
	for _, app := range apps {
		if !cascadesIntoHighRisk(app, argo.Namespace()) {
			continue
		}
		row, ok, err := familyRow(ctx, argo, s, app, parents)
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
func familyRow(ctx context.Context, argo cluster.ArgoCD, s argocd.Settings, app argocd.Application, parents map[string]argocd.Application) (Row, bool, error) {
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
	obj := risk.Object{Group: self.Group, Kind: self.Kind, Namespace: self.Namespace, Name: self.Name, Labels: live.Labels, Annotations: live.Annotations}
	parent, hasParent := parents[app.Ref()]
	if !hasParent {
		parent, hasParent = trackingParent(ctx, argo, s, live)
	}
	switch {
	case hasParent && parent.AutoPrune:
		c.ManagedBy = fmt.Sprintf("Application %s (automated prune: removing it from git deletes it)", parent.Ref())
		// The parent prunes it like any resource: the object's Prune= options stop that.
		row.Guards, row.Notes = risk.Guards(obj, s.Version, parent.SyncOptions)
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
	judgeCascade(ctx, objects, app, argo.Namespace(), &row)
	return row, len(c.HighRisk) > 0 || row.Guarded, nil
}

// setManager names the ApplicationSet that owns the app when its policy deletes apps it stops
// generating; "" otherwise.
func setManager(ctx context.Context, argo cluster.ArgoCD, w argocd.Whole) (string, error) {
	owner, ok := w.OwnedBy("ApplicationSet")
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
	if err != nil || !set.DeletesApps() {
		return "", err
	}
	return fmt.Sprintf("ApplicationSet %s/%s (applicationsSync %s: an app it stops generating is deleted)", w.Namespace, owner.Name, set.Policy()), nil
}

// judgeCascade reads what the app's cascade would delete and what guards it: the row is guarded
// when a guard keeps the app from its parent, or every high-risk resource is kept.
func judgeCascade(ctx context.Context, objects cluster.Objects, app argocd.Application, argocdNamespace string, row *Row) {
	var rows []argocd.Resource
	for _, r := range app.Resources {
		if !r.Hook && !isCRD(r) {
			rows = append(rows, r)
		}
	}
	var high []string
	for _, t := range cascaded(ctx, objects, app, rows) {
		row.Cascade.Resources++
		if c, _ := risk.Classify(t.obj, argocdNamespace); c == risk.High {
			row.Cascade.HighRisk = append(row.Cascade.HighRisk, t.res)
			high = append(high, t.res.String())
		}
	}
	for _, g := range row.Guards {
		row.Guarded = row.Guarded || g.Hard()
	}
	row.Guarded = row.Guarded || len(high) == 0
	row.RiskWhy = fmt.Sprintf("its deletion cascades (%s) into %d resource(s), high-risk: %s", row.Cascade.Finalizer, row.Cascade.Resources, orNone(strings.Join(high, ", ")))
}

// CascadeHighRisk returns the high-risk resources that deleting app would delete with it, for an app
// that has a resources finalizer: those high-risk by identity (CRDs and hooks never go with it),
// read live for what keeps them — an owner, Delete=false, helm's keep, unprune's admission policy.
// Only those rows are read, so that `unprune watch` can keep the answer for every app.
func CascadeHighRisk(ctx context.Context, objects cluster.Objects, app argocd.Application, argocdNamespace string) []argocd.Resource {
	var out []argocd.Resource
	for _, t := range cascaded(ctx, objects, app, HighRiskByIdentity(app, argocdNamespace)) {
		out = append(out, t.res)
	}
	return out
}

// HighRiskByIdentity are the app's resources a cascade could delete that are high-risk by their
// identity alone: what CascadeHighRisk reads.
func HighRiskByIdentity(app argocd.Application, argocdNamespace string) []argocd.Resource {
	var out []argocd.Resource
	for _, r := range app.Resources {
		if c, _ := risk.Classify(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, argocdNamespace); c == risk.High && !r.Hook && !isCRD(r) {
			out = append(out, r)
		}
	}
	return out
}

// CascadeHighRiskUnread is CascadeHighRisk when the objects cannot be read: the guards their
// identity and the app's options show (an immortal namespace, the app's Delete=false) still keep
// them; the others count, since what would keep them cannot be seen.
func CascadeHighRiskUnread(app argocd.Application, argocdNamespace string) []argocd.Resource {
	var out []argocd.Resource
	for _, r := range HighRiskByIdentity(app, argocdNamespace) {
		if len(risk.CascadeGuards(risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, app.SyncOptions)) == 0 {
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

// cascaded reads rows live and returns those the app's cascade deletes: Argo CD's finalizer deletes
// what it tracks, except objects with an owner (the garbage collector's to delete) and those a
// cascade guard keeps. A row that cannot be read is left out: it is not known to exist.
func cascaded(ctx context.Context, objects cluster.Objects, app argocd.Application, rows []argocd.Resource) []target {
	if len(rows) == 0 {
		return nil
	}
	policy, _ := guard.ReadInstalled(ctx, objects)
	var found []argocd.Resource
	var refs []cluster.Ref
	for _, r := range rows {
		if ref, err := objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name); err == nil {
			found, refs = append(found, r), append(refs, ref)
		}
	}
	var out []target
	for i, res := range objects.Read(ctx, refs) {
		if res.Err != nil || len(res.Object.Owners) > 0 {
			continue
		}
		r := found[i]
		obj := risk.Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Labels: res.Object.Labels, Annotations: res.Object.Annotations}
		if len(risk.CascadeGuards(obj, app.SyncOptions)) > 0 || policy.Covers(r, obj.Labels) {
			continue
		}
		out = append(out, target{res: r, obj: obj})
	}
	return out
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
