package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
)

// completionTimeout keeps a shell responsive when the cluster is slow or gone.
const completionTimeout = 5 * time.Second

func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// completeApps completes APP arguments: NAME in Argo CD's namespace (or -n's), NAMESPACE/NAME with -A.
func completeApps(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx, cancel := completionContext(cmd)
		defer cancel()
		apps, argoNS, err := completionApps(ctx, f, cmd, toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return appNames(apps, argoNS, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func completionApps(ctx context.Context, f Factory, cmd *cobra.Command, toComplete string) ([]argocd.Application, string, error) {
	sess, err := f.Session()
	if err != nil {
		return nil, "", err
	}
	argo, err := sess.ArgoCD(ctx)
	if err != nil {
		return nil, "", err
	}
	ns := argo.Namespace()
	if n, set := f.NamespaceFlag(); set {
		ns = n
	}
	if all, _ := cmd.Flags().GetBool("all-namespaces"); all || strings.Contains(toComplete, "/") {
		ns = ""
	}
	apps, err := argo.ListApplications(ctx, cluster.Selector{Namespace: ns})
	return apps, argo.Namespace(), err
}

func appNames(apps []argocd.Application, argoNS, prefix string) []string {
	var out []string
	for _, a := range apps {
		name := a.Name
		if a.Namespace != argoNS || strings.Contains(prefix, "/") {
			name = a.Namespace + "/" + a.Name
		}
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// completeDetachArgs completes the APP, then the app's resources that require pruning.
func completeDetachArgs(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	apps := completeApps(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		all, _ := cmd.Flags().GetBool("all")
		if len(args) == 0 || all {
			return apps(cmd, args, toComplete)
		}
		ctx, cancel := completionContext(cmd)
		defer cancel()
		sess, err := f.Session()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		argo, err := sess.ArgoCD(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		name, err := engine.ParseAppName(args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ns := name.Namespace
		if ns == "" {
			ns = argo.Namespace()
			if n, set := f.NamespaceFlag(); set {
				ns = n
			}
		}
		app, err := argo.GetApplication(ctx, ns, name.Name)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, r := range app.Pruning() {
			// A resource already on the command line is not offered again.
			if s := r.String(); strings.HasPrefix(s, toComplete) && !slices.Contains(args[1:], s) {
				out = append(out, s)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeJournals completes undo's JOURNAL with the journals in the journal directory.
func completeJournals(f Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sess, err := f.Session()
		if err != nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		store, err := sess.Journals()
		if err != nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		sums, err := store.List()
		if err != nil {
			return nil, cobra.ShellCompDirectiveDefault
		}
		var out []string
		for _, s := range sums {
			if strings.HasPrefix(s.Path, toComplete) {
				desc := s.Command
				if len(s.Applications) > 0 {
					desc += " " + s.Applications[0].String()
				}
				out = append(out, s.Path+"\t"+desc)
			}
		}
		return out, cobra.ShellCompDirectiveDefault
	}
}
