package readcache

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// TestCompactCachedObjects: a live object is cached without its managedFields and kubectl's
// last-applied copy, which no judgement reads; it is answered with its labels, other annotations,
// owners and state as read, under the ref asked for, and the object read is not changed.
func TestCompactCachedObjects(t *testing.T) {
	read := cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "web", Name: "x", Namespaced: true}
	o := &cluster.Object{Ref: read, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:        map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations:   map[string]string{argocd.AnnotationLastAppliedConfiguration: strings.Repeat("x", 4096), "argocd.argoproj.io/sync-options": "Prune=false"},
		ManagedFields: []cluster.ManagedFieldsEntry{{Manager: "argocd-controller", FieldsV1: []byte(strings.Repeat("f", 2048))}}}
	keys := newMetaKeys()
	m := compactRead(keys, cluster.ReadResult{Object: o})
	asked := read
	asked.Version = "v1beta1"
	got := m.object(keys, asked)
	want := &cluster.Object{Ref: asked, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:      map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations: map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached as %+v, want %+v", got, want)
	}
	got.Labels["team"] = "b"
	if again := m.object(keys, asked); again.Labels["team"] != "a" {
		t.Fatalf("a caller's change reached the cache: %v", again.Labels)
	}
	if o.ManagedFields == nil || len(o.Annotations) != 2 {
		t.Fatalf("the object read was changed: %+v", o)
	}
	for _, o := range []*cluster.Object{
		{Ref: read, UID: "not-a-uuid", ResourceVersion: "1"},
		// Only the annotation is kubectl's copy: a label of that key is kept.
		{Ref: read, UID: "u-3", Labels: map[string]string{argocd.AnnotationLastAppliedConfiguration: "label"}},
		{Ref: read, UID: "0B6E2C1A-3F4D-4E5A-9B8C-7D6E5F4A3B2C", ResourceVersion: "12345678901234567890"},
		{Ref: read, UID: "0b6e2c1a-3f4d-4e5a-9b8c-7d6e5f4a3b2c", Labels: map[string]string{"empty": ""},
			Annotations: map[string]string{"long": strings.Repeat("v", 300), "é/ключ": "ü"}, Content: map[string]any{"kind": "ConfigMap"}},
	} {
		if got := compactRead(keys, cluster.ReadResult{Object: o}).object(keys, read); !reflect.DeepEqual(got, o) {
			t.Errorf("cached %+v as %+v", o, got)
		}
	}
	if absent := compactRead(keys, cluster.ReadResult{Err: errors.New("not found")}).object(keys, asked); absent != nil {
		t.Fatalf("an object that is not there is answered as %+v", absent)
	}
	if bare := compactRead(keys, cluster.ReadResult{Object: &cluster.Object{Ref: read, UID: "u-2"}}).object(keys, read); bare.Labels != nil || bare.Annotations != nil {
		t.Fatalf("an object with no labels nor annotations is answered with %v and %v", bare.Labels, bare.Annotations)
	}
	before, after := readBytes("k", answer[cluster.ReadResult]{value: cluster.ReadResult{Object: o}}), metaBytes("k", answer[liveMeta]{value: m})
	if after*5 > before {
		t.Errorf("estimated %d bytes before, %d after", before, after)
	}
}

func (t *internTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.all)
}

func (t *internTable) has(s string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.index[s]
	return ok
}

// TestCompactKeysPastTheTable: once the interned keys are as many as the table holds, a new key is
// kept with its object and still answered.
func TestCompactKeysPastTheTable(t *testing.T) {
	read := cluster.Ref{Version: "v1", Kind: "ConfigMap", Name: "x"}
	keys := newMetaKeys()
	for i := 0; keys.len() < keys.max; i++ {
		keys.append(nil, fmt.Sprintf("filler/%d", i))
	}
	o := &cluster.Object{Ref: read, UID: "u", Labels: map[string]string{"past/the-table": "yes", "filler/0": "interned"}}
	if got := compactRead(keys, cluster.ReadResult{Object: o}).object(keys, read); !reflect.DeepEqual(got, o) {
		t.Fatalf("cached %+v as %+v", o, got)
	}
	if keys.has("past/the-table") || keys.len() != keys.max {
		t.Fatalf("the table grew past its bound: %d keys", keys.len())
	}
}
