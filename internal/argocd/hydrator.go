package argocd

import "encoding/json"

// SourceHydrator is an Application's spec.sourceHydrator (pkg/apis/application/v1alpha1/types.go,
// SourceHydrator: from the v2.14 line on; v2.13.9 has
// none): Argo CD's controller renders the dry source, has the
// commit-server commit the result to the sync source's branch and path (or hydrateTo's branch),
// and compares and syncs the app against that hydrated branch, not against the dry source.
//
// The hydrator renders the dry source with the app's instance name, as any source: the repo-server
// is asked with AppName: app.InstanceName (controller/state.go GetRepoObjs, which
// controller/hydrator/hydrator.go getManifests calls), so Helm's release name and $ARGOCD_APP_NAME
// are the app's name there too.
type SourceHydrator struct {
	DrySource  DrySource  `json:"drySource"`
	SyncSource SyncSource `json:"syncSource"`
	HydrateTo  *HydrateTo `json:"hydrateTo,omitempty"`
}

// DrySource is where the hydrator reads the manifests it renders. Helm, Kustomize, Directory and
// Plugin exist from v3.3.0 (v3.3.19's DrySource has them, v3.2.11's does not); before, the
// hydrator renders repoURL, path and targetRevision alone (controller/hydrator/hydrator.go, hydrate
// in v2.14.11 and getManifests in v3.2.11), so a Helm chart's release name is always the app's.
type DrySource struct {
	RepoURL        string          `json:"repoURL"`
	TargetRevision string          `json:"targetRevision"`
	Path           string          `json:"path"`
	Helm           json.RawMessage `json:"helm,omitempty"`
	Kustomize      json.RawMessage `json:"kustomize,omitempty"`
	Directory      json.RawMessage `json:"directory,omitempty"`
	Plugin         json.RawMessage `json:"plugin,omitempty"`
}

// SyncSource is where the hydrated manifests are committed and synced from; RepoURL defaults to
// the dry source's (SourceHydrator.GetSyncSource).
type SyncSource struct {
	TargetBranch string `json:"targetBranch"`
	Path         string `json:"path"`
	RepoURL      string `json:"repoURL,omitempty"`
}

// HydrateTo is a staging branch the hydrator commits to instead of the sync source's branch.
type HydrateTo struct {
	TargetBranch string `json:"targetBranch"`
}

// SyncRepoURL is the repository the app syncs from: the sync source's, else the dry source's.
func (h SourceHydrator) SyncRepoURL() string {
	if h.SyncSource.RepoURL != "" {
		return h.SyncSource.RepoURL
	}
	return h.DrySource.RepoURL
}

// HelmReleaseName is drySource.helm.releaseName, empty when unset.
func (d DrySource) HelmReleaseName() string {
	var helm struct {
		ReleaseName string `json:"releaseName"`
	}
	_ = json.Unmarshal(d.Helm, &helm)
	return helm.ReleaseName
}

// HydratorOf reads spec.sourceHydrator from an Application's spec as a map (a live object or a
// manifest); nil when there is none.
func HydratorOf(spec map[string]any) *SourceHydrator {
	raw, ok := spec["sourceHydrator"]
	if !ok || raw == nil {
		return nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var h SourceHydrator
	if json.Unmarshal(data, &h) != nil {
		// A sourceHydrator that is not an object is still one: the caller must not take the app
		// for an ordinary one.
		return &SourceHydrator{}
	}
	return &h
}
