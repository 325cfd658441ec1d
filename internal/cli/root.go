// Package cli is unprune's command line: cobra wiring, flags parsed into typed requests, the engine
// called, and the results printed. One file per verb, each an Options type with Complete (resolve
// clients, after flags are parsed), Validate (pure) and Run (writes only to its streams). The work
// happens in the cobra-free packages beside this one.
package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/argocdapi"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/kube"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/progress"
	"github.com/unprune/unprune/internal/version"
)

// GlobalOptions are the flags every command shares, and the connections made from them, once.
type GlobalOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	ArgoCDNamespace string
	ArgoCDVersion   string
	QPS             float32
	Burst           int
	JournalDir      string
	FieldManager    string

	// Destination clusters: --cluster-context NAME_OR_SERVER=CONTEXT, a --clusters-file with many,
	// or --cluster-credentials=argocd to use Argo CD's own.
	ClusterContexts    []string
	ClustersFile       string
	ClusterCredentials string
	ArgoCDContext      string

	// Via is how Argo CD and the clusters are reached: "kube" (the kubeconfig) or "argocd"
	// (argocd-server's API, with its credentials and under its RBAC).
	Via string
	API argocdapi.Options

	// Injected for tests; nil means the real thing.
	Now    func() time.Time
	Getenv func(string) string

	streams  genericiooptions.IOStreams
	clients  *kube.Clients
	argo     cluster.ArgoCD
	settings *cluster.Settings
	api      *argocdapi.Client
}

// Binary names unprune runs as; each plugin name shows as its host command's subcommand.
const (
	NameUnprune        = "unprune"
	NameKubectlPlugin  = "kubectl-unprune"
	NameArgoCDPlugin   = "argocd-unprune"
	displayKubectl     = "kubectl unprune"
	displayArgoCD      = "argocd unprune"
	defaultArgoCDSpace = "argocd"
)

// NewRootCommand builds a fresh command tree. name is the binary (unprune, kubectl-unprune or
// argocd-unprune): plugins name themselves as their host shows them, in help, errors and completion.
func NewRootCommand(name string, streams genericiooptions.IOStreams) *cobra.Command {
	g := &GlobalOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		QPS:         1000,
		Burst:       2000,
		Via:         ViaKube,
		streams:     streams,
	}
	if name == NameArgoCDPlugin {
		// As an argocd plugin, --server is the Argo CD server's, as for the argocd CLI.
		g.ConfigFlags.APIServer = nil
		g.Via = ViaArgoCD
	}
	cmd := &cobra.Command{
		Use:   name,
		Short: "Release Argo CD resources stuck on \"requires pruning\" without deleting anything",
		Long: `unprune finds Argo CD Applications stuck OutOfSync because a resource "requires pruning"
(it was removed from git but still exists), and releases such resources from Argo CD without
deleting or otherwise changing them: it removes exactly the tracking metadata Argo CD reads, for
the tracking method and settings of your installation, with a preview, a server-side dry-run,
optimistic concurrency, a journal and an exact undo. It also shows what any prune would delete
and puts guards in place.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Long reads and writes show how far they have come on a terminal's stderr; scripts, and
		// -v's request logs, get no progress line.
		PersistentPreRun: func(c *cobra.Command, _ []string) {
			if isTerminal(streams.ErrOut) && !verbose(c) {
				c.SetContext(progress.NewContext(c.Context(), progress.New(streams.ErrOut)))
			}
		},
	}
	switch name {
	case NameKubectlPlugin, NameArgoCDPlugin:
		display := map[string]string{NameKubectlPlugin: displayKubectl, NameArgoCDPlugin: displayArgoCD}[name]
		cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: display}
		// A completion script generated here would be registered for kubectl (or argocd) itself and
		// replace that command's own: plugins complete through kubectl_complete-unprune instead
		// (kubectl 1.26+), which calls this binary's hidden __complete command.
		cmd.CompletionOptions.DisableDefaultCmd = true
	}
	flags := cmd.PersistentFlags()
	g.ConfigFlags.AddFlags(flags)
	flags.StringVar(&g.ArgoCDNamespace, "argocd-namespace", "", "namespace Argo CD runs in (default: found by the labels of argocd-cm, else \"argocd\")")
	flags.StringVar(&g.ArgoCDVersion, "argocd-version", "", "Argo CD version (e.g. v2.14.11) when it cannot be read from the application controller's image")
	flags.Float32Var(&g.QPS, "qps", g.QPS, "maximum requests per second to each API server")
	flags.IntVar(&g.Burst, "burst", g.Burst, "maximum burst of requests to each API server")
	flags.StringVar(&g.JournalDir, "journal-dir", "", "where journals are written (default $XDG_STATE_HOME/unprune/journal)")
	flags.StringVar(&g.FieldManager, "field-manager", kube.FieldManager, "name of the manager of unprune's writes (managedFields)")
	flags.StringVar(&g.ArgoCDContext, "argocd-context", "", "kubeconfig context of the cluster Argo CD runs in (default: --context, else the current context)")
	flags.StringArrayVar(&g.ClusterContexts, "cluster-context", nil, "reach a destination cluster with a context of your kubeconfig, as NAME_OR_SERVER=CONTEXT (Argo CD's cluster name or server URL); repeatable")
	flags.StringVar(&g.ClustersFile, "clusters-file", "", "a file mapping many destination clusters to kubeconfig contexts (see docs/clusters.md)")
	flags.StringVar(&g.ClusterCredentials, "cluster-credentials", "", `"argocd": reach destination clusters with the credentials in Argo CD's cluster Secrets (reads Secrets; never the default)`)
	addArgoCDAPIFlags(flags, g, name == NameArgoCDPlugin)
	addVerbosity(cmd)

	cmd.AddCommand(
		NewScanCommand(g, streams),
		NewDetachCommand(g, streams),
		NewMoveCommand(g, streams),
		NewRenameCommand(g, streams),
		NewUndoCommand(g, streams),
		NewAuditCommand(g, streams),
		NewGuardCommand(g, streams),
		NewCheckCommand(g, streams),
		NewWatchCommand(g, streams),
		NewVersionCommand(g, streams),
	)
	return cmd
}

