// Package exposition is what the watch shows: its Prometheus metrics, with the per-app series it
// writes itself, and the Events it sends on Applications at each transition, both built from the
// per-app Summary of audit's rows. It reads nothing from the cluster itself: the watch hands it each
// evaluation's rows and what could not be read, and the functions that write and list Events.
package exposition
