package readcache

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unprune/unprune/internal/cluster"
)

// benchApp is an Application of BenchmarkWatch's shape: 50 rows requiring pruning of ConfigMaps in
// one of 40 namespaces, as the API server sends it.
func benchApp(i int) []byte {
	ns := fmt.Sprintf("watch-ns-%02d", i%40)
	rows := make([]any, 50)
	for r := range rows {
		rows[r] = map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": fmt.Sprintf("watch-%05d-%02d", i, r),
			"status": "OutOfSync", "requiresPruning": true}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": fmt.Sprintf("watch-%05d", i), "namespace": "argocd", "uid": fmt.Sprintf("u-%d", i), "resourceVersion": "1",
			"managedFields": []any{map[string]any{"manager": "bench", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{}}}}},
		"spec": map[string]any{"project": "default", "source": map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}},
		"status": map[string]any{"sync": map[string]any{"status": "OutOfSync"}, "resources": rows}})
	return raw
}

// trimmedOnly is what the informers kept before Apps.Compact: the object as decoded, less
// managedFields, last-applied, history and the sync result. The baseline of BenchmarkAppStore.
func trimmedOnly(obj any) (any, error) {
	u := obj.(*unstructured.Unstructured)
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "status", "history")
	unstructured.RemoveNestedField(u.Object, "status", "operationState", "syncResult")
	return u, nil
}

// retained is the heap that what keep returns holds after a collection.
func retained(keep func() any) (uint64, any) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := keep()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return after.HeapAlloc - before.HeapAlloc, kept
}

// BenchmarkAppStore measures the heap the informers' store holds per Application of the watch
// benchmark's shape, kept as decoded (the baseline) and as Apps.Compact keeps it.
func BenchmarkAppStore(b *testing.B) {
	const apps = 2000
	raws := make([][]byte, apps)
	for i := range raws {
		raws[i] = benchApp(i)
	}
	for _, c := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"decoded", trimmedOnly}, {"compact", new(Apps).Compact}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				n, kept := retained(func() any {
					store := make([]any, apps)
					for i, raw := range raws {
						u := &unstructured.Unstructured{}
						if err := u.UnmarshalJSON(raw); err != nil {
							b.Fatal(err)
						}
						store[i], _ = c.transform(u)
					}
					return store
				})
				runtime.KeepAlive(kept)
				b.ReportMetric(float64(n)/apps, "B/app")
			}
		})
	}
}

// BenchmarkLiveCacheEntry measures the heap a cached live object of the watch benchmark's shape
// (a ConfigMap's metadata with its tracking annotation) holds, kept as the cluster.Object it was
// read as (the baseline) and as the metadata cache keeps it, and what each entry's estimate says:
// the estimate is what --live-cache-bytes bounds.
func BenchmarkLiveCacheEntry(b *testing.B) {
	const entries = 20000
	object := func(i int) *cluster.Object {
		ns, name := fmt.Sprintf("watch-ns-%02d", i%40), fmt.Sprintf("watch-%05d-%02d", i/50, i%50)
		ref := cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: strings.Clone(ns), Name: name, Namespaced: true}
		return &cluster.Object{Ref: ref, UID: fmt.Sprintf("%08d-1111-2222-3333-444444444444", i), ResourceVersion: fmt.Sprint(100000 + i),
			// Each its own copy of the key, as decoding each object makes one.
			Annotations: map[string]string{strings.Clone("argocd.argoproj.io/tracking-id"): "watch-00000:/ConfigMap:" + ns + "/" + name}}
	}
	b.Run("object", func(b *testing.B) {
		for range b.N {
			var estimate int64
			n, kept := retained(func() any {
				a := newAnswers[cluster.ReadResult]("meta", entries, time.Minute, nil, newStaleAnswers())
				a.cache.limitBytes(1<<40, readBytes)
				for i := range entries {
					obj := object(i)
					a.record(obj.Ref.Key(), cluster.ReadResult{Object: obj}, nil)
				}
				estimate = a.cache.size()
				return a
			})
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(n)/entries, "B/entry")
			b.ReportMetric(float64(estimate)/entries, "estimated-B/entry")
		}
	})
	b.Run("compact", func(b *testing.B) {
		keys := newMetaKeys()
		for range b.N {
			var estimate int64
			n, kept := retained(func() any {
				a := newAnswers[liveMeta]("meta", entries, time.Minute, nil, newStaleAnswers())
				a.cache.limitBytes(1<<40, metaBytes)
				for i := range entries {
					obj := object(i)
					a.record(obj.Ref.Key(), compactRead(keys, cluster.ReadResult{Object: obj}), nil)
				}
				estimate = a.cache.size()
				return a
			})
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(n)/entries, "B/entry")
			b.ReportMetric(float64(estimate)/entries, "estimated-B/entry")
		}
	})
}
