package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/printer"
)

// outputFlags are -o and --no-headers, parsed in Validate.
type outputFlags struct {
	value     string
	noHeaders bool
	wide      bool
	out       printer.Output
}

func (f *outputFlags) add(cmd *cobra.Command, wide bool) {
	f.wide = wide
	formats := "table, json, yaml, name, jsonpath=…, go-template=…"
	if wide {
		formats = "table, wide, json, yaml, name, jsonpath=…, go-template=…"
	}
	cmd.Flags().StringVarP(&f.value, "output", "o", "", "output format: "+formats)
	cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "print tables without headers")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		out := []string{"table", "json", "yaml", "name", "jsonpath=", "go-template="}
		if wide {
			out = append(out, "wide")
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

func (f *outputFlags) validate() error {
	out, err := printer.ParseOutput(f.value, f.wide, f.noHeaders)
	if err != nil {
		return usageError("%v", err)
	}
	f.out = out
	return nil
}

// changeFlags are --dry-run and --yes, for every command that changes something.
type changeFlags struct {
	dryRunValue string
	yes         bool
	dryRun      engine.DryRun
}

func (f *changeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dryRunValue, "dry-run", "", `"client" previews (the default without --yes); "server" sends every patch with dryRun=All, so the API server and its admission checks judge it and nothing persists; "none" applies (with --yes)`)
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "apply without asking")
	_ = cmd.RegisterFlagCompletionFunc("dry-run", fixedCompletion("client", "server", "none"))
}

func (f *changeFlags) validate() error {
	d, err := parseDryRun(f.dryRunValue, f.yes)
	if err != nil {
		return usageError("%v", err)
	}
	f.dryRun = d
	return nil
}

// parseDryRun reads a --dry-run value; "" means the default (client, or none with --yes).
func parseDryRun(s string, yes bool) (engine.DryRun, error) {
	switch s {
	case "":
		if yes {
			return engine.DryRunNone, nil
		}
		return engine.DryRunClient, nil
	case "client":
		return engine.DryRunClient, nil
	case "server":
		return engine.DryRunServer, nil
	case "none":
		if !yes {
			return 0, fmt.Errorf("--dry-run=none applies changes: add --yes to confirm")
		}
		return engine.DryRunNone, nil
	}
	return 0, fmt.Errorf(`--dry-run=%q: use "client" (preview), "server" (the API server judges, nothing persists) or "none" (apply, with --yes)`, s)
}

// selectionFlags choose Applications: APP arguments, or -A, -n, -l and --project.
type selectionFlags struct {
	allNamespaces bool
	selector      string
	projects      []string
}

func (f *selectionFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "Applications in every namespace Argo CD reconciles them in: its own and those application.namespaces names (apps in any namespace)")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "only Applications with these labels (a label selector, as kubectl -l)")
	cmd.Flags().StringSliceVar(&f.projects, "project", nil, "only Applications of these projects (repeatable)")
}

func (f *selectionFlags) validate(c *completed) error {
	if _, set := c.namespaceFlag(); set && f.allNamespaces {
		return usageError("-n and -A exclude each other: pick one")
	}
	return nil
}

// any reports whether a selection flag was used.
func (f *selectionFlags) any() bool {
	return f.allNamespaces || f.selector != "" || len(f.projects) > 0
}

// selector is where to list Applications: -A for all namespaces, else -n, else Argo CD's own.
func (f *selectionFlags) toSelector(c *completed, argoNamespace string) cluster.Selector {
	sel := cluster.Selector{LabelSelector: f.selector, Projects: f.projects, Namespace: argoNamespace}
	if f.allNamespaces {
		sel.Namespace = ""
	} else if ns, set := c.namespaceFlag(); set {
		sel.Namespace = ns
	}
	return sel
}

// noteNarrowed says, on stderr, how many Applications -A found where Argo CD does not reconcile them,
// or why it could not tell.
func noteNarrowed(w io.Writer, argo cluster.ArgoCD, narrowed engine.Narrowed) {
	if narrowed.Err != nil {
		fmt.Fprintf(w, "warning: listing Applications in every namespace, also those Argo CD may not reconcile: %v\n", narrowed.Err)
		return
	}
	n := narrowed.Left
	its, it := "its namespace", "it"
	if n > 1 {
		its, it = "their namespaces", "them"
	}
	if n > 0 {
		fmt.Fprintf(w, "note: %s left out: Argo CD (in %s) does not reconcile Applications in %s (%s in %s does not name %s)\n",
			printer.Count(n, "Application"), argo.Namespace(), its, argocd.ParamAppNamespaces, argocd.CmdParamsConfigMap, it)
	}
}

func scopeText(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}

// apps checks the selection flags and reads APP arguments, which exclude each other.
func (f *selectionFlags) apps(args []string, c *completed) ([]engine.AppName, error) {
	if err := f.validate(c); err != nil {
		return nil, err
	}
	if len(args) > 0 && f.any() {
		return nil, usageError("name APPs, or select them with -A, -l or --project, not both")
	}
	return parseApps(args, c)
}

// parseApps reads APP arguments.
func parseApps(args []string, c *completed) ([]engine.AppName, error) {
	var out []engine.AppName
	for _, a := range args {
		n, err := engine.ParseAppName(a)
		if err != nil {
			return nil, usageError("%v", err)
		}
		if n.Namespace == "" {
			if ns, set := c.namespaceFlag(); set {
				n.Namespace = ns
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// connectApps is connect, then the apps a selecting command (scan, audit) works on: names, or what
// the selection flags select, and the scope in words; notes on the selection go to errOut.
func (c *completed) connectApps(ctx context.Context, errOut io.Writer, names []engine.AppName, f selectionFlags) (cluster.ArgoCD, argocd.Settings, []argocd.Application, string, error) {
	argo, s, err := c.connect(ctx)
	if err != nil {
		return nil, s, nil, "", err
	}
	apps, scope, err := listApps(ctx, c, errOut, argo, names, f)
	if err != nil {
		return nil, s, nil, "", failure(err)
	}
	return argo, s, apps, scope, nil
}

// listApps reads the apps named, or those the selection flags choose.
func listApps(ctx context.Context, c *completed, errOut io.Writer, argo cluster.ArgoCD, names []engine.AppName, f selectionFlags) ([]argocd.Application, string, error) {
	if len(names) == 0 {
		sel := f.toSelector(c, argo.Namespace())
		apps, narrowed, err := engine.ListSelected(ctx, argo, sel)
		noteNarrowed(errOut, argo, narrowed)
		return apps, scopeText(sel.Namespace), err
	}
	var apps []argocd.Application
	for _, n := range names {
		ns := n.Namespace
		if ns == "" {
			ns = argo.Namespace()
		}
		app, err := argo.GetApplication(ctx, ns, n.Name)
		if err != nil {
			return nil, "", fmt.Errorf("%w (is the app in another namespace? use NAMESPACE/NAME or -n)", err)
		}
		apps = append(apps, app)
	}
	return apps, printer.Count(len(apps), "named Application"), nil
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// interactive reports whether a confirmation can be asked: stdin and stderr are terminals.
func interactive(streams genericiooptions.IOStreams) bool {
	return isTerminal(streams.In) && isTerminal(streams.ErrOut)
}

// confirm asks on stderr and reads one line from stdin.
func confirm(streams genericiooptions.IOStreams, question string) (bool, error) {
	fmt.Fprint(streams.ErrOut, question)
	line, err := bufio.NewReader(streams.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) && line == "" {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// firstError runs the checks in order and returns the first failure.
func firstError(checks ...func() error) error {
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// flagChanged reports whether a flag was set on the command line.
func flagChanged(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
