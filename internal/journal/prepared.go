package journal

import (
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Command and strategies of `unprune move` journals. A move journal holds the same kind of entries
// as detach's (rewrites of labels and annotations, each with the value it found), so an undo of an
// older release restores it correctly; the format is unchanged.
const (
	CommandMove     = "move"
	StrategyMove    = "move"
	StrategyPrepare = "prepare"
)

// Preparation is what a `move --prepare` journal wrote on one object's sync-options annotation.
type Preparation struct {
	// App is the app the object was prepared to leave.
	App  AppRef
	Path string
	At   time.Time
	// Object is the object marked, and Cluster the Name of its cluster in the journal.
	Object  ObjectRef
	Cluster cluster.Info
	Change  Change
}

// Preparations finds, by object UID, the newest applied, not undone entry of the `move --prepare`
// journals of app (namespace/name): the sync-options change that the later move takes off again.
// Journals that cannot be read are passed over.
func (s *Store) Preparations(app AppRef) map[string]Preparation {
	return s.preparations(&app)
}

// AllPreparations finds, by object UID, the newest applied, not undone entry of every `move
// --prepare` journal: what scan checks for marks still on live objects.
func (s *Store) AllPreparations() map[string]Preparation { return s.preparations(nil) }

func (s *Store) preparations(app *AppRef) map[string]Preparation {
	out := map[string]Preparation{}
	_ = s.each(func(path string, j *Journal, _ bool, err error) {
		if err != nil || j.Command != CommandMove || j.Strategy != StrategyPrepare {
			return
		}
		for _, e := range j.Entries {
			if e.State != StateApplied || e.Application == nil || app != nil && (e.Application.Namespace != app.Namespace || e.Application.Name != app.Name) {
				continue
			}
			for _, c := range e.Changes {
				if c.Field != FieldAnnotation || c.Key != argocd.AnnotationSyncOptions {
					continue
				}
				at := e.UpdatedAt
				if at.IsZero() {
					at = j.CreatedAt
				}
				if prev, seen := out[e.Object.UID]; !seen || at.After(prev.At) {
					info, _ := j.ClusterOf(e)
					out[e.Object.UID] = Preparation{App: *e.Application, Path: path, At: at, Object: e.Object, Cluster: info, Change: c}
				}
			}
		}
	})
	return out
}
