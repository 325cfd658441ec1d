package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/parallel"
	"github.com/unprune/unprune/internal/progress"
)

// FieldManager is how unprune's writes show in managedFields.
const FieldManager = "unprune"

// Objects is the cluster.Objects of one cluster reached with Kubernetes clients.
type Objects struct {
	*Clients
	// FieldManager names unprune's writes; empty means "unprune".
	FieldManager string

	// mappings remembers the kinds resolved: a scan resolves every one of 100,000 rows, and the
	// discovery mapper walks every served group for each question.
	mappings mappingCache
	// search is the last listing of the whole cluster (EachObject).
	search search
}

// mappingCache is a concurrency-safe memo of found REST mappings, by group, kind and version.
type mappingCache struct {
	mu sync.Mutex
	m  map[string]*meta.RESTMapping
}

func (c *mappingCache) get(key string) *meta.RESTMapping {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

func (c *mappingCache) put(key string, m *meta.RESTMapping) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*meta.RESTMapping{}
	}
	c.m[key] = m
}

var (
	_ cluster.Objects      = (*Objects)(nil)
	_ cluster.EachReader   = (*Objects)(nil)
	_ cluster.Prober       = (*Objects)(nil)
	_ cluster.Counter      = (*Objects)(nil)
	_ cluster.PolicyReader = (*Objects)(nil)
)

// NewObjects returns the objects of the clients' cluster.
func NewObjects(c *Clients, fieldManager string) *Objects {
	if fieldManager == "" {
		fieldManager = FieldManager
	}
	return &Objects{Clients: c, FieldManager: fieldManager}
}

// Info names the cluster.
func (o *Objects) Info() cluster.Info { return o.Clients.Info }

// Resolve maps group/kind to the served resource, as kubectl does: a kind, or a resource name or
// short name (ns, crd) when no kind matches.
func (o *Objects) Resolve(_ context.Context, group, kind, version, namespace, name string) (cluster.Ref, error) {
	m, err := o.mapping(group, kind, version)
	if err != nil {
		return cluster.Ref{}, err
	}
	ref := cluster.Ref{
		Group: m.GroupVersionKind.Group, Version: m.GroupVersionKind.Version, Resource: m.Resource.Resource,
		Kind: m.GroupVersionKind.Kind, Name: name, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace,
	}
	if ref.Namespaced {
		ref.Namespace = namespace
	}
	return ref, nil
}

// mapping resolves group/kind (at version, if given) once per run; failures are asked again.
func (o *Objects) mapping(group, kind, version string) (*meta.RESTMapping, error) {
	key := group + "/" + kind + "/" + version
	if m := o.mappings.get(key); m != nil {
		return m, nil
	}
	m, err := o.discoverMapping(group, kind, version)
	if err == nil {
		o.mappings.put(key, m)
	}
	return m, err
}

func (o *Objects) discoverMapping(group, kind, version string) (*meta.RESTMapping, error) {
	gk := schema.GroupKind{Group: group, Kind: kind}
	var versions []string
	if version != "" {
		versions = []string{version}
	}
	m, err := o.Mapper.RESTMapping(gk, versions...)
	if err == nil {
		return m, nil
	}
	if meta.IsNoMatchError(err) {
		// A kind unknown to cached discovery may be a CRD installed since: look again once.
		if r, ok := o.Mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			if m, rerr := o.Mapper.RESTMapping(gk, versions...); rerr == nil {
				return m, nil
			}
		}
		// Accept what kubectl accepts too: namespaces, ns, crd …
		if gvk, kerr := o.Mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: strings.ToLower(kind)}); kerr == nil {
			if m, merr := o.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); merr == nil {
				return m, nil
			}
		}
		return nil, fmt.Errorf("cluster %s serves no kind %s", o.Clients.Info.Name, gk)
	}
	return nil, cluster.Explain(err, "discover the kind "+gk.String(), o.Clients.Info)
}

func (o *Objects) gvr(r cluster.Ref) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

func (o *Objects) meta(r cluster.Ref) interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*metav1.PartialObjectMetadata, error)
	List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*metav1.PartialObjectMetadata, error)
} {
	if r.Namespace != "" {
		return o.Metadata.Resource(o.gvr(r)).Namespace(r.Namespace)
	}
	return o.Metadata.Resource(o.gvr(r))
}

// Get reads one object in full.
func (o *Objects) Get(ctx context.Context, r cluster.Ref) (*cluster.Object, error) {
	ri := o.Dynamic.Resource(o.gvr(r))
	var get func() (map[string]any, error)
	if r.Namespace != "" {
		get = func() (map[string]any, error) {
			u, err := ri.Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return u.Object, nil
		}
	} else {
		get = func() (map[string]any, error) {
			u, err := ri.Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return u.Object, nil
		}
	}
	content, err := get()
	if err != nil {
		return nil, cluster.Explain(err, "get "+r.String(), o.Clients.Info)
	}
	obj := FromContent(r, content)
	return obj, nil
}