// addVerbosity adds kubectl's -v: client-go logs each request from level 6 on.
func addVerbosity(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if v := fs.Lookup("v"); v != nil {
		cmd.PersistentFlags().AddGoFlag(v)
	}
}

// verbose reports whether -v asked for client-go's logs.
func verbose(c *cobra.Command) bool {
	v := c.Flags().Lookup("v")
	return v != nil && v.Value.String() != "0"
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

// requestTimeout is --request-timeout, or 0.
func (g *GlobalOptions) requestTimeout() time.Duration {
	if g.ConfigFlags.Timeout == nil || *g.ConfigFlags.Timeout == "" || *g.ConfigFlags.Timeout == "0" {
		return 0
	}
	d, err := time.ParseDuration(*g.ConfigFlags.Timeout)
	if err != nil {
		return 0
	}
	return d
}

// Clients connects to the cluster of the kubeconfig's context, once, checking with one request that
// it answers.
func (g *GlobalOptions) Clients(ctx context.Context) (*kube.Clients, error) {
	if g.clients != nil {
		return g.clients, nil
	}
	if g.QPS <= 0 || g.Burst <= 0 {
		return nil, usageError("--qps and --burst must be positive")
	}
	if g.ArgoCDContext != "" && g.Via == ViaKube {
		g.ConfigFlags.Context = &g.ArgoCDContext
	}
	cfg, err := g.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, usageError("cannot build a client from your kubeconfig: %v (set --kubeconfig or --context)", err)
	}
	mapper, err := g.ConfigFlags.ToRESTMapper()
	if err != nil {
		return nil, failure(err)
	}
	info := cluster.Info{Name: argocd.InClusterName, Server: argocd.InClusterServer, URL: cfg.Host, Via: cluster.ViaKubeconfig, Context: g.contextName()}
	c, err := kube.NewClients(cfg, info, mapper, kube.Options{QPS: g.QPS, Burst: g.Burst})
	if err != nil {
		return nil, failure(err)
	}
	if err := c.Ping(ctx, g.requestTimeout()); err != nil {
		return nil, failure(fmt.Errorf("%w (check --context/--kubeconfig, the network or VPN)", err))
	}
	g.clients = c
	return c, nil
}

