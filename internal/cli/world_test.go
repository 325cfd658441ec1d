package cli

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cli/session/sessiontest"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/cluster/clustertest"
)

var goldenVersion = argocd.Version{Major: 3, Minor: 6, Patch: 1}

// world is the seed's incident in the in-memory Argo CD: Application "guestbook" was synced with
// kube-system and two team namespaces, the commit was reverted, and the three now require pruning;
// its Deployment is in git and Synced. Application "platform" is Synced and prunes nothing.
type world struct {
	t    *testing.T
	dir  string
	argo *clustertest.ArgoCD
	home *clustertest.Cluster
	env  map[string]string
	rand io.Reader
	refs map[string]cluster.Ref
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := argocd.NewSettings(map[string]string{argocd.SettingTrackingMethod: "annotation+label"}, &goldenVersion)
	home := clustertest.NewCluster(argocd.InClusterName, argocd.InClusterServer)
	argo := clustertest.NewArgoCD("argocd", home, s)
	argo.Now = func() time.Time { return goldenTime }
	w := &world{t: t, dir: t.TempDir(), argo: argo, home: home, env: map[string]string{}, rand: sessiontest.Counter(), refs: map[string]cluster.Ref{}}

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
	return w
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

func (w *world) journalDir() string { return filepath.Join(w.dir, "journal") }

// run runs unprune with args in process against the world.
func (w *world) run(args ...string) result {
	w.t.Helper()
	return runIn(w.t, w, NameUnprune, "", args...)
}
