// Package journal records what unprune changes on live Kubernetes objects, so that `unprune undo`
// can put back exactly what was there.
//
// # Why a journal
//
// `unprune detach` removes Argo CD tracking labels and annotations from live objects (or, with
// --strategy keep, merges sync and compare options); `unprune guard` adds labels and annotations.
// Once a tracking annotation is gone, nothing on the cluster remembers its value: the journal is
// that memory. For every object it holds the cluster it lives in, the Application it belonged to,
// its identity (group/version/resource, namespace, name, UID) and, for every label or annotation
// touched, the exact value before and after the patch (nil meaning "absent").
//
// # What a journal may contain
//
// Label and annotation keys and values unprune changed: Argo CD tracking values, sync and compare
// options, unprune's protection label. A change of kubectl's last-applied-configuration annotation
// (--scrub-last-applied), which embeds the whole object as it was applied (a Secret's data
// included), is recorded only as the keys removed from the embedded metadata and SHA-256 digests of
// the value before and after: no value of the object's data reaches the journal. Releasing Argo
// CD's field ownership records the removed metadata.managedFields entries of its field manager
// (argocd-controller) exactly, fieldsV1 included — field names, never values — so that undo can put
// them back; the other entries, which the patch sends unchanged, are not recorded. The journal also
// names the clusters (API server URL, kubeconfig context, Argo CD server) and the tool version.
// It never holds credentials.
//
// # Crash safety and speed
//
// A journal file is a typed, versioned JSON document (apiVersion unprune.dev/v1alpha2, kind
// Journal; JSON, which YAML readers read too, because encoding YAML cost more than the patches of a
// large run). Every entry is written as "planned" before anything is sent to the API server, and the
// file is on disk (fsynced) before the first patch. Outcomes are appended to the same file as
// one-line JSON records (group-committed: many marks share one write and fsync), so a run of
// thousands of patches does not rewrite the file thousands of times. A crash leaves the header and the marks written so
// far; at most the patches in flight remain "planned", which undo treats as "maybe applied" and
// decides from the live values. A re-planned entry (after a conflict) is appended and fsynced
// before its patch is sent. When a run ends the file is compacted into one document, atomically
// (temporary file, fsync, rename, directory fsync, as krew writes its receipts).
//
// # A journal is an input
//
// Undo acts on what a journal says, so a journal is checked like a key file: it must be owned by
// the user (or root) and writable by nobody else, as must its directory; loading is strict (unknown
// fields, another kind or a newer apiVersion are refused); and undo refuses to restore tracking
// metadata that names another app or another object than the entry's.
//
// # Versions
//
// The managedFields change (field "managedFields") was added to unprune.dev/v1alpha2 without a new
// version: journals written before it load unchanged, and an older unprune refuses a journal that
// holds one (strict decoding: unknown field "managedFields") rather than misreading it, so journals
// without it stay readable by older releases.
package journal
