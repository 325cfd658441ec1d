// Package krew proves the krew manifest with krew itself. It is a Go module of its own because
// sigs.k8s.io/krew requires k8s.io/client-go v11.0.0+incompatible, which would replace the tool's
// client-go v0.35 in one module graph.
package krew
