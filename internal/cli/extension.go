package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/unprune/unprune/internal/extension"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/journal/cmstore"
	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/version"
)

// ExtensionOptions are `unprune extension`'s inputs.
type ExtensionOptions struct {
	completed
	genericiooptions.IOStreams

	Listen            string
	TokenFile         string
	JournalNamespace  string
	MaxJournals       int
	MaxJournalsPerApp int

	config extension.Config
}

// tokenEnv holds the token when no --token-file is given.
const tokenEnv = "UNPRUNE_EXTENSION_TOKEN"

// defaultJournalNamespace is where the backend journals unless told otherwise: a namespace of its
// own (deploy/ui-extension/journals), never Argo CD's.
const defaultJournalNamespace = "unprune"

// NewExtensionCommand builds `unprune extension`.
func NewExtensionCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExtensionOptions{IOStreams: streams, Listen: "127.0.0.1:8080", JournalNamespace: defaultJournalNamespace,
		MaxJournals: extension.DefaultMaxJournals, MaxJournalsPerApp: extension.DefaultMaxJournalsPerApp}
	cmd := &cobra.Command{
		Use:   "extension",
		Short: "Serve the backend of unprune's Argo CD UI extension (read-only, long-running)",
		Long: `Serve the backend that argocd-server's proxy extension forwards unprune's UI extension to: for
each Application, what a prune would delete and what guards it (audit's answer), whether deleting
the app cascades into high-risk resources, and for a resource requiring pruning the release plan
with its metadata diff — the same plan as unprune detach.

It changes no resource: the browser sends each release to argocd-server's own API with the user's
session, so Argo CD's RBAC for that user decides (applications, update on the app). It writes only
the journal of each release made in the UI, in ConfigMaps of --journal-namespace (before the patch,
then completed from what the cluster shows), where ` + "`unprune undo --journal-dir configmaps:NAMESPACE`" + `
finds them: a namespace of its own, not Argo CD's. It writes at most --max-journals journals there,
and --max-journals-per-app for one Application; at either bound the UI's releases are refused
until an operator removes journals no longer needed for undo (nothing deletes them).

Requests must carry the token that argocd-server adds from its extension config (header
Unprune-Token, a key of argocd-secret); give the same token in --token-file or $` + tokenEnv + `.
A --token-file is read again when it changes (a mounted Secret that was rotated).
Out of the cluster it uses your kubeconfig; in a pod, its ServiceAccount. See docs/ui.md and
deploy/components/ui-extension.`,
		Example: `  # As deploy/components/ui-extension runs it
  unprune extension --listen :8080 --token-file /etc/unprune-extension/token --argocd-namespace argocd --journal-namespace unprune

  # On a laptop, against the lab
  UNPRUNE_EXTENSION_TOKEN=secret unprune extension --argocd-namespace argocd --journal-namespace argocd-unprune`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(f); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.Listen, "listen", o.Listen, "address to serve on (:8080 in a pod)")
	flags.StringVar(&o.TokenFile, "token-file", "", "file holding the token argocd-server sends in header Unprune-Token (default $"+tokenEnv+")")
	flags.StringVar(&o.JournalNamespace, "journal-namespace", o.JournalNamespace, "namespace of the ConfigMaps journaling UI releases: the backend's own, never Argo CD's")
	flags.IntVar(&o.MaxJournals, "max-journals", o.MaxJournals, "the most journals the backend keeps in --journal-namespace: at this many, releases in the UI are refused")
	flags.IntVar(&o.MaxJournalsPerApp, "max-journals-per-app", o.MaxJournalsPerApp, "the most journals of one Application's releases in the UI: at this many, its releases are refused")
	return cmd
}

// complete reads the token, and takes the session and the kubeconfig's client from f for the
// journal store.
func (o *ExtensionOptions) complete(f Factory) error {
	if !f.Capabilities().KubernetesAPI {
		return usageError("unprune extension reads Argo CD through the Kubernetes API: --via argocd is not supported (the browser talks to argocd-server)")
	}
	if err := o.completed.complete(f); err != nil {
		return err
	}
	token := o.session.Getenv(tokenEnv)
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return usageError("--token-file: %v", err)
		}
		token = string(b)
	}
	if strings.TrimSpace(token) == "" {
		return usageError("no token: put the value argocd-server sends in header Unprune-Token (the argocd-secret key its extension.config.unprune names) in --token-file or $%s; see docs/ui.md", tokenEnv)
	}
	ns := o.JournalNamespace
	switch {
	case ns == "":
		return usageError("--journal-namespace: name the namespace of the journals (deploy/ui-extension/journals makes %q)", defaultJournalNamespace)
	case ns == o.cfg.ArgoCDNamespace:
		return usageError("--journal-namespace %s is Argo CD's namespace: the backend may write ConfigMaps where it journals, and must not be able to write argocd-cm or argocd-rbac-cm; use a namespace of its own (deploy/ui-extension/journals)", ns)
	case o.MaxJournals < 1 || o.MaxJournalsPerApp < 1:
		return usageError("--max-journals and --max-journals-per-app must be at least 1")
	}
	rest, err := f.ToRESTConfig()
	if err != nil {
		return usageError("cannot build a client from your kubeconfig or the pod's ServiceAccount: %v (set --kubeconfig)", err)
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return failure(err)
	}
	o.config = extension.Config{
		Session: o.session,
		Journals: func(requestedBy string) *journal.Store {
			cms := cmstore.New(client, ns)
			cms.RequestedBy, cms.FieldManager = requestedBy, o.cfg.FieldManager
			return journal.NewBackedStore(cms, o.cfg.Now)
		},
		JournalNamespace: ns,
		UndoCommand: func(id string) string {
			return fmt.Sprintf("%s undo --journal-dir %s%s %s --yes", o.program, cmstore.Scheme, ns, id)
		},
		MaxJournals:       o.MaxJournals,
		MaxJournalsPerApp: o.MaxJournalsPerApp,
		// What reaches another cluster than Argo CD's: its cluster Secrets, a context of the
		// kubeconfig, or Argo CD's API (which reaches every cluster Argo CD does).
		RemoteDestinations: o.cfg.ArgoCDCredentials || len(o.cfg.ClusterContexts) > 0 || o.cfg.Via == session.ViaArgoCD,
		ToolVersion:        version.Get().String(),
		Now:                o.cfg.Now,
		Log:                o.ErrOut,
	}
	// A token file is read again when it changes; one from the environment cannot change.
	if o.TokenFile != "" {
		o.config.TokenFile = o.TokenFile
	} else {
		o.config.Token = token
	}
	return nil
}

// Run serves until interrupted.
func (o *ExtensionOptions) Run(ctx context.Context) error {
	if err := extension.Serve(ctx, o.Listen, o.config); err != nil {
		return failure(err)
	}
	return nil
}
