// Package cli is unprune's command line: cobra wiring, flags parsed into typed requests, the engine
// called, and the results printed. Every command receives the Factory (the global flags, and the
// session made from them once, as kubectl's commands receive cmdutil.Factory). One file per verb,
// each an Options type run in three steps (runE): complete takes the session from the Factory — it
// reads the clusters file and connects to nothing —, Validate is pure (flags and arguments checked
// and parsed into a request), and Run does the work through the session and writes only to its
// streams. The work happens in the cobra-free packages beside this one.
package cli

import (
	"flag"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/unprune/unprune/internal/backend/kube"
	"github.com/unprune/unprune/internal/progress"
)

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
	return newRootCommand(name, newFactory(name, streams))
}

// newRootCommand builds the command tree over g (tests set its clock and session).
func newRootCommand(name string, g *factory) *cobra.Command {
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
