//go:build lab

package apiserver

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/journal/cmstore"
	"github.com/unprune/unprune/lab/labtest"
)

// TestJournalsInConfigMapsKeepEveryRecord: two writers of one journal kept in a ConfigMap (the UI
// backend completing a release while an undo marks it, say) each append their records, and the
// real API server's resourceVersion preconditions make the one that lost a race re-read and append
// again: after both, the journal holds every record, whichever compaction ran last.
func TestJournalsInConfigMapsKeepEveryRecord(t *testing.T) {
	env := labtest.Get(t)
	ns := labtest.UniqueName("journals")
	env.CreateNamespace(t, ns)
	store := journal.NewBackedStore(cmstore.New(env.Kube, ns), nil)
	j := journal.New("detach", "untrack", "v0.0.0-test")
	j.ArgoCD = &journal.ArgoCDRef{Namespace: argocdNamespace}
	c := j.AddCluster(cluster.Info{Name: "in-cluster", Server: "https://kubernetes.default.svc", Via: cluster.ViaArgoCDAPI})
	const n = 40
	for i := range n {
		j.Entries = append(j.Entries, journal.Entry{Cluster: c, Application: &journal.AppRef{Namespace: argocdNamespace, Name: "guestbook", Instance: "guestbook"},
			Object:  journal.ObjectRef{Version: "v1", Resource: "namespaces", Kind: "Namespace", Name: fmt.Sprintf("team-%d", i), UID: fmt.Sprintf("uid-%d", i)},
			Changes: []journal.Change{journal.Removal(journal.FieldAnnotation, "argocd.argoproj.io/tracking-id", fmt.Sprintf("guestbook:/Namespace:argocd/team-%d", i))}})
	}
	first, err := store.Create(j)
	if err != nil {
		t.Fatal(err)
	}
	second, err := store.Open(first.Path())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w, rec := range []*journal.Recorder{first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				if err := rec.MarkApplied(i, "11"); err != nil {
					t.Error(err)
				}
				if err := rec.Sync(); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Millisecond)
			}
			if err := rec.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, torn, err := store.Load(first.Path())
	if err != nil || torn {
		t.Fatalf("load: %v (torn %v)", err, torn)
	}
	if counts := got.Counts(); counts[journal.StateApplied] != n {
		t.Fatalf("%d of %d entries applied after two writers: %v", counts[journal.StateApplied], n, counts)
	}
}