func (g *GlobalOptions) contextName() string {
	if g.ConfigFlags.Context != nil && *g.ConfigFlags.Context != "" {
		return *g.ConfigFlags.Context
	}
	if raw, err := g.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		return raw.CurrentContext
	}
	return ""
}

// ArgoCD is the Argo CD installation: found in the current context's cluster, or argocd-server's
// API with --via argocd.
func (g *GlobalOptions) ArgoCD(ctx context.Context) (cluster.ArgoCD, error) {
	if g.argo != nil {
		return g.argo, nil
	}
	if g.Via == ViaArgoCD {
		c, err := g.apiClient()
		if err != nil {
			return nil, err
		}
		fallback := g.ArgoCDNamespace
		if fallback == "" {
			fallback = defaultArgoCDSpace
		}
		g.argo = argocdapi.NewArgoCD(c, fallback)
		return g.argo, nil
	}
	c, err := g.Clients(ctx)
	if err != nil {
		return nil, err
	}
	objects := kube.NewObjects(c, g.FieldManager)
	ns := g.ArgoCDNamespace
	if ns == "" {
		var note string
		ns, note = kube.FindNamespace(ctx, objects, defaultArgoCDSpace)
		if note != "" {
			fmt.Fprintln(g.streams.ErrOut, "warning:", note)
		}
	}
	dests, err := g.destinations(objects, ns)
	if err != nil {
		return nil, err
	}
	g.argo = &kube.ArgoCD{Objects: objects, Ns: ns, Destinations: dests}
	return g.argo, nil
}

// apiClient connects to argocd-server, once.
func (g *GlobalOptions) apiClient() (*argocdapi.Client, error) {
	if g.api != nil {
		return g.api, nil
	}
	opts := g.API
	opts.Getenv, opts.Timeout = g.getenv, g.requestTimeout()
	if opts.Context == "" {
		opts.Context = g.ArgoCDContext
	}
	c, err := argocdapi.Connect(opts)
	if err != nil {
		return nil, usageError("%v", err)
	}
	g.api = c
	return c, nil
}

// destinations builds the resolver of destination clusters from the flags.
func (g *GlobalOptions) destinations(management *kube.Objects, namespace string) (*kube.Destinations, error) {
	contexts, err := g.clusterContexts()
	if err != nil {
		return nil, err
	}
	return &kube.Destinations{
		Management: management, Namespace: namespace, Contexts: contexts,
		ArgoCDCredentials: g.ClusterCredentials == "argocd", FromContext: g.fromContext,
		Options: kube.Options{QPS: g.QPS, Burst: g.Burst}, FieldManager: g.FieldManager,
	}, nil
}

// validateClusterFlags checks the destination-cluster flags before anything connects.
func (g *GlobalOptions) validateClusterFlags() error {
	switch g.Via {
	case ViaKube:
	case ViaArgoCD:
		if len(g.ClusterContexts) > 0 || g.ClustersFile != "" || g.ClusterCredentials != "" {
			return usageError("--via argocd reaches every cluster through Argo CD's API: leave out --cluster-context, --clusters-file and --cluster-credentials")
		}
	default:
		return usageError(`--via=%q: use "kube" (your kubeconfig) or "argocd" (Argo CD's API)`, g.Via)
	}
	switch g.ClusterCredentials {
	case "", "argocd":
	default:
		return usageError(`--cluster-credentials=%q: the only value is "argocd" (use Argo CD's cluster Secrets); leave it out to use your kubeconfig`, g.ClusterCredentials)
	}
	_, err := g.clusterContexts()
	return err
}

