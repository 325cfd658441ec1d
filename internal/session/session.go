// Package session is what every command works through, as kubectl's Factory is for kubectl: the
// global configuration parsed from the flags, and the connections made from it, each once — the
// clients of the kubeconfig's cluster, the Argo CD backend (the Kubernetes API, or argocd-server's
// API), the clusters Argo CD deploys to and those a journal recorded, and the journal store.
//
// Commands hold a Session and never decide how a cluster is reached. Connections are made on first
// use, so building a Session (in a command's Complete) talks to nothing. Tests hand the commands
// an in-memory Session (package sessiontest).
package session

import (
	"context"
	"time"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// Session connects a command to Argo CD and the clusters. Methods are safe for concurrent use.
type Session interface {
	// Now is the clock.
	Now() time.Time
	// Getenv reads the environment.
	Getenv(key string) string

	// Home is the cluster of the kubeconfig's context: where guards are applied by default.
	Home(ctx context.Context) (cluster.Objects, error)
	// ArgoCD is the installation the flags name (or that is found).
	ArgoCD(ctx context.Context) (cluster.ArgoCD, error)
	// Settings are the installation's tracking settings, the version the user gave winning over
	// detection. Warnings found reading them are written once.
	Settings(ctx context.Context) (cluster.Settings, error)
	// Destination is a cluster as Argo CD names it (by name, or server URL), reached the way this
	// session reaches Argo CD's destinations: the cluster Argo CD runs in, a kubeconfig context
	// mapped to it, or Argo CD's own credentials when the user allowed them.
	Destination(ctx context.Context, c cluster.Info) (cluster.Objects, error)

	// Recorded reaches a cluster a journal entry was changed in, the way it was reached then (the
	// same kubeconfig context talking to the same API server, Argo CD's credentials when allowed
	// again, or Argo CD's API as the entry's Application). app is the entry's Application, if any.
	Recorded(ctx context.Context, c cluster.Info, app *journal.AppRef) (cluster.Objects, error)
	// JournalArgoCD is the installation a journal recorded, checked to be the one this session
	// reaches (same namespace, same API server).
	JournalArgoCD(ctx context.Context, j *journal.Journal) (cluster.ArgoCD, error)
	// Journals is the journal store.
	Journals() (*journal.Store, error)

	// Oracle is argocd-server's API for the installation in namespace, to ask Argo CD itself (its
	// rendering of a revision, its ApplicationSet generation) whichever backend reads the rest:
	// nil when the configuration names no server (Config.ServerNamed).
	Oracle(namespace string) (cluster.Oracle, error)
}
