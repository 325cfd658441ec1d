// Package cli is unprune's command line: cobra wiring, flags parsed into typed requests, the engine
// called, and the results printed. One file per verb, each an Options type run in three steps:
// Complete builds the session (package session) from the global flags — it reads the clusters file
// and connects to nothing —, Validate is pure (flags and arguments checked and parsed into a
// request), and Run does the work through the session and writes only to its streams. The work
// happens in the cobra-free packages beside this one.
package cli

import (
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/progress"
	"github.com/unprune/unprune/internal/session"
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
	// NewSession builds the session from the parsed flags; nil means session.New (the real
	// clusters). Tests give an in-memory one.
	NewSession func(session.Config) session.Session

	streams genericiooptions.IOStreams
	// cfg is what Complete parsed the global flags into; session is built from it.
	cfg     session.Config
	session session.Session
	// installed is the installation connect reached, for the reports that describe it.
	installed installation
	// program is how the user runs this binary, for the command lines messages recommend.
	program string
}

// installation is an Argo CD installation and its settings, as connect read them.
type installation struct {
	argo     cluster.ArgoCD
	settings cluster.Settings
}

// Binary names unprune runs as; each plugin name shows as its host command's subcommand.
const (
	NameUnprune       = "unprune"
	NameKubectlPlugin = "kubectl-unprune"
	NameArgoCDPlugin  = "argocd-unprune"
	displayKubectl    = "kubectl unprune"
	displayArgoCD     = "argocd unprune"
)

// displayName is how the user runs binary name: a plugin as its host command's subcommand.
func displayName(name string) string {
	switch name {
	case NameKubectlPlugin:
		return displayKubectl
	case NameArgoCDPlugin:
		return displayArgoCD
	}
	return name
}

// NewRootCommand builds a fresh command tree. name is the binary (unprune, kubectl-unprune or
// argocd-unprune): plugins name themselves as their host shows them, in help, errors and completion.
func NewRootCommand(name string, streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(name, newGlobalOptions(name, streams))
}

// newGlobalOptions are the global flags' defaults for the binary name.
func newGlobalOptions(name string, streams genericiooptions.IOStreams) *GlobalOptions {
	g := &GlobalOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		// No client-side rate limit, as controller-runtime sets none on SIG API Machinery's
		// advice (kubernetes-sigs/controller-runtime#3119): --workers bounds the requests in
		// flight, and the API server's Priority and Fairness paces them. --qps sets one.
		QPS:     -1,
		Burst:   2000,
		Via:     ViaKube,
		streams: streams,
		program: displayName(name),
	}
	if name == NameArgoCDPlugin {
		// As an argocd plugin, --server is the Argo CD server's, as for the argocd CLI.
		g.ConfigFlags.APIServer = nil
		g.Via = ViaArgoCD
	}
	return g
}

// newRootCommand builds the command tree over g (tests set its clock and session).
func newRootCommand(name string, g *GlobalOptions) *cobra.Command {
	streams := g.streams
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
		cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: displayName(name)}
		// A completion script generated here would be registered for kubectl (or argocd) itself and
		// replace that command's own: plugins complete through kubectl_complete-unprune instead
		// (kubectl 1.26+), which calls this binary's hidden __complete command.
		cmd.CompletionOptions.DisableDefaultCmd = true
	}
	flags := cmd.PersistentFlags()
	g.ConfigFlags.AddFlags(flags)
	flags.StringVar(&g.ArgoCDNamespace, "argocd-namespace", "", "namespace Argo CD runs in (default: found by the labels of argocd-cm, else \"argocd\")")
	flags.StringVar(&g.ArgoCDVersion, "argocd-version", "", "Argo CD version (e.g. v2.14.11) when it cannot be read from the application controller's image")
	flags.Float32Var(&g.QPS, "qps", g.QPS, "maximum requests per second to each API server; -1: no client-side limit (--workers bounds the requests in flight, the API server's Priority and Fairness paces them)")
	flags.IntVar(&g.Burst, "burst", g.Burst, "maximum burst of requests to each API server, with a positive --qps")
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
		NewExtensionCommand(g, streams),
		NewVersionCommand(g, streams),
	)
	if g.program != NameUnprune {
		nameTheProgram(cmd, g.program)
	}
	refuseUnknownShells(cmd, streams)
	return cmd
}

// refuseUnknownShells makes `completion SHELL` for a shell cobra cannot write a script for bad
// input: cobra's command prints its help and exits 0, and `source <(unprune completion tcsh)` then
// sources help text.
func refuseUnknownShells(root *cobra.Command, streams genericiooptions.IOStreams) {
	// cobra's completion commands take the root's output when they are made, not when they run.
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.InitDefaultCompletionCmd()
	c, _, err := root.Find([]string{"completion"})
	if err != nil || c == root {
		return // the plugins have none
	}
	var shells []string
	for _, sub := range c.Commands() {
		shells = append(shells, sub.Name())
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return usageError("no completion for shell %q: name one of %s", args[0], strings.Join(shells, ", "))
	}
}

