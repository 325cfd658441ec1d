package kube

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper is a RESTMapper that counts the questions it is asked.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestResolveAsksDiscoveryOncePerKind: a scan resolves every row, and each question walks every
// served group; a kind is asked once, an unknown kind every time (it may be a CRD installed since).
func TestResolveAsksDiscoveryOncePerKind(t *testing.T) {
	gv := schema.GroupVersion{Version: "v1"}
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	m.Add(gv.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(gv.WithKind("Namespace"), meta.RESTScopeRoot)
	counting := &countingMapper{RESTMapper: m}
	o := &Objects{Clients: &Clients{Mapper: counting}}
	for i := range 3 {
		ref, err := o.Resolve(context.Background(), "", "ConfigMap", "v1", "ns", "cm")
		if err != nil || ref.Resource != "configmaps" || ref.Namespace != "ns" || !ref.Namespaced {
			t.Fatalf("resolve %d: %+v %v", i, ref, err)
		}
		ref, err = o.Resolve(context.Background(), "", "Namespace", "v1", "ignored", "team-a")
		if err != nil || ref.Resource != "namespaces" || ref.Namespace != "" || ref.Name != "team-a" {
			t.Fatalf("resolve %d: %+v %v", i, ref, err)
		}
	}
	if counting.asked != 2 {
		t.Errorf("discovery asked %d times for 2 kinds", counting.asked)
	}
	counting.asked = 0
	for range 2 {
		if _, err := o.Resolve(context.Background(), "example.com", "Widget", "v1", "ns", "w"); err == nil {
			t.Fatal("an unknown kind resolved")
		}
	}
	if counting.asked < 2 {
		t.Errorf("an unknown kind was asked %d times in 2 tries: a failure must not be remembered", counting.asked)
	}
}
