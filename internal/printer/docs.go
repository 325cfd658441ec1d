package printer

import (
	"fmt"
	"strings"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// Metadata says where and when a document was made.
type Metadata struct {
	GeneratedAt time.Time `json:"generatedAt"`
	ToolVersion string    `json:"toolVersion"`
	// Cluster is the cluster the command talked to first: where Argo CD runs, or the guarded one.
	Cluster *ClusterRef `json:"cluster,omitempty"`
}

// ClusterRef names a cluster and how it was reached.
type ClusterRef struct {
	Name         string `json:"name,omitempty"`
	Server       string `json:"server,omitempty"`
	Context      string `json:"context,omitempty"`
	Via          string `json:"via,omitempty"`
	ArgoCDServer string `json:"argocdServer,omitempty"`
}

// NewClusterRef converts cluster information for output.
func NewClusterRef(i cluster.Info) ClusterRef {
	server := i.Server
	if i.URL != "" && (server == "" || server == argocd.InClusterServer) {
		server = i.URL
	}
	return ClusterRef{Name: i.Name, Server: server, Context: i.Context, Via: string(i.Via), ArgoCDServer: i.ArgoCDServer}
}

// ArgoCD describes the installation and the settings a result was computed with.
type ArgoCD struct {
	Namespace            string `json:"namespace"`
	Version              string `json:"version,omitempty"`
	TrackingMethod       string `json:"trackingMethod,omitempty"`
	TrackingMethodSource string `json:"trackingMethodSource"`
	Ambiguous            bool   `json:"ambiguous,omitempty"`
	InstanceLabelKey     string `json:"instanceLabelKey"`
	InstallationID       string `json:"installationID,omitempty"`
}

// NewArgoCD summarises settings.
func NewArgoCD(namespace string, s argocd.Settings) *ArgoCD {
	a := &ArgoCD{Namespace: namespace, TrackingMethod: string(s.Method), TrackingMethodSource: s.MethodSource,
		Ambiguous: s.Ambiguous, InstanceLabelKey: s.InstanceLabelKey, InstallationID: s.InstallationID}
	if s.Version != nil {
		a.Version = s.Version.String()
	}
	return a
}

// AppRef names an Application.
type AppRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ResourceRef names a resource as Argo CD's status does.
type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders KIND[.GROUP]/[NAMESPACE/]NAME.
func (r ResourceRef) String() string {
	return argocd.ResourceString(r.Group, r.Kind, r.Namespace, r.Name)
}

// NameLine is the resource as kubectl's -o name prints it: kind[.group]/name.
func (r ResourceRef) NameLine() string {
	kind := strings.ToLower(r.Kind)
	if r.Group != "" {
		kind += "." + r.Group
	}
	return kind + "/" + r.Name
}

// NewResourceRef names a row of Argo CD's status (or audit's) in a document.
func NewResourceRef(r argocd.Resource) ResourceRef {
	return ResourceRef{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func fromRef(r cluster.Ref) ResourceRef {
	return ResourceRef{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// Field is a label or annotation.
type Field struct {
	Field string `json:"field"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

func fields(fs []argocd.Field) []Field {
	out := []Field{}
	for _, f := range fs {
		out = append(out, Field{Field: string(f.Kind), Key: f.Key, Value: f.Value})
	}
	return out
}

// Change is one label or annotation change; before/after absent means the key is absent. A change
// of a value embedding the object (last-applied-configuration) shows which keys leave or return to
// it, never the value.
type Change struct {
	Field    string    `json:"field"`
	Key      string    `json:"key"`
	Before   *string   `json:"before,omitempty"`
	After    *string   `json:"after,omitempty"`
	Embedded *Embedded `json:"embedded,omitempty"`
	// ManagedFields is set for a change of a field manager's entries in metadata.managedFields.
	ManagedFields *ManagedFields `json:"managedFields,omitempty"`
}

// ManagedFields is a change of one field manager's managedFields entries, named without their
// fieldsV1.
type ManagedFields struct {
	Removed []ManagedFieldsEntry `json:"removed,omitempty"`
	// Restored are the entries an undo puts back.
	Restored []ManagedFieldsEntry `json:"restored,omitempty"`
}

// ManagedFieldsEntry names one managedFields entry.
type ManagedFieldsEntry struct {
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Embedded is the redacted form of an embedded-configuration change.
type Embedded struct {
	Removed []Field `json:"removed,omitempty"`
	// Restored are the keys an undo puts back.
	Restored []Field `json:"restored,omitempty"`
}

// Changes converts journal changes for output.
func Changes(cs []journal.Change) []Change {
	out := []Change{}
	for _, c := range cs {
		oc := Change{Field: string(c.Field), Key: c.Key, Before: c.Before, After: c.After}
		if c.Embedded != nil {
			keys := make([]Field, 0, len(c.Embedded.Removed))
			for _, k := range c.Embedded.Removed {
				keys = append(keys, Field{Field: string(k.Field), Key: k.Key, Value: k.Value})
			}
			oc.Embedded = &Embedded{}
			if c.Embedded.Restore {
				oc.Embedded.Restored = keys
			} else {
				oc.Embedded.Removed = keys
			}
		}
		if m := c.ManagedFields; m != nil {
			entries := make([]ManagedFieldsEntry, 0, len(m.Entries))
			for _, e := range m.Entries {
				entries = append(entries, ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource})
			}
			oc.ManagedFields = &ManagedFields{}
			if m.Restore {
				oc.ManagedFields.Restored = entries
			} else {
				oc.ManagedFields.Removed = entries
			}
		}
		out = append(out, oc)
	}
	return out
}

// describeManagedFields says which entries of a field manager a change removes or puts back, e.g.
// "managedFields: remove entries of argocd-controller (Apply, apps/v1)".
func describeManagedFields(c Change) string {
	verb, entries := "remove", c.ManagedFields.Removed
	if len(c.ManagedFields.Restored) > 0 {
		verb, entries = "restore", c.ManagedFields.Restored
	}
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		s := e.Operation + ", " + e.APIVersion
		if e.Subresource != "" {
			s += " (" + e.Subresource + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("managedFields: %s entries of %s (%s)", verb, Safe(c.Key), Safe(strings.Join(parts, "; ")))
}
