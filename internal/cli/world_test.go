package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
	"github.com/unprune/unprune/internal/session/sessiontest"
)

var goldenVersion = argocd.Version{Major: 3, Minor: 6, Patch: 1}

// remoteServer is the destination cluster prod-eu's API server.
const remoteServer = "https://prod-eu.example.com"

// world is the seed's incident in the in-memory Argo CD: Application "guestbook" was synced with
// kube-system and two team namespaces, the commit was reverted, and the three now require pruning;
// its Deployment is in git and Synced. Application "platform" is Synced and prunes nothing.
// Application "apps/shop" lives in another namespace (apps in any namespace, instance apps_shop)
// and deploys to the remote cluster prod-eu, where its ConfigMap shop/legacy requires pruning.
type world struct {
	t      *testing.T
	dir    string
	argo   *clustertest.ArgoCD
	home   *clustertest.Cluster
	remote *clustertest.Cluster
	env    map[string]string
	rand   io.Reader
	refs   map[string]cluster.Ref
	// now is the commands' clock: the shared timeline, unless a case needs time to pass (stepClock).
	now   func() time.Time
	clock *clustertest.Clock
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation+label"}, &goldenVersion)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	argo := clustertest.NewArgoCD("argocd", home, s)
	// The commands, the clusters and the controller share one timeline: writes move it on past the
	// last comparison, comparisons start past the last write (clustertest.Clock), waiting takes no
	// time on it.
	clock := clustertest.NewClock(goldenTime)
	home.Clock, argo.Clock = clock, clock
	w := &world{t: t, dir: fixedLengthDir(t), argo: argo, home: home, env: map[string]string{}, rand: sessiontest.Counter(), refs: map[string]cluster.Ref{},
		now: clock.Now, clock: clock}

	guestbook := argocd.Application{Name: "guestbook", Project: "default", SyncStatus: "OutOfSync",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "guestbook"}}
	for _, ns := range []string{"kube-system", "team-a", "team-b"} {
		w.refs[ns] = w.tracked("guestbook", "", "Namespace", "", ns)
		guestbook.Resources = append(guestbook.Resources, argocd.Resource{Version: "v1", Kind: "Namespace", Name: ns, Status: "OutOfSync", RequiresPruning: true})
	}
	w.refs["guestbook-ui"] = w.tracked("guestbook", "apps", "Deployment", "guestbook", "guestbook-ui")
	guestbook.Resources = append(guestbook.Resources, argocd.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced"})
	argo.AddApp(guestbook)

	platform := argocd.Application{Name: "platform", Project: "infra", SyncStatus: "Synced",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "platform"}}
	w.refs["platform-settings"] = w.tracked("platform", "", "ConfigMap", "platform", "settings")
	platform.Resources = append(platform.Resources, argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "settings", Status: "Synced"})
	argo.AddApp(platform)
	w.addRemoteShop()
	return w
}

// addRemoteShop adds the cluster prod-eu and Application apps/shop deploying to it.
func (w *world) addRemoteShop() {
	w.remote = clustertest.NewCluster("prod-eu", remoteServer)
	w.remote.Clock = w.clock
	w.argo.Remote[remoteServer], w.argo.Remote["prod-eu"] = w.remote, w.remote
	shop := argocd.Application{Namespace: "apps", Name: "shop", Project: "shop", SyncStatus: "OutOfSync",
		Destination: argocd.Destination{Server: remoteServer, Namespace: "shop"}}
	for _, r := range []argocd.Resource{
		{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "legacy", Status: "OutOfSync", RequiresPruning: true},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "api", Status: "Synced"},
	} {
		id := argocd.TrackingID{Instance: "apps_shop", Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
		w.refs["shop-"+r.Name] = w.remote.Add(r.Group, r.Kind, r.Namespace, r.Name,
			map[string]string{argocd.DefaultInstanceLabelKey: "apps_shop"}, map[string]string{argocd.AnnotationTrackingID: id.String()})
		shop.Resources = append(shop.Resources, r)
	}
	w.argo.AddApp(shop)
}

// addMoveTarget adds Application "teams", which now declares Namespace/team-b (the commit moved its
// manifest from guestbook): the row is OutOfSync, shared, while guestbook still tracks the object.
func (w *world) addMoveTarget() {
	row := argocd.Resource{Version: "v1", Kind: "Namespace", Name: "team-b", Status: "OutOfSync"}
	w.argo.Shared = map[string]bool{row.Key(): true}
	w.argo.AddApp(argocd.Application{Name: "teams", Project: "default", SyncStatus: "OutOfSync",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "teams"}, Resources: []argocd.Resource{row}})
}

// addReplacingApp adds Application "ops", which declares platform's ConfigMap platform/settings too
// and syncs with Replace=true: a forced sync of ops deletes and recreates it (argo-cd #29739).
func (w *world) addReplacingApp() {
	row := argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "platform", Name: "settings", Status: "OutOfSync"}
	w.argo.AddApp(argocd.Application{Name: "ops", Project: "default", SyncStatus: "OutOfSync", SyncOptions: []string{"Replace=true"},
		Destination: argocd.Destination{Name: argocd.InClusterName, Namespace: "ops"}, Resources: []argocd.Resource{row}})
}

// addGuardedInTeamA adds ConfigMap team-a/ledger to guestbook, requiring pruning like its
// Namespace, with Prune=false: a guard of its own that does nothing once team-a goes.
func (w *world) addGuardedInTeamA() {
	w.refs["ledger"] = w.tracked("guestbook", "", "ConfigMap", "team-a", "ledger")
	w.home.Update(w.refs["ledger"], func(o *cluster.Object) { o.Annotations[argocd.AnnotationSyncOptions] = "Prune=false" })
	app, err := w.argo.GetApplication(context.Background(), w.argo.Ns, "guestbook")
	if err != nil {
		w.t.Fatal(err)
	}
	app.Resources = append(app.Resources, argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "ledger", Status: "OutOfSync", RequiresPruning: true})
	w.argo.AddApp(app)
}

