// Package clustertest is an in-memory stand-in for the cluster interfaces, for unit tests of the
// engine and the commands: objects with resourceVersion preconditions on JSON merge patches of
// metadata, dry runs, hooks to play other writers and failures, and a minimal Argo CD whose
// comparisons drop the rows of objects no longer tracked. It models what the engine relies on and no
// more; the real API server and Argo CD are in the lab.
package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Kind describes an API resource the fake serves.
type Kind struct {
	Group, Version, Resource, Kind string
	Namespaced                     bool
}

// DefaultKinds are Namespaces, ConfigMaps, Secrets and Deployments.
var DefaultKinds = []Kind{
	{Version: "v1", Resource: "namespaces", Kind: "Namespace"},
	{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
	{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true},
	{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
}

// ArgoCDKinds are Argo CD's own kinds, for a cluster Argo CD runs in whose Applications and
// AppProjects are read or patched as objects.
var ArgoCDKinds = []Kind{
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications", Kind: "Application", Namespaced: true},
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects", Kind: "AppProject", Namespaced: true},
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets", Kind: "ApplicationSet", Namespaced: true},
}

// Call is one request the fake served.
type Call struct {
	Verb   string // read, get, patch, apply
	Ref    cluster.Ref
	Body   string
	DryRun bool
	Result string // ok, conflict, or the error
}

// Cluster is an in-memory cluster.
type Cluster struct {
	Name, Server string

	mu      sync.Mutex
	kinds   []Kind
	objects map[string]*cluster.Object
	rv      int
	calls   []Call
	// applied holds what Apply stored (not dry runs), by group/resource/name, for GetClusterObject.
	applied map[string]map[string]any

	// BeforePatch runs before a patch is judged, under the cluster's lock: it may change the stored
	// object (another writer; its resourceVersion is then bumped) or fail the patch.
	BeforePatch func(n int, ref cluster.Ref, stored *cluster.Object) (changed bool, err error)
	// AfterPatch runs after a patch is stored, under the cluster's lock: another writer right after
	// it (Argo CD's self-heal writing its manifest back). A change bumps the resourceVersion.
	AfterPatch func(n int, ref cluster.Ref, stored *cluster.Object) (changed bool)
	// PatchDelay is how long each patch takes; PatchStarted, when set, is called as a patch arrives,
	// before that delay.
	PatchDelay   time.Duration
	PatchStarted func(ref cluster.Ref)
	// Clock, when set, is moved on by every write served (Clock).
	Clock *Clock
}

var (
	_ cluster.Objects      = (*Cluster)(nil)
	_ cluster.Applier      = (*Cluster)(nil)
	_ cluster.PolicyReader = (*Cluster)(nil)
)

// NewCluster returns an empty cluster serving kinds (DefaultKinds when none).
func NewCluster(name, server string, kinds ...Kind) *Cluster {
	if len(kinds) == 0 {
		kinds = DefaultKinds
	}
	return &Cluster{Name: name, Server: server, kinds: kinds, objects: map[string]*cluster.Object{}, rv: 100}
}

func key(r cluster.Ref) string { return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name }

// Serve makes the cluster serve kinds too.
func (c *Cluster) Serve(kinds ...Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kinds = append(c.kinds, kinds...)
}

// Add creates an object and returns its ref.
func (c *Cluster) Add(group, kind, namespace, name string, labels, annotations map[string]string) cluster.Ref {
	ref, err := c.Resolve(context.Background(), group, kind, "", namespace, name)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv++
	c.objects[key(ref)] = &cluster.Object{Ref: ref, UID: fmt.Sprintf("uid-%s-%d", name, c.rv), ResourceVersion: strconv.Itoa(c.rv),
		Labels: copyMap(labels), Annotations: copyMap(annotations)}
	return ref
}

// Object returns a copy of a stored object, or nil.
func (c *Cluster) Object(ref cluster.Ref) *cluster.Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o := c.objects[key(ref)]; o != nil {
		return clone(o)
	}
	return nil
}

// Delete removes an object.
func (c *Cluster) Delete(ref cluster.Ref) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.objects, key(ref))
}