// clusterContexts reads --cluster-context and --clusters-file.
func (g *GlobalOptions) clusterContexts() (map[string]string, error) {
	out := map[string]string{}
	for _, m := range g.ClusterContexts {
		key, context, ok := strings.Cut(m, "=")
		if !ok || key == "" || context == "" {
			return nil, usageError("--cluster-context %q: use NAME_OR_SERVER=CONTEXT, e.g. prod-eu=prod-eu-admin", m)
		}
		out[key] = context
	}
	if g.ClustersFile != "" {
		file, err := readClustersFile(g.ClustersFile)
		if err != nil {
			return nil, usageError("--clusters-file: %v", err)
		}
		for k, v := range file {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	}
	return out, nil
}

// fromContext builds a client configuration from the user's kubeconfig with another context.
func (g *GlobalOptions) fromContext(context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.ConfigFlags.KubeConfig != nil && *g.ConfigFlags.KubeConfig != "" {
		rules.ExplicitPath = *g.ConfigFlags.KubeConfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	if d := g.requestTimeout(); d > 0 {
		overrides.Timeout = d.String()
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// connect reaches Argo CD and reads its tracking settings: what every command does first.
func (g *GlobalOptions) connect(ctx context.Context) (cluster.ArgoCD, argocd.Settings, error) {
	argo, err := g.ArgoCD(ctx)
	if err != nil {
		return nil, argocd.Settings{}, err
	}
	s, err := g.Settings(ctx, argo)
	return argo, s, err
}

// Settings reads Argo CD's tracking settings, once.
func (g *GlobalOptions) Settings(ctx context.Context, argo cluster.ArgoCD) (argocd.Settings, error) {
	if g.settings != nil {
		return g.settings.Settings, nil
	}
	var v *argocd.Version
	if g.ArgoCDVersion != "" {
		parsed, err := argocd.ParseVersion(g.ArgoCDVersion)
		if err != nil {
			return argocd.Settings{}, usageError("--argocd-version: %v", err)
		}
		v = &parsed
	}
	s, err := argo.Settings(ctx, v)
	if err != nil {
		return argocd.Settings{}, failure(err)
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(g.streams.ErrOut, "warning:", printer.Line(w))
	}
	g.settings = &s
	return s.Settings, nil
}

// validateArgoCDVersion checks --argocd-version (and the cluster flags) before anything connects.
func (g *GlobalOptions) validateArgoCDVersion() error {
	if err := g.validateClusterFlags(); err != nil {
		return err
	}
	if g.ArgoCDVersion == "" {
		return nil
	}
	if _, err := argocd.ParseVersion(g.ArgoCDVersion); err != nil {
		return usageError("--argocd-version: %v", err)
	}
	return nil
}

// journals is the journal store.
func (g *GlobalOptions) journals() (*journal.Store, error) {
	dir := g.JournalDir
	if dir == "" {
		var err error
		if dir, err = journal.DefaultDir(g.getenv, os.UserHomeDir); err != nil {
			return nil, usageError("%v (set --journal-dir)", err)
		}
	}
	return journal.NewStore(dir, g.now), nil
}

// engine builds the engine for a command.
func (g *GlobalOptions) engine(argo cluster.ArgoCD, s argocd.Settings, workers int) (*engine.Engine, error) {
	store, err := g.journals()
	if err != nil {
		return nil, err
	}
	return &engine.Engine{ArgoCD: argo, Settings: s, Journals: store, Workers: workers, ToolVersion: version.Get().String(), Now: g.Now, Words: engineWords}, nil
}

// metadata starts every document.
func (g *GlobalOptions) metadata(c *cluster.Info) printer.Metadata {
	m := printer.Metadata{GeneratedAt: g.now().UTC().Truncate(time.Second), ToolVersion: version.Get().String()}
	if c != nil {
		ref := printer.NewClusterRef(*c)
		m.Cluster = &ref
	}
	return m
}

// namespaceFlag returns -n when the user set it.
func (g *GlobalOptions) namespaceFlag() (string, bool) {
	if g.ConfigFlags.Namespace != nil && *g.ConfigFlags.Namespace != "" {
		return *g.ConfigFlags.Namespace, true
	}
	return "", false
}