// compareCreated plays the controller's first comparison of an app rename creates: it lists the
// renamed app's rows, Synced once the live objects carry its tracking.
func (w *world) compareCreated(from string) {
	old, err := w.argo.GetApplication(context.Background(), w.argo.Ns, from)
	if err != nil {
		w.t.Fatal(err)
	}
	w.argo.Shared = map[string]bool{}
	for _, r := range old.Resources {
		w.argo.Shared[r.Key()] = true
	}
	w.argo.OnCreate = func(app *argocd.Application) {
		app.Resources = append([]argocd.Resource(nil), old.Resources...)
		app.Refresh = "normal"
	}
}

// stepClock makes the commands' clock advance by step at every reading, so that a wait with a
// --timeout ends; the readings are as many on every run, so the output stays the same. The
// elapsed times printed count readings: code that reads the clock more often changes them (by a
// tenth of a second per two readings at 50ms), and -update shows by how much. Two waits at once
// share the readings in no fixed order: print their elapsed times in no golden file.
func (w *world) stepClock(step time.Duration) {
	w.now = func() time.Time { return w.clock.Advance(step) }
}

// tracked adds a live object carrying app's tracking (annotation+label), and other metadata that
// must survive every command.
func (w *world) tracked(app, group, kind, namespace, name string) cluster.Ref {
	id := argocd.TrackingID{Instance: app, Group: group, Kind: kind, Namespace: namespace, Name: name}
	if namespace == "" {
		// Argo CD writes the app's destination namespace into a cluster-scoped object's id.
		id.Namespace = app
	}
	return w.home.Add(group, kind, namespace, name,
		map[string]string{argocd.DefaultInstanceLabelKey: app, "team": "storage"},
		map[string]string{argocd.AnnotationTrackingID: id.String(), "note": "keep me"})
}

// fixedLengthDir is a new directory whose path has the same length on every run: tables that
// print journal paths align the same way, whatever t.TempDir's random part.
func fixedLengthDir(t *testing.T) string {
	const length = 128
	dir := t.TempDir()
	if len(dir) > length-2 {
		t.Fatalf("temporary directory %s is longer than %d: set TMPDIR to a shorter one", dir, length-2)
	}
	dir = filepath.Join(dir, strings.Repeat("w", length-len(dir)-1))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (w *world) journalDir() string { return filepath.Join(w.dir, "journal") }

// run runs unprune with args in process against the world.
func (w *world) run(args ...string) result {
	w.t.Helper()
	return runIn(w.t, w, NameUnprune, "", args...)
}

// stopAfterPatches stops the fake controller once n object patches have been served: it never
// compares an app again.
func (w *world) stopAfterPatches(n int) {
	served := 0
	w.home.BeforePatch = func(int, cluster.Ref, *cluster.Object) (bool, error) {
		if served++; served == n {
			w.argo.Stop()
		}
		return false, nil
	}
}

// takeOver plays an automated sync of app to that applied the manifest of a Namespace from's git no
// longer holds: the object carries to's tracking (its other annotations, a prepare's marks among
// them, stay), from no longer lists it, and to lists it Synced.
func (w *world) takeOver(from, to, ns string) {
	w.home.Update(w.refs[ns], func(o *cluster.Object) {
		o.Labels[argocd.DefaultInstanceLabelKey] = to
		o.Annotations[argocd.AnnotationTrackingID] = argocd.TrackingID{Instance: to, Kind: "Namespace", Namespace: to, Name: ns}.String()
	})
	for _, name := range []string{from, to} {
		app, err := w.argo.GetApplication(context.Background(), w.argo.Ns, name)
		if err != nil {
			w.t.Fatal(err)
		}
		var rows []argocd.Resource
		for _, r := range app.Resources {
			switch {
			case r.Kind == "Namespace" && r.Name == ns && name == from:
				continue
			case r.Kind == "Namespace" && r.Name == ns:
				r.Status = "Synced"
			}
			rows = append(rows, r)
		}
		app.Resources = rows
		w.argo.AddApp(app)
	}
}

// manifestSets records, as Argo CD's client-side apply does in kubectl's last-applied copy, that the
// manifest of the object named name (of w.refs) sets annotation key to value, and sets it live.
func (w *world) manifestSets(name, key, value string) {
	w.home.Update(w.refs[name], func(o *cluster.Object) {
		o.Annotations[key] = value
		o.Annotations[argocd.AnnotationLastAppliedConfiguration] = fmt.Sprintf(`{"metadata":{"annotations":{%q:%q},"name":%q}}`, key, value, name)
	})
}

// automate gives app automated sync with prune.
func (w *world) automate(name string) {
	app, err := w.argo.GetApplication(context.Background(), w.argo.Ns, name)
	if err != nil {
		w.t.Fatal(err)
	}
	app.Automated, app.AutoPrune = true, true
	w.argo.AddApp(app)
}

// replaces gives app syncOptions [Replace=true]: each sync writes its manifests over its objects.
func (w *world) replaces(name string) {
	app, err := w.argo.GetApplication(context.Background(), w.argo.Ns, name)
	if err != nil {
		w.t.Fatal(err)
	}
	app.SyncOptions = append(app.SyncOptions, argocd.OptionReplace)
	w.argo.AddApp(app)
}
