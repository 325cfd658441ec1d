// Package cli wires unprune's commands with cobra: one file per verb, each an Options type with
// Complete (resolve clients, after flags are parsed), Validate (pure) and Run (writes only to its
// streams). The engine lives in the cobra-free packages beside this one.
package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// GlobalOptions are the flags every command shares.
type GlobalOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	ArgoCDNamespace string
	ArgoCDVersion   string
	QPS             float32
	Burst           int
	JournalDir      string

	// Injected for tests; nil means the real thing.
	Now    func() time.Time
	Getenv func(string) string
}

// NewRootCommand builds the command tree. name is how the binary was invoked (unprune, or
// kubectl-unprune as a kubectl plugin), used in help text.
func NewRootCommand(name string, streams genericiooptions.IOStreams) *cobra.Command {
	g := &GlobalOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		QPS:         50,
		Burst:       100,
	}
	use := name
	if name == "kubectl-unprune" {
		use = "kubectl unprune"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: "Release Argo CD resources stuck on \"requires pruning\" without deleting anything",
		Long: `unprune finds Argo CD Applications stuck OutOfSync because a resource "requires pruning"
(it was removed from git but still exists), and releases such resources from Argo CD without
deleting or otherwise changing them: it removes exactly the tracking metadata Argo CD reads, for
the tracking method and settings of your installation, with a preview, a server-side dry-run,
optimistic concurrency, a journal and an exact undo.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags := cmd.PersistentFlags()
	g.ConfigFlags.AddFlags(flags)
	flags.StringVar(&g.ArgoCDNamespace, "argocd-namespace", "", "namespace Argo CD runs in (default: found by the labels of argocd-cm, else \"argocd\")")
	flags.StringVar(&g.ArgoCDVersion, "argocd-version", "", "Argo CD version (e.g. v2.14.11) when it cannot be read from the application controller's image")
	flags.Float32Var(&g.QPS, "qps", g.QPS, "maximum requests per second to the API server")
	flags.IntVar(&g.Burst, "burst", g.Burst, "maximum burst of requests to the API server")
	flags.StringVar(&g.JournalDir, "journal-dir", "", "where journals are written (default $XDG_STATE_HOME/unprune/journal)")

	cmd.AddCommand(
		NewScanCommand(g, streams),
		NewDetachCommand(g, streams),
		NewUndoCommand(g, streams),
		NewAuditCommand(g, streams),
		NewGuardCommand(g, streams),
	)
	return cmd
}

// session is what a command needs to talk to the cluster and Argo CD, resolved in Complete.
type session struct {
	Client          *cluster.Client
	Settings        argocd.Settings
	ArgoCDNamespace string
	Server          string
	Context         string
}

func (g *GlobalOptions) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *GlobalOptions) getenv(k string) string {
	if g.Getenv != nil {
		return g.Getenv(k)
	}
	return os.Getenv(k)
}

// connect builds the clients and reads Argo CD's settings. Notes go to stderr.
func (g *GlobalOptions) connect(ctx context.Context, streams genericiooptions.IOStreams) (*session, error) {
	var version *argocd.Version
	if g.ArgoCDVersion != "" {
		v, err := argocd.ParseVersion(g.ArgoCDVersion)
		if err != nil {
			return nil, usageError("--argocd-version: %v", err)
		}
		version = &v
	}
	if g.QPS <= 0 || g.Burst <= 0 {
		return nil, usageError("--qps and --burst must be positive")
	}
	restCfg, err := g.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, usageError("cannot build a client from your kubeconfig: %v (set --kubeconfig or --context)", err)
	}
	restCfg.QPS, restCfg.Burst = g.QPS, g.Burst
	restCfg.UserAgent = "unprune"
	mapper, err := g.ConfigFlags.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamicFor(restCfg)
	if err != nil {
		return nil, err
	}
	c := &cluster.Client{Dynamic: dyn, Mapper: mapper}
	s := &session{Client: c, Server: restCfg.Host}
	if raw, err := g.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		s.Context = raw.CurrentContext
		if g.ConfigFlags.Context != nil && *g.ConfigFlags.Context != "" {
			s.Context = *g.ConfigFlags.Context
		}
	}
	s.ArgoCDNamespace = g.ArgoCDNamespace
	if s.ArgoCDNamespace == "" {
		ns, note := c.FindArgoCDNamespace(ctx, "argocd")
		if note != "" {
			fmt.Fprintln(streams.ErrOut, "warning:", note)
		}
		s.ArgoCDNamespace = ns
	}
	s.Settings, err = c.Settings(ctx, s.ArgoCDNamespace, version)
	if err != nil {
		return nil, &ExitError{Code: ExitFailure, Err: err}
	}
	if s.Settings.Ambiguous {
		fmt.Fprintf(streams.ErrOut, "warning: %s; pass --argocd-version to be exact\n", s.Settings.MethodSource)
	}
	return s, nil
}

func (g *GlobalOptions) journalStore() (*journal.Store, error) {
	dir := g.JournalDir
	if dir == "" {
		var err error
		dir, err = journal.DefaultDir(g.getenv, os.UserHomeDir)
		if err != nil {
			return nil, err
		}
	}
	return journal.NewStore(dir, g.now), nil
}

// namespaceFlag returns -n when the user set it.
func (g *GlobalOptions) namespaceFlag() (string, bool) {
	if g.ConfigFlags.Namespace != nil && *g.ConfigFlags.Namespace != "" {
		return *g.ConfigFlags.Namespace, true
	}
	return "", false
}

// applicationScope is where to list Applications: -A for all namespaces, else -n, else Argo CD's own.
func (g *GlobalOptions) applicationScope(s *session, all bool) string {
	if all {
		return ""
	}
	if ns, set := g.namespaceFlag(); set {
		return ns
	}
	return s.ArgoCDNamespace
}

func (g *GlobalOptions) validateScope(all bool) error {
	if _, set := g.namespaceFlag(); set && all {
		return usageError("-n and -A exclude each other: pick one")
	}
	return nil
}

// splitAppRef accepts NAME or NAMESPACE/NAME.
func splitAppRef(s string) (ns, name string) {
	if i := strings.Index(s, "/"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

func dynamicFor(cfg *rest.Config) (dynamic.Interface, error) { return dynamic.NewForConfig(cfg) }
