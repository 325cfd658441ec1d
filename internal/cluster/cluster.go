// Package cluster is the boundary between unprune's engine and the places it reads and changes
// things: an Argo CD installation (its Applications, settings and refreshes) and the destination
// clusters that hold the live objects. Two backends implement it: the Kubernetes API through the
// user's kubeconfig (internal/backend/kube) and Argo CD's own API (internal/backend/argocdapi), and
// clustertest fakes it in memory. The engine, scan, audit and verify know only these interfaces.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/argocd"
)

// Via says how a cluster is reached.
type Via string

const (
	// ViaKubeconfig: the user's own kubeconfig context; the user's RBAC applies.
	ViaKubeconfig Via = "Kubeconfig"
	// ViaArgoCDCredentials: the credentials in Argo CD's cluster Secret (opt-in).
	ViaArgoCDCredentials Via = "ArgoCDCredentials"
	// ViaArgoCDAPI: Argo CD's API server, which acts with its own credentials under Argo CD's RBAC.
	ViaArgoCDAPI Via = "ArgoCDAPI"
)

// Info names a cluster and how it is reached. It never holds credentials.
type Info struct {
	// Name is Argo CD's name for the cluster ("in-cluster" for the one it runs in).
	Name string `json:"name,omitempty"`
	// Server is the API server URL as Argo CD knows it (https://kubernetes.default.svc for the
	// cluster Argo CD runs in).
	Server string `json:"server,omitempty"`
	// URL is the address unprune actually talks to, when it differs from Server.
	URL string `json:"url,omitempty"`
	Via Via    `json:"via"`
	// Context is the kubeconfig context, for ViaKubeconfig.
	Context string `json:"context,omitempty"`
	// ArgoCDServer is the Argo CD API server, for ViaArgoCDAPI.
	ArgoCDServer string `json:"argocdServer,omitempty"`
}

// String is a short human description, e.g. `remote (https://10.0.0.1:6443) via context "prod"`.
func (i Info) String() string {
	name := i.Name
	if name == "" {
		name = i.Server
	} else if i.Server != "" {
		name += " (" + i.Server + ")"
	}
	switch i.Via {
	case ViaKubeconfig:
		if i.Context != "" {
			return fmt.Sprintf("%s via context %q", name, i.Context)
		}
		return name + " via your kubeconfig"
	case ViaArgoCDCredentials:
		return name + " via Argo CD's cluster credentials"
	case ViaArgoCDAPI:
		return name + " via Argo CD's API at " + i.ArgoCDServer
	}
	return name
}

// Ref identifies one live object and the API resource that serves it.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Namespaced is the resource's scope; a cluster-scoped ref has no namespace.
	Namespaced bool `json:"-"`
}

// String renders KIND[.GROUP]/[NAMESPACE/]NAME.
func (r Ref) String() string { return argocd.ResourceString(r.Group, r.Kind, r.Namespace, r.Name) }

// Key identifies the object regardless of API version.
func (r Ref) Key() string { return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name }

// ObjectRef is the ref as Argo CD's tracking rules see it.
func (r Ref) ObjectRef() argocd.ObjectRef {
	return argocd.ObjectRef{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, ClusterScoped: !r.Namespaced}
}

// Object is the metadata of a live object: what planning, scanning and auditing read.
type Object struct {
	Ref             Ref
	UID             string
	ResourceVersion string
	Labels          map[string]string
	Annotations     map[string]string
	// Owners are "Kind/name" of each ownerReference.
	Owners   []string
	Deleting bool
	// ManagedFields are metadata.managedFields as the API server returned them.
	ManagedFields []ManagedFieldsEntry
	// Content is the whole object, when the backend read it in full (Get); nil after a metadata read.
	Content map[string]any
}

// ManagedFieldsEntry is one entry of metadata.managedFields, with the JSON names of
// metav1.ManagedFieldsEntry so that it is sent back to the API server as it was read. Time is kept as
// the string the API server sent, FieldsV1 as its raw JSON.
type ManagedFieldsEntry struct {
	Manager     string          `json:"manager,omitempty"`
	Operation   string          `json:"operation,omitempty"`
	APIVersion  string          `json:"apiVersion,omitempty"`
	Time        string          `json:"time,omitempty"`
	FieldsType  string          `json:"fieldsType,omitempty"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty"`
	Subresource string          `json:"subresource,omitempty"`
}

