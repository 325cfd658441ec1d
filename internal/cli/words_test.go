package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocdapi"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/option"
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
