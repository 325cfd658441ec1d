package labtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/lab"
)

// InClusterServer is how applications name the cluster Argo CD runs in (the lab's own).
const InClusterServer = "https://kubernetes.default.svc"

// Remote is the lab's second cluster, which Argo CD installations deploy to once registered with
// them (Install.RegisterRemote). Its embedded Cluster holds its admin clients and kubeconfigs
// (Kubeconfig: system:masters, NoAccessKubeconfig: no RBAC rights).
type Remote struct {
	*Cluster
	Env *Env
	// Lab is what the lab recorded: ports, CA file, registrations.
	Lab *lab.Remote
}

type remoteSlot struct {
	once   sync.Once
	remote *Remote
	err    error
}

// Remote returns the remote cluster, starting it the first time a test of the binary asks; lab.Down
// at the end of Main stops it with the rest.
func (e *Env) Remote(t testing.TB) *Remote {
	t.Helper()
	e.remote.once.Do(func() {
		start := time.Now()
		e.mu.Lock() // lab.State is not safe for concurrent changes
		defer e.mu.Unlock()
		r, err := e.State.AddRemote(context.Background(), e.Root)
		if err != nil {
			e.remote.err = err
			return
		}
		c, err := newCluster(r.Server, r.Kubeconfig, r.NoAccessKubeconfig)
		if err != nil {
			e.remote.err = err
			return
		}
		t.Logf("labtest: remote cluster %s up in %.1fs", r.Server, time.Since(start).Seconds())
		e.remote.remote = &Remote{Cluster: c, Env: e, Lab: r}
	})
	if e.remote.err != nil {
		t.Fatalf("start the remote cluster: %v", e.remote.err)
	}
	return e.remote.remote
}

// RegisterRemote registers the remote with the installation under the cluster name, so that apps
// reach it by AppOptions.DestServer (r.Server) or AppOptions.DestName (name). Registering the same
// name again is a no-op; the registration outlives the test (installations are shared).
func (i *Install) RegisterRemote(t testing.TB, r *Remote, name string) {
	t.Helper()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clusters[name] == r {
		return
	}
	i.Env.mu.Lock()
	_, err := i.Env.State.RegisterRemote(Context(t), i.Namespace(), name)
	i.Env.mu.Unlock()
	if err != nil {
		t.Fatalf("register the remote cluster with the Argo CD in %s as %q: %v", i.Namespace(), name, err)
	}
	if i.clusters == nil {
		i.clusters = map[string]*Remote{}
	}
	i.clusters[name] = r
}

// destination resolves an app's destination to the lab cluster it names: the lab's own for an empty
// or in-cluster server, a registered remote by its server URL or cluster name.
func (i *Install) destination(t testing.TB, server, name string) *Cluster {
	t.Helper()
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case name != "":
		if r, ok := i.clusters[name]; ok {
			return r.Cluster
		}
		t.Fatalf("no cluster named %q is registered with the Argo CD in %s (Install.RegisterRemote)", name, i.Namespace())
	case server == "" || server == InClusterServer:
		return i.Env.Cluster
	default:
		for _, r := range i.clusters {
			if r.Server == server {
				return r.Cluster
			}
		}
		t.Fatalf("server %s is not registered with the Argo CD in %s (Install.RegisterRemote)", server, i.Namespace())
	}
	return nil
}