// Identity is what the API server keeps one entry per: manager, operation, API version and
// subresource.
func (e ManagedFieldsEntry) Identity() string {
	return e.Manager + "|" + e.Operation + "|" + e.APIVersion + "|" + e.Subresource
}

// Equal reports whether two entries are the same, field for field; FieldsV1 is compared as JSON
// (its bytes without insignificant space: an indented journal holds the same value).
func (e ManagedFieldsEntry) Equal(o ManagedFieldsEntry) bool {
	return e.Identity() == o.Identity() && e.Time == o.Time && e.SameFields(o)
}

// SameFields reports whether two entries own the same fields.
func (e ManagedFieldsEntry) SameFields(o ManagedFieldsEntry) bool {
	return e.FieldsType == o.FieldsType && bytes.Equal(compact(e.FieldsV1), compact(o.FieldsV1))
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// ReadResult is one object of a bulk read: the object, or why it could not be read.
type ReadResult struct {
	Object *Object
	Err    error
}

// Objects reads and changes live objects in one destination cluster.
type Objects interface {
	Info() Info
	// Resolve finds the API resource serving group/kind (version may be empty for the preferred one)
	// and returns a Ref for name in namespace (ignored for cluster-scoped kinds).
	Resolve(ctx context.Context, group, kind, version, namespace, name string) (Ref, error)
	// Read reads the metadata of many objects, in bulk where the backend can; results are in the order
	// of refs. A missing object's error satisfies IsNotFound.
	Read(ctx context.Context, refs []Ref) []ReadResult
	// Get reads one object in full.
	Get(ctx context.Context, ref Ref) (*Object, error)
	// Patch applies a JSON merge patch of the object's metadata. The patch carries
	// metadata.resourceVersion, which makes the API server refuse it with a conflict when the object
	// changed since it was read. dryRun asks the API server to judge it without persisting.
	Patch(ctx context.Context, ref Ref, mergePatch []byte, dryRun bool) (*Object, error)
}

// EachReader is implemented by backends that can hand over each result of a bulk read as soon as it
// is read, so that a caller describing many thousands of objects never holds them all at once.
type EachReader interface {
	// ReadEach reads as Read does and calls fn once for each index of refs, as results arrive. fn
	// may be called from several goroutines at once, never twice for one index.
	ReadEach(ctx context.Context, refs []Ref, fn func(i int, res ReadResult))
}

// Lister is implemented by backends that can list every object of a resource, metadata only: a
// long-running reader fills its cache with one LIST instead of reading object by object.
type Lister interface {
	// ListAll calls fn for every object of like's resource in like's namespace (every object, for
	// a cluster-scoped resource), without managedFields, which such a reader would keep for nothing.
	ListAll(ctx context.Context, like Ref, fn func(*Object)) error
}

// Prober is implemented by backends that can ask the API server whether it would delete an object
// (DELETE with dryRun=All), for audit --probe.
type Prober interface {
	// ProbeDelete sends the dry-run DELETE, as the user or, when as is set, impersonating as.
	ProbeDelete(ctx context.Context, ref Ref, as string) error
	// CanI asks the API server whether the user (or as) may do verb on the ref.
	CanI(ctx context.Context, verb string, ref Ref, as string) (allowed bool, reason string, err error)
}

// Counter is implemented by backends that can count what a deletion would take with it.
type Counter interface {
	// CountInNamespace counts the objects of every listable namespaced kind in namespace; skipped
	// is how many kinds could not be read.
	CountInNamespace(ctx context.Context, namespace string) (total int64, skipped int, err error)
	// CountCustomResources counts the custom resources of a CRD, cluster-wide.
	CountCustomResources(ctx context.Context, crd *Object) (int64, error)
}

// PolicyReader is implemented by backends that can read cluster-scoped admission objects.
type PolicyReader interface {
	// GetClusterObject reads a cluster-scoped object in full; a missing one satisfies IsNotFound.
	GetClusterObject(ctx context.Context, group, version, resource, name string) (map[string]any, error)
}

// Applier is implemented by backends that can server-side apply cluster-scoped objects, for
// `guard policy --apply`.
type Applier interface {
	Apply(ctx context.Context, group, version, resource string, obj map[string]any, dryRun bool) error
}

// Selector chooses Applications.
type Selector struct {
	// Namespace is where the Applications live; empty means every namespace.
	Namespace string
	// LabelSelector is a Kubernetes label selector on the Applications.
	LabelSelector string
	// Projects keeps only apps of these projects; empty keeps all.
	Projects []string
}

// Settings are Argo CD's tracking settings and what was noticed while reading them.
type Settings struct {
	argocd.Settings
	// Filter is which kinds Argo CD watches (resource.exclusions and resource.inclusions).
	Filter argocd.ResourceFilter
	// FilterKnown is false when the backend cannot read the filter (Argo CD's API does not serve it).
	FilterKnown bool
	// Warnings for the user (several installations found, version unknown, …).
	Warnings []string
}

// KnownFilter is Filter when it was read from argocd-cm, else nil (Argo CD's built-in exclusions
// only).
func (s Settings) KnownFilter() *argocd.ResourceFilter {
	if !s.FilterKnown {
		return nil
	}
	f := s.Filter
	return &f
}

// SettlingNamespace is an installation that learns its namespace from its settings (argocd-server
// tells logged-in users its controller's): until Settings has returned, Namespace is a fallback, and
// a read that defaults to it must wait.
type SettlingNamespace interface {
	NamespaceSettled() bool
}

// ParamsReader is an installation that can read argocd-cmd-params-cm, the parameters Argo CD's
// components run with (the kube backend; argocd-server does not serve it).
type ParamsReader interface {
	CmdParams(ctx context.Context) (map[string]string, error)
}

// Oracle is Argo CD answering for itself, through argocd-server's API.
type Oracle interface {
	// GenerateApplicationSet is what `argocd appset generate` asks: the Applications the set
	// generates, by Argo CD's own generators (every kind, SCM provider and pull request included).
	GenerateApplicationSet(ctx context.Context, set map[string]any) ([]map[string]any, error)
	// Manifests are an app's manifests at a revision (`argocd app manifests --revision`).
	Manifests(ctx context.Context, app argocd.Application, revision string) ([]string, error)
	// Server names the argocd-server asked.
	Server() string
}

// ArgoCD is one Argo CD installation as a backend sees it.
type ArgoCD interface {
	// Namespace is the installation's namespace (where argocd-cm and its own Applications live).
	Namespace() string
	// Cluster is where the installation's Applications live.
	Cluster() Info
	// Settings reads the tracking settings; version, when not nil, is what the user said and wins
	// over detection.
	Settings(ctx context.Context, version *argocd.Version) (Settings, error)
	ListApplications(ctx context.Context, sel Selector) ([]argocd.Application, error)
	GetApplication(ctx context.Context, namespace, name string) (argocd.Application, error)
	// Project reads an AppProject.
	Project(ctx context.Context, name string) (argocd.Project, error)
	// Refresh asks the controller to compare the app again (refresh "normal", or "hard"), keeping
	// a pending hard refresh as it is: the backend reads it, so app needs only its namespace and
	// name.
	Refresh(ctx context.Context, app argocd.Application, hard bool) error
	// Destination returns the objects of the cluster the app deploys to.
	Destination(ctx context.Context, app argocd.Application) (Objects, error)
	// Reach returns the objects of the cluster a destination names, without an app: where guards
	// go and journal entries were changed. A backend that serves objects only as an app's
	// resources (Argo CD's API) fails with ErrUnsupported.
	Reach(ctx context.Context, d argocd.Destination) (Objects, error)
	// Manifests are the app's desired manifests rendered by Argo CD at revision (its repo-server);
	// a backend that cannot ask the repo-server fails with ErrUnsupported.
	Manifests(ctx context.Context, app argocd.Application, revision string) ([]string, error)
	// ControllerIdentity is the user the application controller acts as in the cluster Argo CD
	// runs in (its ServiceAccount), for the probe; empty when the backend cannot tell.
	ControllerIdentity(ctx context.Context) string
	ApplicationWriter
}

// ErrUnsupported marks what a backend cannot do at all: the other backend can.
var ErrUnsupported = errors.New("not offered by this way of reaching Argo CD")

// Clock is time as the engine sees it; tests inject their own.
type Clock func() time.Time
