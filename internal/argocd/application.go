package argocd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// InClusterServer is the destination Argo CD uses for the cluster it runs in, and InClusterName the
// name Argo CD gives it (util/db/cluster.go).
const (
	InClusterServer = "https://kubernetes.default.svc"
	InClusterName   = "in-cluster"
)

// Application is the part of an Argo CD Application unprune reasons about. It is read from the
// Application's JSON, which the Kubernetes API and Argo CD's own API serve alike, into this small
// local struct: the tool does not import Argo CD's Go module.
type Application struct {
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Labels          map[string]string
	Annotations     map[string]string
	// Finalizers are metadata.finalizers; Deleting is true once the app has a deletionTimestamp, when
	// a resources finalizer makes the controller delete what it tracks (the cascade).
	Finalizers  []string
	Deleting    bool
	Project     string
	Destination Destination
	Automated   bool
	AutoPrune   bool
	SyncOptions []string
	SyncStatus  string
	Revision    string
	// ReconciledAt is when the controller started its last full comparison (CompareWithLatest):
	// controller/appcontroller.go takes the time before CompareAppState and stores it only for
	// comparisons at that level. It has second precision. Zero when never reconciled.
	ReconciledAt time.Time
	// OperationPhase is the phase of the current or last operation; Operation is true when one is
	// requested or running, during which changing its resources races the sync.
	OperationPhase string
	Operation      bool
	// Refresh is the value of a pending refresh request ("normal" or "hard"); the controller removes
	// the annotation once it compared the app.
	Refresh   string
	Resources []Resource
	// SourceHydrator is spec.sourceHydrator, nil when the app has none: it is then compared against
	// the hydrated branch, and what it renders comes from the dry source (see SourceHydrator).
	SourceHydrator *SourceHydrator
}

// Destination is where an Application deploys: a cluster by server URL or by name, and a namespace.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// String names the destination cluster the way the app's spec does.
func (d Destination) String() string {
	switch {
	case d.Name != "" && d.Server != "":
		return d.Name + " (" + d.Server + ")"
	case d.Name != "":
		return d.Name
	}
	return d.Server
}

// InCluster reports whether the destination is the cluster Argo CD runs in.
func (d Destination) InCluster() bool {
	if d.Server != "" {
		return d.Server == InClusterServer
	}
	return d.Name == "" || d.Name == InClusterName
}

// Resource is one row of .status.resources.
type Resource struct {
	Group           string `json:"group,omitempty"`
	Version         string `json:"version"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	Status          string `json:"status,omitempty"`
	RequiresPruning bool   `json:"requiresPruning,omitempty"`
	// Hook marks a live hook object (argocd.argoproj.io/hook, helm.sh/hook). Argo CD lists every live
	// hook with requiresPruning true, even while it is still in git, but no sync prunes hooks and they
	// never make the app OutOfSync (controller/state.go, CompareAppState).
	Hook bool `json:"hook,omitempty"`
	// Health is the row's health status: Argo CD says Missing for a desired object that does not
	// exist (gitops-engine pkg/health).
	Health string `json:"-"`
	// RequiresDeletionConfirmation: Delete=confirm (from v3.4 also Prune=confirm, and the app's own
	// options) on the manifest or the live object; deleting the app then waits for
	// argocd.argoproj.io/deletion-approved before deleting anything (controller/state.go).
	RequiresDeletionConfirmation bool `json:"requiresDeletionConfirmation,omitempty"`
}

// UnmarshalJSON reads a row as Argo CD writes it, its health an object ({"status": "Missing"}).
func (r *Resource) UnmarshalJSON(data []byte) error {
	type row Resource
	var doc struct {
		row
		HealthDoc *struct {
			Status string `json:"status"`
		} `json:"health"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	*r = Resource(doc.row)
	if doc.HealthDoc != nil {
		r.Health = doc.HealthDoc.Status
	}
	return nil
}

// String renders KIND[.GROUP]/[NAMESPACE/]NAME, the form RESOURCE arguments take.
func (r Resource) String() string { return ResourceString(r.Group, r.Kind, r.Namespace, r.Name) }

// ResourceString renders KIND[.GROUP]/[NAMESPACE/]NAME: how unprune names an object everywhere,
// and the form RESOURCE arguments take.
func ResourceString(group, kind, namespace, name string) string {
	if group != "" {
		kind += "." + group
	}
	if namespace != "" {
		return kind + "/" + namespace + "/" + name
	}
	return kind + "/" + name
}

// Key identifies the row's object regardless of API version.
func (r Resource) Key() string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Prunable reports whether the row stands for an object a prune sync would delete: it requires
// pruning and is not a hook.
func (r Resource) Prunable() bool { return r.RequiresPruning && !r.Hook }

// Pruning lists the rows a prune sync would delete: requiring pruning, hooks excluded.
func (a Application) Pruning() []Resource {
	var out []Resource
	for _, r := range a.Resources {
		if r.Prunable() {
			out = append(out, r)
		}
	}
	return out
}

// Ref is namespace/name.
func (a Application) Ref() string { return a.Namespace + "/" + a.Name }

// Instance is the name Argo CD writes in the tracking metadata of the app's resources.
func (a Application) Instance(controllerNamespace string) string {
	return InstanceName(a.Namespace, a.Name, controllerNamespace)
}

