package watch

import (
	"maps"
	"slices"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/unprune/unprune/internal/argocd"
)

// informedApp is an Application as the watch's informers hold it. Its status.resources — 50 rows and
// more per app, each decoded as a map of strings — weighed most of the watch's memory at 10,000
// apps: they are kept as parsed rows whose repeated strings (group, version, kind, namespace,
// status, health) are shared, and the rest of the object keeps only what the judgement reads
// (keptStatus). The object answers metav1.Object through its embedded Unstructured, so the
// informer keys, indexes and hands it over like any other.
type informedApp struct {
	*unstructured.Unstructured
	resources []argocd.Resource
}

var (
	_ metav1.Object  = (*informedApp)(nil)
	_ runtime.Object = (*informedApp)(nil)
)

// DeepCopyObject copies both parts: the promoted one would return the Unstructured alone.
func (a *informedApp) DeepCopyObject() runtime.Object {
	return &informedApp{Unstructured: a.Unstructured.DeepCopy(), resources: slices.Clone(a.resources)}
}

// keptStatus are the status fields the judgement reads besides resources: the sync status and
// revision, the last comparison's time and the operation's phase (argocd.ParseApplication), the
// source types (argocd.ParseWhole). Everything else — conditions, summary, history, the operation's
// results, health — goes.
var keptStatus = map[string][]string{
	"sync":           {"status", "revision"},
	"reconciledAt":   nil,
	"operationState": {"phase"},
	"sourceType":     nil,
	"sourceTypes":    nil,
}

// compactApplication is the Application informers' transform: it drops what the watch never reads
// before the informer stores an Application (managedFields, kubectl's last-applied copy of the
// object, the status fields it does not read) and parses status.resources into shared rows. It
// runs again on what it returned (the reflector's watch-list store and the informer's queue both
// transform), so it takes an informedApp as it is.
func compactApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", argocd.AnnotationLastAppliedConfiguration)
	status, _ := u.Object["status"].(map[string]any)
	rows, _ := status["resources"].([]any)
	kept := map[string]any{}
	for k, fields := range keptStatus {
		v, ok := status[k]
		if !ok {
			continue
		}
		if m, isMap := v.(map[string]any); isMap && fields != nil {
			sub := map[string]any{}
			for _, f := range fields {
				if fv, ok := m[f]; ok {
					sub[f] = fv
				}
			}
			v = sub
		}
		kept[k] = v
	}
	if status != nil {
		u.Object["status"] = kept
	}
	return &informedApp{Unstructured: u, resources: parseRows(rows)}, nil
}

// parseRows reads status.resources as argocd.Resource's UnmarshalJSON does.
func parseRows(rows []any) []argocd.Resource {
	if len(rows) == 0 {
		return nil
	}
	out := make([]argocd.Resource, 0, len(rows))
	for _, r := range rows {
		m, _ := r.(map[string]any)
		if m == nil {
			continue
		}
		row := argocd.Resource{
			Group: shared(m["group"]), Version: shared(m["version"]), Kind: shared(m["kind"]),
			Namespace: shared(m["namespace"]), Name: str(m["name"]), Status: shared(m["status"]),
			RequiresPruning: flag(m["requiresPruning"]), Hook: flag(m["hook"]),
			RequiresDeletionConfirmation: flag(m["requiresDeletionConfirmation"]),
		}
		if h, ok := m["health"].(map[string]any); ok {
			row.Health = shared(h["status"])
		}
		out = append(out, row)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// shared is a string many rows repeat (a kind, a namespace, a status), stored once for all of them.
func shared(v any) string {
	s, _ := v.(string)
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

func flag(v any) bool {
	b, _ := v.(bool)
	return b
}

// rowsContent renders rows back as the API server writes them, for readers of the whole object.
func rowsContent(rows []argocd.Resource) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		m := map[string]any{"version": r.Version, "kind": r.Kind, "name": r.Name}
		for k, v := range map[string]string{"group": r.Group, "namespace": r.Namespace, "status": r.Status} {
			if v != "" {
				m[k] = v
			}
		}
		for k, v := range map[string]bool{"requiresPruning": r.RequiresPruning, "hook": r.Hook, "requiresDeletionConfirmation": r.RequiresDeletionConfirmation} {
			if v {
				m[k] = true
			}
		}
		if r.Health != "" {
			m["health"] = map[string]any{"status": r.Health}
		}
		out[i] = m
	}
	return out
}

// content is the Application as one object, its rows included, for readers of live objects (a
// parent app read as a child's owner, a whole-app row). The stored object is not changed.
func (a *informedApp) content() map[string]any {
	out := maps.Clone(a.Object)
	status, _ := out["status"].(map[string]any)
	status = maps.Clone(status)
	if status == nil {
		status = map[string]any{}
	}
	if a.resources != nil {
		status["resources"] = rowsContent(a.resources)
	}
	out["status"] = status
	return out
}

// application parses the app for audit: its rows are a copy, so that nothing audit does to them
// reaches the informer's store.
func (a *informedApp) application() (argocd.Application, error) {
	app, err := applicationOf(a.Object)
	if err != nil {
		return app, err
	}
	app.Resources = slices.Clone(a.resources)
	return app, nil
}

// asInformedApp is the informedApp an informer handed over (directly, or as the last state of a
// deleted one); nil for anything else.
func asInformedApp(obj any) *informedApp {
	switch o := obj.(type) {
	case *informedApp:
		return o
	case *unstructured.Unstructured:
		// Not yet transformed (a test feeding the handlers directly).
		a, _ := compactApplication(o)
		return a.(*informedApp)
	}
	return nil
}