// Patch sends a JSON merge patch; the response is read as metadata only.
func (o *Objects) Patch(ctx context.Context, r cluster.Ref, body []byte, dryRun bool) (*cluster.Object, error) {
	opts := metav1.PatchOptions{FieldManager: o.FieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := o.meta(r).Patch(ctx, r.Name, types.MergePatchType, body, opts)
	if err != nil {
		return nil, err
	}
	return fromMeta(r, out), nil
}

// Read reads many objects' metadata. Objects of one kind in one namespace are read with one
// paginated LIST when there are several of them; a kind spread over many namespaces with one
// cluster-wide LIST. Where a LIST is forbidden, each object is read with GET, and an object that
// cannot be read gets its own error.
func (o *Objects) Read(ctx context.Context, refs []cluster.Ref) []cluster.ReadResult {
	results := make([]cluster.ReadResult, len(refs))
	o.ReadEach(ctx, refs, func(i int, res cluster.ReadResult) { results[i] = res })
	return results
}

// ReadEach reads as Read does, and hands over each result as soon as its LIST or GET is done, from
// the workers' goroutines: a scan of 100,000 objects describes and drops them as they come.
func (o *Objects) ReadEach(ctx context.Context, refs []cluster.Ref, fn func(i int, res cluster.ReadResult)) {
	step := progress.Start(ctx, "reading live objects", len(refs))
	defer step.Finish()
	all := make([]int, len(refs))
	for i := range all {
		all[i] = i
	}
	// First pass: cluster-wide LISTs where they pay off. What they could not read is planned again
	// without them (per-namespace LISTs), and what those could not read is read one by one.
	failed := o.readLists(ctx, refs, planReads(refs, all, true), fn, step)
	retry := planReads(refs, failed, false)
	gets := append(retry.gets, o.readLists(ctx, refs, readPlan{lists: retry.lists}, fn, step)...)
	parallel.ForEach(len(gets), o.options.Workers, func(i int) {
		idx := gets[i]
		r := refs[idx]
		pom, err := o.meta(r).Get(ctx, r.Name, metav1.GetOptions{})
		defer step.Add(1)
		if err != nil {
			fn(idx, cluster.ReadResult{Err: cluster.Explain(err, "get "+r.String(), o.Clients.Info)})
			return
		}
		fn(idx, cluster.ReadResult{Object: fromMeta(r, pom)})
	})
}

// readLists runs the plan's LISTs, hands over the results of those that succeed, and returns the
// indexes still to read: those of failed LISTs, and the plan's single reads.
func (o *Objects) readLists(ctx context.Context, refs []cluster.Ref, plan readPlan, fn func(int, cluster.ReadResult), step *progress.Step) []int {
	var mu sync.Mutex
	rest := append([]int(nil), plan.gets...)
	parallel.ForEach(len(plan.lists), o.options.Workers, func(i int) {
		l := plan.lists[i]
		found, err := o.listMatching(ctx, refs, l)
		if err != nil {
			mu.Lock()
			rest = append(rest, l.indexes...)
			mu.Unlock()
			return
		}
		for _, idx := range l.indexes {
			r := refs[idx]
			first := l.want[objectKey{r.Namespace, r.Name}]
			switch obj := found[first]; {
			case obj == nil:
				fn(idx, cluster.ReadResult{Err: notFound(r)})
			case idx == first:
				fn(idx, cluster.ReadResult{Object: obj})
			default: // the same object asked for twice (two apps list it)
				fn(idx, cluster.ReadResult{Object: withRef(r, obj)})
			}
		}
		step.Add(len(l.indexes))
	})
	return rest
}

// objectKey is an object's namespace and name, as LIST items and refs both carry them.
type objectKey struct{ namespace, name string }

// listMatching lists l's kind in its namespace ("" for all) a page at a time and keeps only the
// objects l wants, each built once with the ref it was first asked for, by that ref's index: memory
// holds what was asked for, not the whole kind.
func (o *Objects) listMatching(ctx context.Context, refs []cluster.Ref, l listRead) (map[int]*cluster.Object, error) {
	var ri interface {
		List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	} = o.Metadata.Resource(l.gvr)
	if l.namespace != "" {
		ri = o.Metadata.Resource(l.gvr).Namespace(l.namespace)
	}
	found := make(map[int]*cluster.Object, len(l.want))
	err := o.eachPage(ctx, ri.List, func(m *metav1.PartialObjectMetadata) error {
		if first, ok := l.want[objectKey{m.Namespace, m.Name}]; ok {
			found[first] = fromMeta(refs[first], m)
			if len(found) == len(l.want) {
				return errFoundAll
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFoundAll) {
		return nil, err
	}
	return found, nil
}

// errFoundAll stops a LIST whose objects were all found.
var errFoundAll = errors.New("every object asked for was found")

// eachPage lists with client-go's pager, PageSize objects a page, calling fn for each object; an
// error fn returns stops the list and is returned. Memory holds a page, never the whole kind.
//
// A LIST of 250,000 objects on a busy cluster can outlive etcd's compaction window: the next
// continue token is then answered 410 Expired. The pager's FullListIfExpired recovers only in its
// List, which holds every page at once; so the page function recovers instead, as the API server
// offers it: the 410 carries a continue token that resumes after the last object returned
// (apiserver pkg/storage/etcd3/errors.go, "inconsistent continue"). Objects created or deleted
// since the first page may show or not — as they may for any read of a changing cluster — and no
// object is returned twice.
func (o *Objects) eachPage(ctx context.Context, list func(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error),
	fn func(*metav1.PartialObjectMetadata) error) error {
	p := pager.New(resumingPages(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return list(ctx, opts) }))
	p.PageSize = o.options.PageSize
	return p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		return fn(obj.(*metav1.PartialObjectMetadata))
	})
}

// resumingPages is page with a page whose continue token expired asked again with the token the
// 410 answer carries, when it carries one.
func resumingPages(page pager.ListPageFunc) pager.ListPageFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		obj, err := page(ctx, opts)
		token, ok := resumeToken(opts.Continue, err)
		if !ok {
			return obj, err
		}
		opts.Continue = token
		return page(ctx, opts)
	}
}

