package deletion

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Searcher is implemented by backends that can list the metadata of every object in a cluster, of
// every kind it serves and lists, as Argo CD's cluster cache watches them: an app's cascade deletes
// every top-level object whose tracking names the app, also those its status does not list.
type Searcher interface {
	// EachObject calls fn for every object of every listable kind (namespaced kinds in every
	// namespace). skipped names the kinds it could not list.
	EachObject(ctx context.Context, fn func(*cluster.Object)) (skipped []string, err error)
}

// Member is one live object the cascade of an app reaches, or one of its rows that could not be
// read.
type Member struct {
	Object Object
	// Ref is the live object's reference.
	Ref cluster.Ref
	// Live is the object as read; nil when Error says why it could not be.
	Live  *cluster.Object
	Error string
}

// Scope is who answers which objects a cascade reaches in one cluster: the objects, the settings
// that say what tracking names an app, and a search for objects the app does not list, done once.
type Scope struct {
	Objects  cluster.Objects
	Settings argocd.Settings
	// Filter is resource.exclusions/inclusions: Argo CD does not watch (so never deletes) excluded
	// kinds. Nil applies only Argo CD's built-in exclusions.
	Filter *argocd.ResourceFilter

	once    sync.Once
	byInst  map[string][]*cluster.Object
	skipped []string
	err     error
}

// NewScope returns the scope of one cluster for one run.
func NewScope(objects cluster.Objects, s argocd.Settings, filter *argocd.ResourceFilter) *Scope {
	return &Scope{Objects: objects, Settings: s, Filter: filter}
}

// Members lists what deleting app (its instance in this cluster) reaches: each status row read
// live and still tracked by the app, and, where tracking is read from the annotation, every other
// top-level object whose tracking-id names the app (a copy). Rows that cannot be read are returned
// with their error; rows whose object is gone are left out. notes say what could not be searched.
func (sc *Scope) Members(ctx context.Context, app argocd.Application, instance string) (members []Member, notes []string) {
	var rows []argocd.Resource
	var refs []cluster.Ref
	for _, r := range app.Resources {
		ref, err := sc.Objects.Resolve(ctx, r.Group, r.Kind, r.Version, r.Namespace, r.Name)
		if err != nil {
			row := r
			members = append(members, Member{Object: rowObject(&row), Error: err.Error()})
			continue
		}
		rows, refs = append(rows, r), append(refs, ref)
	}
	listed := map[string]bool{}
	for i, res := range sc.Objects.Read(ctx, refs) {
		row := rows[i]
		listed[refs[i].Key()] = true
		switch {
		case cluster.IsNotFound(res.Err):
			continue
		case res.Err != nil:
			members = append(members, Member{Object: rowObject(&row), Ref: refs[i], Error: res.Err.Error()})
			continue
		}
		live := res.Object
		// GetManagedLiveObjs reads the live tracking: a row whose object no longer names the app
		// (detached since the last comparison) is not deleted.
		if !sc.Settings.CascadeOwner(live.Labels, live.Annotations).TrackedBy(instance) {
			continue
		}
		members = append(members, Member{Object: liveObject(live, &row), Ref: refs[i], Live: live})
	}
	copies, note := sc.copies(ctx, instance, listed)
	if note != "" {
		notes = append(notes, note)
	}
	members = append(members, copies...)
	sort.SliceStable(members, func(i, j int) bool {
		return members[i].Object.Resource().String() < members[j].Object.Resource().String()
	})
	return members, notes
}