// Update changes a stored object as another writer would, bumping its resourceVersion.
func (c *Cluster) Update(ref cluster.Ref, fn func(*cluster.Object)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.objects[key(ref)]
	fn(o)
	c.rv++
	o.ResourceVersion = strconv.Itoa(c.rv)
}

// Calls returns the requests served so far.
func (c *Cluster) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// Info names the cluster.
func (c *Cluster) Info() cluster.Info {
	return cluster.Info{Name: c.Name, Server: c.Server, Via: cluster.ViaKubeconfig}
}

// Resolve maps a kind (or lowercase resource name) to a served resource.
func (c *Cluster) Resolve(_ context.Context, group, kind, version, namespace, name string) (cluster.Ref, error) {
	for _, k := range c.kinds {
		if k.Group == group && (k.Kind == kind || k.Resource == kind) && (version == "" || version == k.Version) {
			ref := cluster.Ref{Group: k.Group, Version: k.Version, Resource: k.Resource, Kind: k.Kind, Name: name, Namespaced: k.Namespaced}
			if k.Namespaced {
				ref.Namespace = namespace
			}
			return ref, nil
		}
	}
	return cluster.Ref{}, fmt.Errorf("cluster %s serves no kind %s", c.Name, schema.GroupKind{Group: group, Kind: kind})
}

func notFound(r cluster.Ref) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: r.Group, Resource: r.Resource}, r.Name)
}

// Read reads many objects.
func (c *Cluster) Read(_ context.Context, refs []cluster.Ref) []cluster.ReadResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cluster.ReadResult, len(refs))
	for i, r := range refs {
		c.calls = append(c.calls, Call{Verb: "read", Ref: r, Result: "ok"})
		if o := c.objects[key(r)]; o != nil {
			out[i].Object = clone(o)
		} else {
			out[i].Err = notFound(r)
		}
	}
	return out
}

// Get reads one object.
func (c *Cluster) Get(_ context.Context, r cluster.Ref) (*cluster.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, Call{Verb: "get", Ref: r, Result: "ok"})
	if o := c.objects[key(r)]; o != nil {
		return clone(o), nil
	}
	return nil, notFound(r)
}

