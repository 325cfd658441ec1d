package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/cluster"
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

// TestPlanReadsListsNamespacesSideBySide: a kind spread over a few dozen namespaces is read with a
// LIST per namespace (they run side by side), over more namespaces with one cluster-wide LIST; a
// namespace holding fewer than listFrom objects is read with GETs.
func TestPlanReadsListsNamespacesSideBySide(t *testing.T) {
	refs := func(namespaces, each int) []cluster.Ref {
		var out []cluster.Ref
		for n := range namespaces {
			for k := range each {
				out = append(out, cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
					Namespace: fmt.Sprintf("ns-%d", n), Name: fmt.Sprintf("cm-%d", k), Namespaced: true})
			}
		}
		return out
	}
	all := func(r []cluster.Ref) []int {
		idx := make([]int, len(r))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	for _, tt := range []struct {
		namespaces, each  int
		lists, wide, gets int
	}{
		{namespaces: 40, each: 2500, lists: 40},
		{namespaces: clusterWideNamespace, each: 5, lists: clusterWideNamespace},
		{namespaces: clusterWideNamespace + 1, each: 5, wide: 1},
		{namespaces: 2000, each: 50, wide: 1},
		{namespaces: 3, each: 2, gets: 6},
	} {
		r := refs(tt.namespaces, tt.each)
		p := planReads(r, all(r), true)
		lists, wide := 0, 0
		for _, l := range p.lists {
			if l.namespace == "" {
				wide++
			} else {
				lists++
			}
		}
		if lists != tt.lists || wide != tt.wide || len(p.gets) != tt.gets {
			t.Errorf("%d namespaces × %d: %d namespace LISTs, %d cluster-wide, %d GETs; want %d, %d, %d",
				tt.namespaces, tt.each, lists, wide, len(p.gets), tt.lists, tt.wide, tt.gets)
		}
	}
}

// expiringPages serves items a page at a time; the continue token of the page starting at expireAt
// is answered 410 Expired, as etcd's compaction makes the API server answer, with the token that
// resumes after the last object returned ("inconsistent continue").
type expiringPages struct {
	items    []string
	size     int
	expireAt int
	asked    []string
}

func (p *expiringPages) list(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	p.asked = append(p.asked, opts.Continue)
	start := 0
	switch {
	case opts.Continue == "":
	case opts.Continue == fmt.Sprintf("consistent-%d", p.expireAt):
		err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		err.ErrStatus.ListMeta.Continue = fmt.Sprintf("resume-%d", p.expireAt)
		return nil, err
	default:
		if _, err := fmt.Sscanf(strings.SplitN(opts.Continue, "-", 2)[1], "%d", &start); err != nil {
			return nil, err
		}
	}
	end := min(start+int(opts.Limit), len(p.items))
	list := &metav1.PartialObjectMetadataList{}
	for _, name := range p.items[start:end] {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}})
	}
	if end < len(p.items) {
		list.Continue = fmt.Sprintf("consistent-%d", end)
	}
	return list, nil
}

// TestEachPageResumesAnExpiredList: a LIST whose continue token expires mid-way (410 Expired) goes
// on from the token the 410 carries: every object once, none twice, never a page held beyond one.
func TestEachPageResumesAnExpiredList(t *testing.T) {
	var items []string
	for i := range 10 {
		items = append(items, fmt.Sprintf("cm-%02d", i))
	}
	p := &expiringPages{items: items, expireAt: 6}
	o := &Objects{Clients: &Clients{options: Options{PageSize: 3}}}
	var got []string
	if err := o.eachPage(context.Background(), p.list, func(m *metav1.PartialObjectMetadata) error {
		got = append(got, m.Name)
		return nil
	}); err != nil {
		t.Fatalf("a list whose continue token expired failed: %v", err)
	}
	if !slices.Equal(got, items) {
		t.Errorf("listed %v, want each of %v once", got, items)
	}
	if want := []string{"", "consistent-3", "consistent-6", "resume-6", "consistent-9"}; !slices.Equal(p.asked, want) {
		t.Errorf("pages asked %q, want %q", p.asked, want)
	}

	// A 410 without a token to resume with stays an error: nothing is made up.
	bare := func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		if opts.Continue != "" {
			return nil, apierrors.NewResourceExpired("too old")
		}
		return p.list(ctx, opts)
	}
	if err := o.eachPage(context.Background(), bare, func(*metav1.PartialObjectMetadata) error { return nil }); !apierrors.IsResourceExpired(err) {
		t.Errorf("a 410 with no token: %v, want it returned", err)
	}
}
