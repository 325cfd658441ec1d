package readcache

import (
	"encoding/json"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/unprune/unprune/internal/argocd"
)

// App is an Application as the watch's informers hold it. Its status.resources — 50 rows and
// more per app, each decoded as a map of strings — weighed most of the watch's memory at 10,000
// apps: they are kept encoded (rows), and the rest of the object keeps only what the judgement
// reads (keptStatus). The object answers metav1.Object through its embedded Unstructured, so the
// informer keys, indexes and hands it over like any other.
type App struct {
	*unstructured.Unstructured
	rows rows
	// strings is the table of the Apps that made it, which the rows' repeated strings are numbered
	// in: one pointer per app, the table shared.
	strings *internTable
}

var (
	_ metav1.Object  = (*App)(nil)
	_ runtime.Object = (*App)(nil)
)

// DeepCopyObject copies both parts: the promoted one would return the Unstructured alone.
func (a *App) DeepCopyObject() runtime.Object {
	return &App{Unstructured: a.Unstructured.DeepCopy(), rows: a.rows, strings: a.strings}
}

// Apps makes the Applications a watch's informers hold compact (App), and owns the table of the
// strings their rows repeat. The zero Apps is ready to use; it must not be copied once used.
type Apps struct {
	once sync.Once
	// strings are the strings many rows repeat.
	strings *internTable
}

func (s *Apps) rowStrings() *internTable {
	s.once.Do(func() { s.strings = newInternTable(1 << 16) })
	return s.strings
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

// Compact is the Application informers' transform: it drops what the watch never reads before the
// informer stores an Application (managedFields, kubectl's last-applied copy of the object, the
// status fields it does not read) and parses status.resources into rows sharing s's strings. It
// runs again on what it returned (the reflector's watch-list store and the informer's queue both
// transform), so it takes an App as it is.
func (s *Apps) Compact(obj any) (any, error) {
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
	table := s.rowStrings()
	return &App{Unstructured: u, rows: encodeRows(table, rows), strings: table}, nil
}

// rows are an Application's status.resources encoded in one string (compact.go): for each row its
// flags, its group, version, kind, namespace, status and health interned in the Apps' table of
// strings, its name. Parsed rows took 144 bytes each, a struct of seven string headers; encoded,
// about 30. Empty: the status has no rows.
type rows string

const (
	rowRequiresPruning = 1 << iota
	rowHook
	rowRequiresDeletionConfirmation
)

var rowFlags = [...]struct {
	bit   byte
	field string
}{{rowRequiresPruning, "requiresPruning"}, {rowHook, "hook"}, {rowRequiresDeletionConfirmation, "requiresDeletionConfirmation"}}

// encodeRows reads status.resources as argocd.Resource's UnmarshalJSON does, interning the rows'
// repeated strings in table.
func encodeRows(table *internTable, list []any) rows {
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
			b = table.append(b, s)
		}
		name, _ := m["name"].(string)
		b = appendString(b, name)
	}
	return rows(b)
}

// decode is the rows parsed, each with strings of its own or shared with every row; table is the
// one encodeRows interned them in.
func (rs rows) decode(table *internTable) []argocd.Resource {
	if rs == "" {
		return nil
	}
	var out []argocd.Resource
	d := decoder{s: string(rs)}
	for d.more() {
		flags := d.byte()
		r := argocd.Resource{Group: d.interned(table), Version: d.interned(table), Kind: d.interned(table),
			Namespace: d.interned(table), Status: d.interned(table), Health: d.interned(table), Name: d.string(),
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

// Resources are the app's status.resources parsed, each row with strings of its own or shared with
// every row.
func (a *App) Resources() []argocd.Resource { return a.rows.decode(a.strings) }

// Content is the Application as one object, its rows included, for readers of live objects (a
// parent app read as a child's owner, a whole-app row). The stored object is not changed.
func (a *App) Content() map[string]any {
	out := maps.Clone(a.Object)
	status, _ := out["status"].(map[string]any)
	status = maps.Clone(status)
	if status == nil {
		status = map[string]any{}
	}
	if a.rows != "" {
		status["resources"] = rowsContent(a.Resources())
	}
	out["status"] = status
	return out
}

// Application parses the app for audit: its rows are a copy, so that nothing audit does to them
// reaches the informer's store.
func (a *App) Application() (argocd.Application, error) {
	app, err := applicationOf(a.Object)
	if err != nil {
		return app, err
	}
	app.Resources = a.Resources()
	return app, nil
}

// AsApp is the App an informer handed over (directly, or as the last state of a deleted one); nil
// for anything else.
func (s *Apps) AsApp(obj any) *App {
	switch o := obj.(type) {
	case *App:
		return o
	case *unstructured.Unstructured:
		// Not yet transformed (a test feeding the handlers directly).
		a, _ := s.Compact(o)
		return a.(*App)
	}
	return nil
}

// applicationOf parses an Application as the informers hold it.
func applicationOf(content map[string]any) (argocd.Application, error) {
	data, err := json.Marshal(content)
	if err != nil {
		return argocd.Application{}, err
	}
	return argocd.ParseApplication(data)
}