// copies are the objects the app does not list that its cascade deletes. Label tracking has no
// self-reference check, so every such object is in the app's status already: the search is made
// only when the annotation is read.
func (sc *Scope) copies(ctx context.Context, instance string, listed map[string]bool) ([]Member, string) {
	if !sc.Settings.ReadsAnnotation() {
		return nil, ""
	}
	searcher, ok := sc.Objects.(Searcher)
	if !ok {
		return nil, "objects carrying a copy of the app's tracking-id were not searched for (this backend cannot list every kind): its cascade deletes them too"
	}
	sc.once.Do(func() { sc.search(ctx, searcher) })
	if sc.err != nil {
		return nil, fmt.Sprintf("cannot search cluster %s for copies of the app's tracking-id (%v): its cascade deletes them too", sc.Objects.Info().Name, sc.err)
	}
	var out []Member
	for _, o := range sc.byInst[instance] {
		if listed[o.Ref.Key()] {
			continue
		}
		out = append(out, Member{Object: liveObject(o, nil), Ref: o.Ref, Live: o})
	}
	note := ""
	if len(sc.skipped) > 0 {
		note = fmt.Sprintf("cluster %s: %d kind(s) could not be listed for copies of tracking-ids (%s): their objects are not shown", sc.Objects.Info().Name,
			len(sc.skipped), strings.Join(sc.skipped, ", "))
	}
	return out, note
}

func (sc *Scope) search(ctx context.Context, s Searcher) {
	sc.byInst = map[string][]*cluster.Object{}
	server := sc.Objects.Info().Server
	filter := argocd.ResourceFilter{}
	if sc.Filter != nil {
		filter = *sc.Filter
	}
	var mu sync.Mutex
	sc.skipped, sc.err = s.EachObject(ctx, func(o *cluster.Object) {
		if len(o.Owners) > 0 || filter.Hidden(o.Ref.Group, o.Ref.Kind, server, o.Labels) {
			return
		}
		own := sc.Settings.CascadeOwner(o.Labels, o.Annotations)
		if !own.Tracked {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range own.Claims {
			if c.Tracks {
				sc.byInst[c.Instance] = append(sc.byInst[c.Instance], o)
			}
		}
	})
}

func rowObject(r *argocd.Resource) Object {
	return Object{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Row: r}
}

func liveObject(o *cluster.Object, row *argocd.Resource) Object {
	return Object{Group: o.Ref.Group, Kind: o.Ref.Kind, Namespace: o.Ref.Namespace, Name: o.Ref.Name,
		Labels: o.Labels, Annotations: o.Annotations, Owners: o.Owners, Read: true, Row: row}
}

// FromLive is the Object of a live object and its status row (nil when the app does not list it).
func FromLive(o *cluster.Object, row *argocd.Resource) Object { return liveObject(o, row) }

// FromRow is the Object of a row whose live object is not known.
func FromRow(r argocd.Resource) Object { return rowObject(&r) }

// Approval says how one approval releases confirm-gated deletions, for the event.
func Approval(e Event) string {
	if e == Prune {
		return "one argocd.argoproj.io/deletion-approved on the Application (a timestamp at or after the sync's start) releases every confirm-gated prune of that sync operation at once"
	}
	return "the cascade deletes nothing until argocd.argoproj.io/deletion-approved (a timestamp at or after the app's deletion) is set on the Application; " +
		"that one approval releases every confirm-gated deletion of the cascade at once"
}

// Hooks says when deleting an app runs hooks: its pre-/post-delete finalizers make Argo CD run them
// (controller/appcontroller.go finalizeApplicationDeletion; PreDelete hooks from v3.3).
func Hooks(finalizers []string) []string {
	var out []string
	// One note per phase: the controller may write a phase's finalizer twice, plain and with a
	// "/cleanup" suffix.
	if f, ok := finalizerOf(finalizers, argocd.FinalizerPreDelete); ok {
		out = append(out, "its PreDelete hooks run first (finalizer "+f+"): nothing is deleted until they complete")
	}
	if f, ok := finalizerOf(finalizers, argocd.FinalizerPostDelete); ok {
		out = append(out, "its PostDelete hooks run once its resources are deleted (finalizer "+f+")")
	}
	return out
}

// finalizerOf returns the first finalizer with the given prefix.
func finalizerOf(finalizers []string, prefix string) (string, bool) {
	for _, f := range finalizers {
		if strings.HasPrefix(f, prefix) {
			return f, true
		}
	}
	return "", false
}