type applicationDoc struct {
	Metadata struct {
		Namespace         string            `json:"namespace"`
		Name              string            `json:"name"`
		UID               string            `json:"uid"`
		ResourceVersion   string            `json:"resourceVersion"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
		Finalizers        []string          `json:"finalizers"`
		DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Project     string      `json:"project"`
		Destination Destination `json:"destination"`
		SyncPolicy  *struct {
			Automated *struct {
				Enabled *bool `json:"enabled"`
				Prune   bool  `json:"prune"`
			} `json:"automated"`
			SyncOptions []string `json:"syncOptions"`
		} `json:"syncPolicy"`
		SourceHydrator *SourceHydrator `json:"sourceHydrator"`
	} `json:"spec"`
	Operation json.RawMessage `json:"operation"`
	Status    struct {
		Sync struct {
			Status   string `json:"status"`
			Revision string `json:"revision"`
		} `json:"sync"`
		ReconciledAt   *time.Time `json:"reconciledAt"`
		Resources      []Resource `json:"resources"`
		OperationState *struct {
			Phase string `json:"phase"`
		} `json:"operationState"`
	} `json:"status"`
}

func (d *applicationDoc) application() Application {
	a := Application{
		Namespace:       d.Metadata.Namespace,
		Name:            d.Metadata.Name,
		UID:             d.Metadata.UID,
		ResourceVersion: d.Metadata.ResourceVersion,
		Labels:          d.Metadata.Labels,
		Annotations:     d.Metadata.Annotations,
		Finalizers:      d.Metadata.Finalizers,
		Deleting:        d.Metadata.DeletionTimestamp != nil,
		Project:         d.Spec.Project,
		Destination:     d.Spec.Destination,
		SyncStatus:      d.Status.Sync.Status,
		Revision:        d.Status.Sync.Revision,
		Resources:       d.Status.Resources,
		Operation:       len(d.Operation) > 0 && !bytes.Equal(bytes.TrimSpace(d.Operation), []byte("null")),
		Refresh:         d.Metadata.Annotations[AnnotationRefresh],
		SourceHydrator:  d.Spec.SourceHydrator,
	}
	if d.Status.ReconciledAt != nil {
		a.ReconciledAt = *d.Status.ReconciledAt
	}
	if p := d.Spec.SyncPolicy; p != nil {
		a.SyncOptions = p.SyncOptions
		// Argo CD v3.3+ can switch automation off while keeping its settings (enabled: false).
		if p.Automated != nil && (p.Automated.Enabled == nil || *p.Automated.Enabled) {
			a.Automated = true
			a.AutoPrune = p.Automated.Prune
		}
	}
	if s := d.Status.OperationState; s != nil {
		a.OperationPhase = s.Phase
		if s.Phase == "Running" || s.Phase == "Terminating" {
			a.Operation = true
		}
	}
	return a
}

// ParseApplication reads one Application from its JSON.
func ParseApplication(data []byte) (Application, error) {
	var d applicationDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return Application{}, fmt.Errorf("read Application: %w", err)
	}
	if d.Metadata.Name == "" {
		return Application{}, fmt.Errorf("read Application: no metadata.name")
	}
	return d.application(), nil
}

// ApplicationList is a page of Applications as the list endpoints of both APIs return it.
type ApplicationList struct {
	Items    []Application
	Continue string
}

// ParseApplicationList reads a whole list response held in memory.
func ParseApplicationList(data []byte) (ApplicationList, error) {
	var out ApplicationList
	cont, err := DecodeApplicationList(bytes.NewReader(data), func(a Application) { out.Items = append(out.Items, a) })
	out.Continue = cont
	return out, err
}

// DecodeApplicationList reads a list response ({"metadata":{"continue":…},"items":[…]}) from r an
// Application at a time, each decoded straight into the local struct and handed to keep: a page's
// bytes and its objects are never in memory at once, and no map is built per object. It returns the
// list's continue token.
func DecodeApplicationList(r io.Reader, keep func(Application)) (string, error) {
	dec := json.NewDecoder(r)
	cont, err := decodeList(dec, keep)
	if err != nil {
		return "", fmt.Errorf("read Application list: %w", err)
	}
	return cont, nil
}

func decodeList(dec *json.Decoder, keep func(Application)) (string, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return "", err
	}
	var cont string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch key {
		case "metadata":
			var m struct {
				Continue string `json:"continue"`
			}
			if err := dec.Decode(&m); err != nil {
				return "", err
			}
			cont = m.Continue
		case "items":
			if err := decodeItems(dec, keep); err != nil {
				return "", err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", err
			}
		}
	}
	return cont, expectDelim(dec, '}')
}

// decodeItems reads the items array (or null), a fresh struct per item: decoding into a reused
// one would merge its maps and share its slices with the previous item.
func decodeItems(dec *json.Decoder, keep func(Application)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("items is %v, not an array", tok)
	}
	for dec.More() {
		var d applicationDoc
		if err := dec.Decode(&d); err != nil {
			return err
		}
		keep(d.application())
	}
	return expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("found %v where %v was expected", tok, want)
	}
	return nil
}
