package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/backend/argocdapi"
	"github.com/unprune/unprune/internal/check"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/watch"
)

// The remedy for missing Argo CD credentials names the options of the binary that runs: the argocd
// plugin has the argocd CLI's --server and --auth-token, unprune and the kubectl plugin prefix them.
func TestCredentialsErrorsNameThisBinarysOptions(t *testing.T) {
	t.Setenv("ARGOCD_CONFIG_DIR", t.TempDir()) // no argocd CLI login to fall back on
	t.Setenv("ARGOCD_AUTH_TOKEN", "")
	tests := []struct {
		name, server string
		args         []string
		want         string
	}{
		{NameUnprune, "", []string{"scan", "--via", "argocd"}, "no Argo CD server: pass --argocd-server (or set ARGOCD_SERVER)"},
		{NameKubectlPlugin, "", []string{"scan", "--via", "argocd"}, "no Argo CD server: pass --argocd-server (or set ARGOCD_SERVER)"},
		{NameArgoCDPlugin, "", []string{"scan"}, "no Argo CD server: pass --server (or set ARGOCD_SERVER)"},
		{NameUnprune, "argocd.example", []string{"scan", "--via", "argocd"}, "no token for Argo CD server argocd.example: pass --argocd-auth-token (or set ARGOCD_AUTH_TOKEN)"},
		{NameArgoCDPlugin, "argocd.example", []string{"scan"}, "no token for Argo CD server argocd.example: pass --auth-token (or set ARGOCD_AUTH_TOKEN)"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.want, func(t *testing.T) {
			t.Setenv("ARGOCD_SERVER", tt.server)
			_, stderr, code := run(t, tt.name, tt.args...)
			if code != ExitFailure || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, ExitFailure, tt.want)
			}
		})
	}
}

// A token the server refuses fails deep inside a command, wrapped by what it was doing; the remedy
// is worded for the binary there too, and the failure stays an authentication failure.
func TestRejectedTokenNamesThisBinarysOption(t *testing.T) {
	rejected := &argocdapi.CredentialsError{Problem: argocdapi.TokenRejected, Server: "argocd.example", Reason: "invalid session"}
	if cluster.Classify(rejected) != cluster.FailureUnauthenticated {
		t.Errorf("a rejected token classifies as %v", cluster.Classify(rejected))
	}
	err := fmt.Errorf("list Applications: %w", rejected)
	for name, want := range map[string]string{
		NameUnprune:      "list Applications: Argo CD server argocd.example does not accept the token (invalid session): log in again (`argocd login`) or pass another --argocd-auth-token",
		NameArgoCDPlugin: "list Applications: Argo CD server argocd.example does not accept the token (invalid session): log in again (`argocd login`) or pass another --auth-token",
	} {
		if got := speak(name, err); got != want {
			t.Errorf("%s says %q, want %q", name, got, want)
		}
	}
}

// Every option a message below the command line names is spelled as a flag the command line
// defines, with the shorthand it has: the spelling table cannot drift from the flags.
func TestOptionSpellings(t *testing.T) {
	flags := map[string]string{} // long name -> shorthand
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.PersistentFlags(), c.Flags()} {
			fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = f.Shorthand })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(NameUnprune, genericiooptions.IOStreams{}))
	for _, n := range option.All() {
		s, ok := spelling[n]
		if !ok {
			t.Errorf("option %v has no spelling", n)
			continue
		}
		short, defined := flags[s.long]
		if !defined {
			t.Errorf("option %v: unprune has no flag --%s", n, s.long)
		} else if short != s.short {
			t.Errorf("option %v: --%s's shorthand is %q, the table says %q", n, s.long, short, s.short)
		}
	}
}

// Messages made below the command line read, once it has spelled their options, as they always
// did: lab tests and the documentation quote them.
func TestMessagesBelowSpellOptions(t *testing.T) {
	cm := argocd.Resource{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	_, policyErr := guard.Policy(guard.PolicyOptions{Names: []string{"pvs/data"}})
	_, outputErr := printer.ParseOutput("json", false, true)
	tests := []struct{ got, want string }{
		{strings.Join(check.MoveRecipe(context.Background(), "shop-old", "team/shop", cm), "; "),
			"before merging: unprune move shop-old ConfigMap/shop/settings --to team/shop --prepare --yes; " +
				"merge the change, and wait until team/shop lists the resource (OutOfSync, shared with shop-old); " +
				"then: unprune move shop-old ConfigMap/shop/settings --to team/shop --yes"},
		{fmt.Sprint(policyErr), `--name "pvs/data": add pvs to --kinds too`},
		{fmt.Sprint(outputErr), "--no-headers goes with table output, not -o json"},
		{fmt.Sprint((&watch.Config{}).Validate()), "no cluster to watch: pass --kubeconfig, or run in a pod with a ServiceAccount"},
		{fmt.Sprint((&watch.Config{REST: &rest.Config{}, ArgoCDNamespace: "argocd", LeaderElect: true}).Validate()),
			"the Lease needs a namespace: pass -n/--namespace (in a pod, the pod's namespace is the default)"},
		{argocdapi.ErrNoDryRun.Error(), "Argo CD's API cannot send a patch as a dry run: preview with --dry-run=client, or use a kubeconfig for the cluster"},
		{(&cluster.ChainedImpersonationError{ActingAs: "alice", As: "bob"}).Error(),
			"cannot act as bob while acting as alice (--as): Kubernetes does not chain impersonation; run without --as to act as bob"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
}