// resumeToken is the continue token a 410 answer to a LIST page (asked with continue token asked)
// carries to resume the list after its last object, when it carries one.
func resumeToken(asked string, err error) (string, bool) {
	var status apierrors.APIStatus
	if asked == "" || !apierrors.IsResourceExpired(err) || !errors.As(err, &status) || status.Status().Continue == "" {
		return "", false
	}
	return status.Status().Continue, true
}

// ListAll lists every object of like's resource in like's namespace, page by page, metadata only
// and without managedFields.
func (o *Objects) ListAll(ctx context.Context, like cluster.Ref, fn func(*cluster.Object)) error {
	err := o.eachPage(ctx, o.meta(like).List, func(m *metav1.PartialObjectMetadata) error {
		m.ManagedFields = nil
		r := like
		r.Namespace, r.Name = m.Namespace, m.Name
		fn(fromMeta(r, m))
		return nil
	})
	if err != nil {
		return cluster.Explain(err, "list "+like.Resource+" in "+scope(like.Namespace), o.Clients.Info)
	}
	return nil
}

var _ cluster.Lister = (*Objects)(nil)

// readPlan groups refs into LISTs and single GETs.
type readPlan struct {
	lists []listRead
	gets  []int
}

type listRead struct {
	gvr       schema.GroupVersionResource
	namespace string
	indexes   []int
	// want maps each wanted object to the first of indexes that asks for it.
	want map[objectKey]int
}

// add puts the objects of refs at idx on the list's wants.
func (l *listRead) add(refs []cluster.Ref, idx []int) {
	for _, i := range idx {
		l.indexes = append(l.indexes, i)
		key := objectKey{refs[i].Namespace, refs[i].Name}
		if _, ok := l.want[key]; !ok {
			l.want[key] = i
		}
	}
}

// Thresholds of planReads: a LIST pays off from a few objects of a kind in a namespace. A kind
// spread over many namespaces is read with one cluster-wide LIST instead, but only past as many
// namespaces as the workers cover in a few rounds: a cluster-wide LIST comes one page after the
// other, while the namespaces' LISTs run side by side. 100,000 ConfigMaps in 40 namespaces took
// 3.6 s as 200 pages of one LIST, and under 2 s as 40 concurrent LISTs (test/bench, scan).
const (
	listFrom             = 3
	clusterWideNamespace = 64
	clusterWideObjects   = 50
)

func planReads(refs []cluster.Ref, subset []int, allowWide bool) readPlan {
	type nsKey struct {
		gvr       schema.GroupVersionResource
		namespace string
	}
	byNamespace := map[nsKey][]int{}
	var order []nsKey
	perKind := map[schema.GroupVersionResource]map[string]bool{}
	perKindCount := map[schema.GroupVersionResource]int{}
	for _, i := range subset {
		r := refs[i]
		k := nsKey{schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}, r.Namespace}
		if _, ok := byNamespace[k]; !ok {
			order = append(order, k)
		}
		byNamespace[k] = append(byNamespace[k], i)
		if perKind[k.gvr] == nil {
			perKind[k.gvr] = map[string]bool{}
		}
		perKind[k.gvr][r.Namespace] = true
		perKindCount[k.gvr]++
	}
	var p readPlan
	wide := map[schema.GroupVersionResource]*listRead{}
	for _, k := range order {
		idx := byNamespace[k]
		namespaces := perKind[k.gvr]
		if allowWide && k.namespace != "" && len(namespaces) > clusterWideNamespace && perKindCount[k.gvr] >= clusterWideObjects {
			l := wide[k.gvr]
			if l == nil {
				l = &listRead{gvr: k.gvr, want: map[objectKey]int{}}
				wide[k.gvr] = l
			}
			l.add(refs, idx)
			continue
		}
		if len(idx) < listFrom {
			p.gets = append(p.gets, idx...)
			continue
		}
		l := listRead{gvr: k.gvr, namespace: k.namespace, want: make(map[objectKey]int, len(idx))}
		l.add(refs, idx)
		p.lists = append(p.lists, l)
	}
	for _, k := range order {
		if l := wide[k.gvr]; l != nil {
			p.lists = append(p.lists, *l)
			delete(wide, k.gvr)
		}
	}
	return p
}
