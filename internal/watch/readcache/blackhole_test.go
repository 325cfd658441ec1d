package readcache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
)

// TestBlackHoledReadServesTheLastGoodAnswer: through the real kube backend, a destination whose API
// server stops answering fails its read after the request timeout, and the cache serves the last
// good answer — the object with its guard — never "not there".
func TestBlackHoledReadServesTheLastGoodAnswer(t *testing.T) {
	var hole atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if hole.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"team","annotations":{"argocd.argoproj.io/sync-options":"Prune=false"}}}`))
	}))
	defer srv.Close()
	defer close(release)
	clients, err := kube.NewClients(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, cluster.Info{Name: "far", Server: srv.URL}, nil,
		kube.Options{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	c := newTestObjects(kube.NewObjects(clients, ""), Options{Size: 10, TTL: time.Second, Now: func() time.Time { return now }})
	ref := cluster.Ref{Version: "v1", Resource: "namespaces", Kind: "Namespace", Name: "team"}
	read := func() (cluster.ReadResult, Unread) {
		ctx := WithUnread(context.Background(), false)
		res := c.Read(ctx, []cluster.Ref{ref})[0]
		return res, UnreadOf(ctx)
	}
	res, _ := read()
	if res.Err != nil || res.Object == nil || res.Object.Annotations["argocd.argoproj.io/sync-options"] != "Prune=false" {
		t.Fatalf("first read: %+v", res)
	}
	hole.Store(true)
	now = now.Add(2 * time.Second)
	start := time.Now()
	res, u := read()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the read took %s: no timeout", took)
	}
	if res.Err != nil || res.Object == nil || res.Object.Annotations["argocd.argoproj.io/sync-options"] != "Prune=false" || u.Any() {
		t.Errorf("black-holed read: %+v (err %v), unread %+v; want the last good answer", res.Object, res.Err, u)
	}
}
