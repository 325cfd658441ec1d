// Package journal records what unprune changes on live Kubernetes objects, so
// that `unprune undo` can put back exactly what was there.
//
// # Why a journal
//
// `unprune detach` removes Argo CD tracking labels and annotations from live
// objects (or, with --strategy keep, adds and merges annotations); `unprune
// guard` adds labels and annotations. Neither change can be reconstructed
// after the fact: once a tracking annotation is gone, nothing on the cluster
// remembers its value. The journal is that memory. For every object it holds
// the identity of the object (group/version/resource, namespace, name and UID)
// and, for every label or annotation touched, the exact value before and after
// the patch (nil meaning "absent"). Undo applies the inverse of each change
// (see [Change.Inverse]) and is guarded twice: by UID, so an object that was
// deleted and recreated under the same name is refused, and by current value,
// so a key someone has since set to something else is not overwritten.
//
// # Crash safety
//
// The journal is written before anything is sent to the API server: every
// entry starts in state "planned" ([StatePlanned]), and the file is on disk
// (fsynced) before the first patch. After each patch the entry is marked
// "applied" or "failed" and the file is saved again. A crash, a killed
// process or a lost connection between the two therefore leaves a record of
// every object that may have been changed; undo treats a planned entry as
// "maybe applied" and relies on its value guards to decide.
//
// Every write is atomic, modelled on krew's installation receipts: the
// document is written to a temporary file in the same directory, fsynced,
// renamed over the target and the directory is fsynced. A reader sees either
// the previous version or the new one, never a torn file. Files are created
// 0600 and the journal directory 0700, whatever the umask: label and
// annotation values (for example a last-applied-configuration) can carry
// sensitive data.
//
// # Format
//
// A journal is a typed, versioned YAML document (apiVersion
// unprune.dev/v1alpha1, kind Journal), one file per run, named <id>.yaml in
// the journal directory ([DefaultDir]: $XDG_STATE_HOME/unprune/journal or
// ~/.local/state/unprune/journal). IDs start with a UTC timestamp, so they
// sort chronologically. Loading is strict: unknown fields, another kind or a
// newer apiVersion are errors that say what is wrong, since guessing while
// undoing changes on a cluster is worse than refusing.
//
// # Concurrency
//
// A [Journal] is a plain value and not safe for concurrent use. Commands that
// patch objects concurrently go through a [Recorder], which serialises the
// Mark* transitions and saves the file atomically after each one (concurrent
// marks are coalesced into one write, and each call returns only once its own
// transition is on disk).
package journal