// Patch applies a JSON merge patch of metadata, refusing a stale resourceVersion with a conflict.
func (c *Cluster) Patch(ctx context.Context, r cluster.Ref, body []byte, dryRun bool) (*cluster.Object, error) {
	if c.PatchStarted != nil {
		c.PatchStarted(r)
	}
	if c.PatchDelay > 0 {
		select {
		case <-time.After(c.PatchDelay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	call := Call{Verb: "patch", Ref: r, Body: string(body), DryRun: dryRun}
	record := func(result string) { call.Result = result; c.calls = append(c.calls, call) }
	stored := c.objects[key(r)]
	if stored == nil {
		record("not found")
		return nil, notFound(r)
	}
	if c.BeforePatch != nil {
		changed, err := c.BeforePatch(len(c.calls), r, stored)
		if changed {
			c.rv++
			stored.ResourceVersion = strconv.Itoa(c.rv)
		}
		if err != nil {
			record(err.Error())
			return nil, err
		}
	}
	var patch struct {
		Metadata struct {
			ResourceVersion string                       `json:"resourceVersion"`
			Labels          map[string]*string           `json:"labels"`
			Annotations     map[string]*string           `json:"annotations"`
			ManagedFields   []cluster.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		record("bad patch")
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if rv := patch.Metadata.ResourceVersion; rv != "" && rv != stored.ResourceVersion {
		record("conflict")
		return nil, apierrors.NewConflict(schema.GroupResource{Group: r.Group, Resource: r.Resource}, r.Name, fmt.Errorf("the object has been modified"))
	}
	merged := clone(stored)
	merged.Labels = apply(merged.Labels, patch.Metadata.Labels)
	merged.Annotations = apply(merged.Annotations, patch.Metadata.Annotations)
	merged.ManagedFields = applyManagedFields(merged.ManagedFields, patch.Metadata.ManagedFields)
	if !dryRun {
		c.rv++
		merged.ResourceVersion = strconv.Itoa(c.rv)
		c.objects[key(r)] = clone(merged)
		c.Clock.wrote()
	}
	record("ok")
	if c.AfterPatch != nil && !dryRun {
		if stored := c.objects[key(r)]; c.AfterPatch(len(c.calls)-1, r, stored) {
			c.rv++
			stored.ResourceVersion = strconv.Itoa(c.rv)
		}
	}
	return merged, nil
}

// Apply records a server-side apply of a cluster-scoped object (guard policy --apply), as an
// "apply" call whose Body is the object, and keeps the object for GetClusterObject (unless a dry
// run); it enforces nothing.
func (c *Cluster) Apply(_ context.Context, group, version, resource string, obj map[string]any, dryRun bool) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name := ""
	if meta, ok := obj["metadata"].(map[string]any); ok {
		name, _ = meta["name"].(string)
	}
	ref := cluster.Ref{Group: group, Version: version, Resource: resource, Name: name}
	c.calls = append(c.calls, Call{Verb: "apply", Ref: ref, Body: string(body), DryRun: dryRun, Result: "ok"})
	if !dryRun {
		if c.applied == nil {
			c.applied = map[string]map[string]any{}
		}
		var stored map[string]any
		_ = json.Unmarshal(body, &stored)
		c.applied[group+"/"+resource+"/"+name] = stored
	}
	return nil
}

// GetClusterObject returns what Apply stored.
func (c *Cluster) GetClusterObject(_ context.Context, group, version, resource, name string) (map[string]any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.applied[group+"/"+resource+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
	}
	body, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	return out, nil
}

func apply(m map[string]string, patch map[string]*string) map[string]string {
	out := copyMap(m)
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// applyManagedFields models only what the API server does with a request's list: an empty list
// leaves the live one, [{}] clears it, anything else replaces it (the field manager's ownership
// bookkeeping is the lab's to prove).
func applyManagedFields(live, patch []cluster.ManagedFieldsEntry) []cluster.ManagedFieldsEntry {
	switch {
	case len(patch) == 0:
		return live
	case len(patch) == 1 && patch[0].Manager == "" && patch[0].Operation == "" && len(patch[0].FieldsV1) == 0:
		return nil
	}
	return append([]cluster.ManagedFieldsEntry(nil), patch...)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func clone(o *cluster.Object) *cluster.Object {
	c := *o
	c.Labels, c.Annotations = copyMap(o.Labels), copyMap(o.Annotations)
	c.Owners = append([]string(nil), o.Owners...)
	c.ManagedFields = append([]cluster.ManagedFieldsEntry(nil), o.ManagedFields...)
	return &c
}

// ArgoCD is an in-memory Argo CD: Applications, settings, and a controller that, when an app with a
// refresh pending is read, compares it — dropping rows of objects the settings no longer track.
type ArgoCD struct {
	Ns        string
	InCluster *Cluster
	// Remote clusters by server URL and by name.
	Remote map[string]*Cluster
	// Config is the tracking settings Settings returns and the controller compares with.
	Config argocd.Settings
	// Now is the controller's clock; Clock, when set, replaces it: comparisons start on it, and the
	// Application writes served move it on.
	Now   func() time.Time
	Clock *Clock

	// Shared are the rows (by argocd.Resource.Key) that several apps declare and whose only
	// difference from git is the tracking: an app compares them Synced when the live object is
	// tracked by it, OutOfSync otherwise (Argo CD's SharedResourceWarning case).
	Shared map[string]bool
	// OnCreate runs when an Application is created, under the fake's lock: the test plays the
	// controller's first comparison (its status rows).
	OnCreate func(app *argocd.Application)
	// AfterWrite runs after each Application write served (not a dry run), outside the fake's lock,
	// with the write as AppWrites lists it.
	AfterWrite func(write string)
	// DeleteHooks are the apps (by namespace/name) whose manifests hold pre-/post-delete hooks, with
	// the finalizers Argo CD's controller keeps on them for it: after each comparison it puts back
	// those the app lacks (controller/appcontroller.go, the finalizer block of
	// processAppRefreshQueueItem). An app marked argocd.argoproj.io/skip-reconcile is not compared.
	DeleteHooks map[string][]string

	mu       sync.Mutex
	apps     map[string]*argocd.Application
	refreshs int
	stopped  bool
	// raw are the Applications as stored objects (applications.go), made on first use.
	raw    map[string]map[string]any
	writes []string
	// manifests are what Manifests renders, by app.
	manifests map[string][]string
}

// Stop pauses the fake controller (a busy or stopped application controller): refreshes are
// recorded but no app is compared until Resume.
func (a *ArgoCD) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
}

// Resume lets the fake controller compare again.
func (a *ArgoCD) Resume() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = false
}

var _ cluster.ArgoCD = (*ArgoCD)(nil)

// NewArgoCD returns an installation in namespace ns whose in-cluster destination is c.
func NewArgoCD(ns string, c *Cluster, s argocd.Settings) *ArgoCD {
	return &ArgoCD{Ns: ns, InCluster: c, Config: s, Remote: map[string]*Cluster{}, apps: map[string]*argocd.Application{}, Now: time.Now}
}

// AddApp adds an Application; its rows should list the objects it tracks.
func (a *ArgoCD) AddApp(app argocd.Application) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if app.Namespace == "" {
		app.Namespace = a.Ns
	}
	a.apps[app.Ref()] = &app
}

// Refreshes counts refresh requests.
func (a *ArgoCD) Refreshes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refreshs
}

// Namespace is the installation's namespace.
func (a *ArgoCD) Namespace() string { return a.Ns }

// Cluster is the in-cluster destination's info.
func (a *ArgoCD) Cluster() cluster.Info { return a.InCluster.Info() }

// Settings returns the configured settings. Like the kubeconfig backend, the fake knows its
// resource filter: none is configured, so only Argo CD's built-in exclusions apply.
func (a *ArgoCD) Settings(_ context.Context, v *argocd.Version) (cluster.Settings, error) {
	s := a.Config
	if v != nil {
		s.Version = v
	}
	return cluster.Settings{Settings: s, FilterKnown: true}, nil
}

// ListApplications lists the apps in a namespace ("" for all), sorted, narrowed as the backends
// narrow them: by label selector and by project.
func (a *ArgoCD) ListApplications(ctx context.Context, sel cluster.Selector) ([]argocd.Application, error) {
	match := labels.Everything()
	if sel.LabelSelector != "" {
		var err error
		if match, err = labels.Parse(sel.LabelSelector); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	a.mu.Lock()
	var refs []string
	for ref, app := range a.apps {
		if (sel.Namespace == "" || app.Namespace == sel.Namespace) && match.Matches(labels.Set(app.Labels)) &&
			(len(sel.Projects) == 0 || slices.Contains(sel.Projects, app.Project)) {
			refs = append(refs, ref)
		}
	}
	a.mu.Unlock()
	sort.Strings(refs)
	var out []argocd.Application
	for _, ref := range refs {
		ns, name := splitRef(ref)
		app, err := a.GetApplication(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		out = append(out, app)
	}
	return out, nil
}

func splitRef(ref string) (string, string) {
	for i := range ref {
		if ref[i] == '/' {
			return ref[:i], ref[i+1:]
		}
	}
	return "", ref
}

// GetApplication reads an app, after the fake controller answered a pending refresh.
func (a *ArgoCD) GetApplication(_ context.Context, namespace, name string) (argocd.Application, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	app := a.apps[namespace+"/"+name]
	if app == nil {
		return argocd.Application{}, apierrors.NewNotFound(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, name)
	}
	if app.Refresh != "" && !a.stopped && !a.skipsLocked(app.Ref()) {
		a.compare(app)
		a.hookFinalizersLocked(app.Ref(), nil)
	}
	out := *app
	out.Resources = append([]argocd.Resource(nil), app.Resources...)
	return out, nil
}

// compare drops rows requiring pruning whose objects are gone or no longer tracked for the app.
func (a *ArgoCD) compare(app *argocd.Application) {
	dest := a.destination(app.Destination)
	if dest == nil {
		return
	}
	instance := app.Instance(a.Ns)
	var rows []argocd.Resource
	outOfSync := false
	for _, r := range app.Resources {
		if r.RequiresPruning && !r.Hook {
			ref, err := dest.Resolve(context.Background(), r.Group, r.Kind, r.Version, r.Namespace, r.Name)
			obj := dest.Object(ref)
			if err != nil || obj == nil || !a.Config.Owner(obj.Labels, obj.Annotations, ref.ObjectRef()).TrackedBy(instance) {
				continue
			}
			if !argocd.HasOption(obj.Annotations[argocd.AnnotationCompareOptions], argocd.OptionIgnoreExtraneous) {
				outOfSync = true
			}
		} else if a.Shared[r.Key()] {
			r.Status = a.sharedStatus(dest, r, instance)
			outOfSync = outOfSync || r.Status == "OutOfSync"
		} else if r.Status == "OutOfSync" {
			outOfSync = true
		}
		rows = append(rows, r)
	}
	app.Resources = rows
	app.SyncStatus = "Synced"
	if outOfSync {
		app.SyncStatus = "OutOfSync"
	}
	if app.Refresh != "" {
		app.Refresh = ""
		if a.Clock != nil {
			app.ReconciledAt = a.Clock.compare()
		} else {
			app.ReconciledAt = a.Now().Truncate(time.Second)
		}
	}
}

func (a *ArgoCD) sharedStatus(dest *Cluster, r argocd.Resource, instance string) string {
	ref, err := dest.Resolve(context.Background(), r.Group, r.Kind, r.Version, r.Namespace, r.Name)
	if obj := dest.Object(ref); err == nil && obj != nil && a.Config.Owner(obj.Labels, obj.Annotations, ref.ObjectRef()).TrackedBy(instance) {
		return "Synced"
	}
	return "OutOfSync"
}

func (a *ArgoCD) destination(d argocd.Destination) *Cluster {
	if d.InCluster() {
		return a.InCluster
	}
	if c := a.Remote[d.Server]; c != nil && d.Server != "" {
		return c
	}
	return a.Remote[d.Name]
}

// Project returns a project permitting everything, with the annotations of the AppProject object
// of that name in the in-cluster destination when it serves one.
func (a *ArgoCD) Project(ctx context.Context, name string) (argocd.Project, error) {
	p := argocd.Project{Name: name, ClusterWhitelist: []argocd.GroupKind{{Group: "*", Kind: "*"}}}
	if ref, err := a.InCluster.Resolve(ctx, "argoproj.io", "AppProject", "", a.Ns, name); err == nil {
		if o, err := a.InCluster.Get(ctx, ref); err == nil {
			p.Annotations = o.Annotations
		}
	}
	return p, nil
}

// Refresh records a refresh request.
func (a *ArgoCD) Refresh(_ context.Context, app argocd.Application, hard bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refreshs++
	if stored := a.apps[app.Ref()]; stored != nil {
		stored.Refresh = "normal"
	}
	return nil
}

// Destination returns the app's destination cluster.
func (a *ArgoCD) Destination(_ context.Context, app argocd.Application) (cluster.Objects, error) {
	if c := a.destination(app.Destination); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("Application %s deploys to cluster %s, which this fake does not know", app.Ref(), app.Destination)
}

// Reach returns the cluster a destination names.
func (a *ArgoCD) Reach(_ context.Context, d argocd.Destination) (cluster.Objects, error) {
	if d.Name == argocd.InClusterName {
		return a.InCluster, nil
	}
	if c := a.destination(d); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("cluster %s: this fake does not know it", d)
}

// Manifests are what SetManifests gave for the app, at any revision.
func (a *ArgoCD) Manifests(_ context.Context, app argocd.Application, revision string) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	docs, ok := a.manifests[app.Ref()]
	if !ok {
		return nil, fmt.Errorf("Application %s: no manifests at %s in this fake", app.Ref(), revision)
	}
	return docs, nil
}

// SetManifests sets what Manifests renders for the app (namespace/name).
func (a *ArgoCD) SetManifests(app string, docs ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.manifests == nil {
		a.manifests = map[string][]string{}
	}
	a.manifests[app] = docs
}

// ControllerIdentity is the ServiceAccount Argo CD's manifests give the controller.
func (a *ArgoCD) ControllerIdentity(context.Context) string {
	return "system:serviceaccount:" + a.Ns + ":argocd-application-controller"
}