// nameTheProgram rewrites the help's command lines, written for the standalone binary, as a plugin
// is run: its examples' lines and the commands its text quotes ("unprune undo" reverses it).
func nameTheProgram(cmd *cobra.Command, program string) {
	example := regexp.MustCompile(`(?m)^(\s*)` + NameUnprune + ` `)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Example = example.ReplaceAllString(c.Example, "${1}"+program+" ")
		c.Long = strings.ReplaceAll(c.Long, `"`+NameUnprune+` `, `"`+program+` `)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
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
	if g.session != nil {
		return g.session.Now()
	}
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *GlobalOptions) getenv(k string) string {
	if g.session != nil {
		return g.session.Getenv(k)
	}
	if g.Getenv != nil {
		return g.Getenv(k)
	}
	return os.Getenv(k)
}

// requestTimeout is --request-timeout, or 0.
func (g *GlobalOptions) requestTimeout() (time.Duration, error) {
	t := g.ConfigFlags.Timeout
	if t == nil || *t == "" || *t == "0" {
		return 0, nil
	}
	d, err := clientcmd.ParseTimeout(*t)
	if err != nil {
		return 0, usageError("--request-timeout=%q: use a duration such as 30s or 1m", *t)
	}
	return d, nil
}

// Complete parses the global flags into the session's configuration and builds the session, once.
// It reads the clusters file; it connects to nothing.
func (g *GlobalOptions) Complete() error {
	if g.session != nil {
		return nil
	}
	cfg, err := g.config()
	if err != nil {
		return err
	}
	g.cfg = cfg
	if g.NewSession != nil {
		g.session = g.NewSession(cfg)
	} else {
		g.session = session.New(cfg)
	}
	return nil
}

// config checks the global flags and turns them into the session's configuration.
func (g *GlobalOptions) config() (session.Config, error) {
	if g.ArgoCDContext != "" && g.Via == ViaKube {
		// Argo CD's cluster is the one commands start from: its context replaces --context.
		g.ConfigFlags.Context = &g.ArgoCDContext
	}
	cfg := session.Config{
		Kubeconfig: g.ConfigFlags, Via: session.Via(g.Via), API: g.API,
		ArgoCDNamespace: g.ArgoCDNamespace, ArgoCDContext: g.ArgoCDContext,
		QPS: g.QPS, Burst: g.Burst, FieldManager: g.FieldManager, JournalDir: g.JournalDir,
		ArgoCDCredentials: g.ClusterCredentials == "argocd",
		Warnings:          g.streams.ErrOut, Now: g.Now, Getenv: g.Getenv,
	}
	if (g.QPS <= 0 && g.QPS != -1) || g.Burst <= 0 {
		return cfg, usageError("--qps must be positive, or -1 for no client-side limit; --burst must be positive")
	}
	if err := g.validateClusterFlags(); err != nil {
		return cfg, err
	}
	contexts, err := g.clusterContexts()
	if err != nil {
		return cfg, err
	}
	cfg.ClusterContexts = contexts
	if g.ArgoCDVersion != "" {
		v, err := argocd.ParseVersion(g.ArgoCDVersion)
		if err != nil {
			return cfg, usageError("--argocd-version: %v", err)
		}
		cfg.ArgoCDVersion = &v
	}
	if cfg.RequestTimeout, err = g.requestTimeout(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// validateClusterFlags checks how Argo CD and the destination clusters are to be reached.
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
	return nil
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

// connect reaches Argo CD and reads its tracking settings: what most commands do first.
func (g *GlobalOptions) connect(ctx context.Context) (cluster.ArgoCD, argocd.Settings, error) {
	return g.connectReading(ctx, nil)
}

// connectReading is connect, running read — a read that needs the installation but not its
// settings, such as the apps a command names — while the settings are read: both are round trips
// that every command waits for before it plans. An installation that learns its namespace from its
// settings (through argocd-server) is read after them: the apps default to that namespace. read
// keeps its own outcome; connect's error comes first.
func (g *GlobalOptions) connectReading(ctx context.Context, read func(context.Context, cluster.ArgoCD)) (cluster.ArgoCD, argocd.Settings, error) {
	argo, err := g.session.ArgoCD(ctx)
	if err != nil {
		return nil, argocd.Settings{}, failure(err)
	}
	if read == nil {
		read = func(context.Context, cluster.ArgoCD) {}
	}
	var s cluster.Settings
	if settling, ok := argo.(cluster.SettlingNamespace); ok && !settling.NamespaceSettled() {
		if s, err = g.session.Settings(ctx); err == nil {
			read(ctx, argo)
		}
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			read(ctx, argo)
		}()
		s, err = g.session.Settings(ctx)
		<-done
	}
	if err != nil {
		return nil, argocd.Settings{}, failure(err)
	}
	g.installed = installation{argo: argo, settings: s}
	return argo, s.Settings, nil
}

// journals is the journal store.
func (g *GlobalOptions) journals() (*journal.Store, error) {
	store, err := g.session.Journals()
	if err != nil {
		return nil, usageError("%v", err)
	}
	return store, nil
}

// engine builds the engine for a command.
func (g *GlobalOptions) engine(argo cluster.ArgoCD, s argocd.Settings, workers int) (*engine.Engine, error) {
	store, err := g.journals()
	if err != nil {
		return nil, err
	}
	return &engine.Engine{ArgoCD: argo, Settings: s, Journals: store, Workers: workers, ToolVersion: version.Get().String(), Now: g.Now, CompactWhileReporting: true,
		Connect: g.session.Recorded, ArgoCDOf: g.session.JournalArgoCD}, nil
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
