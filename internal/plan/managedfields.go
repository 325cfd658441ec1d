package plan

import (
	"encoding/json"
	"fmt"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// ArgoCDFieldManager is the field manager Argo CD's controller writes with (read in v3.6.1):
// server-side apply syncs (ServerSideApply=true) apply as it (argo-cd common/common.go
// ArgoCDSSAManager, passed by controller/sync.go WithServerSideApplyManager); gitops-engine's
// kubectl apply sets it as the field manager of client-side applies too
// (gitops-engine/pkg/utils/kube/resource_ops.go, newApplyOptions), which show as operation Update;
// and its client-side apply migration moves kubectl-client-side-apply's fields into it with
// csaupgrade (gitops-engine/pkg/sync/sync_context.go, performCSAUpgradeMigration).
const ArgoCDFieldManager = "argocd-controller"

// operationApply is the managedFields operation of a server-side apply.
const operationApply = "Apply"

// disownFields adds to an untrack plan the removal of Argo CD's entries from managedFields, for an
// object Argo CD last applied server-side (an Apply entry of its manager). Those entries make Argo
// CD the owner of every field it applied, so after the release any other server-side applier (a
// team's own pipeline, another GitOps tool) hits a conflict on each of them (argo-cd#15005). All
// the manager's entries go, Update ones included: a conflict is reported against any other manager
// that owns a field. Every other manager's entry is sent back as it was read.
//
// Keep never touches managedFields: the object stays Argo CD's. An object Argo CD never applied
// server-side (no Apply entry) is left as it is: releasing ownership is for what a server-side
// sync claimed, and client-side applies also leave kubectl's last-applied configuration, which a
// later apply reads; unprune does not decide that for them.
func disownFields(p Plan, o Options) Plan {
	if p.Refusal != nil || len(p.Changes) == 0 || o.Strategy == StrategyKeep || o.KeepManagedFields {
		return p
	}
	var applied *cluster.ManagedFieldsEntry
	for i, e := range p.Target.ManagedFields {
		if e.Manager == ArgoCDFieldManager && e.Operation == operationApply {
			applied = &p.Target.ManagedFields[i]
		}
	}
	if applied == nil {
		return p
	}
	c := journal.ManagedFieldsRemoval(ArgoCDFieldManager, p.Target.ManagedFields, placeholder(applied.APIVersion))
	if c.ManagedFields.Placeholder != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("%s was the only field manager: an entry of %s owning only metadata takes its place "+
			"(with none, the next server-side apply would conflict with \"before-first-apply\")", ArgoCDFieldManager, PlaceholderManager))
	}
	p.Changes = append(p.Changes, c)
	return p
}

// PlaceholderManager is the field manager of the entry that stands in for Argo CD's when those were
// the only ones.
const PlaceholderManager = "unprune"

// placeholder is an Update entry that owns only metadata itself, a field no apply ever changes (it
// is there before and after), so it never conflicts; the API server keeps such an entry as sent.
func placeholder(apiVersion string) cluster.ManagedFieldsEntry {
	return cluster.ManagedFieldsEntry{Manager: PlaceholderManager, Operation: "Update", APIVersion: apiVersion,
		FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:metadata":{}}`)}
}
