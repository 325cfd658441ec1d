// Package loop is the benchmarks' baseline for releasing objects: a plain client-go loop of JSON
// merge patches of ConfigMaps, without preconditions, reads or a journal, with workers at once and
// no client-side rate limit — what the API server can take. The benchmarks run it in their own
// process and, through command patchloop, as a process of its own, as unprune runs.
package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Workers is how many patches are in flight at once, as unprune's default --workers.
const Workers = 32

var gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Names are the benchmarks' ConfigMaps of a set: cm-00000 on.
func Names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cm-%05d", i)
	}
	return out
}

// TrackingPatch is the merge patch that puts on name (or, with remove, takes away) app's tracking
// metadata: its tracking-id annotation, or with mode "label" its instance label.
func TrackingPatch(app, namespace, name, mode string, remove bool) []byte {
	var value, id any = app, fmt.Sprintf("%s:/ConfigMap:%s/%s", app, namespace, name)
	if remove {
		value, id = nil, nil
	}
	meta := map[string]any{}
	if mode == "label" {
		meta["labels"] = map[string]any{"app.kubernetes.io/instance": value}
	} else {
		meta["annotations"] = map[string]any{"argocd.argoproj.io/tracking-id": id}
	}
	body, _ := json.Marshal(map[string]any{"metadata": meta})
	return body
}

// Patch sends body(name) to each ConfigMap of names in namespace, Workers at once, and returns the
// first error.
func Patch(ctx context.Context, dyn dynamic.Interface, namespace string, names []string, body func(name string) []byte) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan string)
	for range Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				if _, err := dyn.Resource(gvrConfigMap).Namespace(namespace).Patch(ctx, name, types.MergePatchType, body(name), metav1.PatchOptions{}); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	return first
}
