package watch

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/unprune/unprune/internal/argocd"
)

// informedApp is an Application as the watch's informers hold it. Its status.resources — 50 rows and
// more per app, each decoded as a map of strings — weighed most of the watch's memory at 10,000
// apps: they are kept encoded (rows), and the rest of the object keeps only what the judgement
// reads (keptStatus). The object answers metav1.Object through its embedded Unstructured, so the
// informer keys, indexes and hands it over like any other.
type informedApp struct {
	*unstructured.Unstructured
	rows rows
}

var (
	_ metav1.Object  = (*informedApp)(nil)
	_ runtime.Object = (*informedApp)(nil)
)

// DeepCopyObject copies both parts: the promoted one would return the Unstructured alone.
func (a *informedApp) DeepCopyObject() runtime.Object {
	return &informedApp{Unstructured: a.Unstructured.DeepCopy(), rows: a.rows}
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
	return &informedApp{Unstructured: u, rows: encodeRows(rows)}, nil
}

// rows are an Application's status.resources encoded in one string (compact.go): for each row its
// flags, its group, version, kind, namespace, status and health interned in rowStrings, its name.
// Parsed rows took 144 bytes each, a struct of seven string headers; encoded, about 30. Empty: the
// status has no rows.
type rows string

// rowStrings are the strings many rows repeat.
var rowStrings = newInternTable(1 << 16)

const (
	rowRequiresPruning = 1 << iota
	rowHook
	rowRequiresDeletionConfirmation
)

var rowFlags = [...]struct {
	bit   byte
	field string
}{{rowRequiresPruning, "requiresPruning"}, {rowHook, "hook"}, {rowRequiresDeletionConfirmation, "requiresDeletionConfirmation"}}

// encodeRows reads status.resources as argocd.Resource's UnmarshalJSON does.
func encodeRows(list []any) rows {
	var b []byte
	for _, r := range list {
		m, _ := r.(map[string]any)
		if m == nil {
			continue
		}
		var flags byte
		for _, f := range rowFlags {
			if v, _ := m[f.field].(bool); v {
				flags |= f.bit
			}
		}
		h, _ := m["health"].(map[string]any)
		b = append(b, flags)
		for _, v := range []any{m["group"], m["version"], m["kind"], m["namespace"], m["status"], h["status"]} {
			s, _ := v.(string)
			b = rowStrings.append(b, s)
		}
		name, _ := m["name"].(string)
		b = appendString(b, name)
	}
	return rows(b)
}

// decode is the rows parsed, each with strings of its own or shared with every row.
func (rs rows) decode() []argocd.Resource {
	if rs == "" {
		return nil
	}
	var out []argocd.Resource
	d := decoder{s: string(rs)}
	for d.more() {
		flags := d.byte()
		r := argocd.Resource{Group: d.interned(rowStrings), Version: d.interned(rowStrings), Kind: d.interned(rowStrings),
			Namespace: d.interned(rowStrings), Status: d.interned(rowStrings), Health: d.interned(rowStrings), Name: d.string(),
			RequiresPruning: flags&rowRequiresPruning != 0, Hook: flags&rowHook != 0,
			RequiresDeletionConfirmation: flags&rowRequiresDeletionConfirmation != 0}
		out = append(out, r)
	}
	return out
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
	if a.rows != "" {
		status["resources"] = rowsContent(a.rows.decode())
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
	app.Resources = a.rows.decode()
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
