//go:build lab

package apiserver

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/lab/labtest"
)

// TestReadInBulk reads, in one call, objects by every path Read takes — a cluster-wide LIST
// (ConfigMaps spread over 10 namespaces), a namespace's LIST (Secrets), a GET (a Namespace) — with
// an object asked for twice and one missing on each path: every result carries the ref it was asked
// for and the object's own metadata, or NotFound.
func TestReadInBulk(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	ctx := labtest.Context(t)
	prefix := labtest.UniqueName("read")
	type want struct {
		group, kind, namespace, name string
		exists                       bool
	}
	var wants []want
	create := func(kind, ns, name string) {
		obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns,
			"annotations": map[string]any{"marker": ns + "/" + name}}}
		if err := env.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want{"", kind, ns, name, true})
	}
	for n := range 10 {
		ns := fmt.Sprintf("%s-%d", prefix, n)
		env.CreateNamespace(t, ns)
		for k := range 6 {
			create("ConfigMap", ns, fmt.Sprintf("cm-%d", k))
		}
	}
	for k := range 3 {
		create("Secret", prefix+"-0", fmt.Sprintf("secret-%d", k))
	}
	wants = append(wants,
		wants[0],  // a ConfigMap asked for twice
		wants[60], // a Secret asked for twice
		want{"", "ConfigMap", prefix + "-3", "missing", false},
		want{"", "Secret", prefix + "-0", "missing", false},
		want{"", "Namespace", "", prefix + "-1", true},
		want{"", "Namespace", "", prefix + "-missing", false},
	)

	c, err := kube.NewClients(env.REST, cluster.Info{Name: "in-cluster"}, nil, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objects := kube.NewObjects(c, "")
	refs := make([]cluster.Ref, len(wants))
	for i, w := range wants {
		if refs[i], err = objects.Resolve(ctx, w.group, w.kind, "v1", w.namespace, w.name); err != nil {
			t.Fatal(err)
		}
	}
	results := objects.Read(ctx, refs)
	for i, w := range wants {
		res := results[i]
		switch {
		case !w.exists && !apierrors.IsNotFound(res.Err):
			t.Errorf("%s: %+v, want NotFound", refs[i], res)
		case !w.exists:
		case res.Err != nil || res.Object == nil:
			t.Errorf("%s: %v", refs[i], res.Err)
		case res.Object.Ref != refs[i]:
			t.Errorf("%s: read as %+v", refs[i], res.Object.Ref)
		case w.kind != "Namespace" && res.Object.Annotations["marker"] != w.namespace+"/"+w.name:
			t.Errorf("%s: another object's metadata: %v", refs[i], res.Object.Annotations)
		case res.Object.UID == "" || res.Object.ResourceVersion == "":
			t.Errorf("%s: no uid or resourceVersion: %+v", refs[i], res.Object)
		}
	}
}
