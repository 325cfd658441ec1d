// Package option names the choices a user makes on unprune's command line (which Argo CD version,
// which kubeconfig context for a cluster, whether to force) without their spelling. A message below
// the command line names the option it recommends, e.g.
//
//	fmt.Errorf("... (pass %v to be exact)", option.ArgoCDVersion)
//
// and internal/cli, which defines the flags, says once, when it starts, how each is spelled
// (Register). The spelling is the command line's business, not the message's: one binary may
// spell an option differently from another (the argocd plugin says --server where unprune and the
// kubectl plugin say --argocd-server, because kubectl owns --server there), and a package below
// the command line cannot know which binary runs it. Errors whose remedy differs per binary are
// typed and worded by the command line itself (argocdapi.CredentialsError); the names here are for
// options every binary spells alike.
package option

import (
	"strings"
)

// Name is one option of the command line.
type Name int

// The options messages below the command line recommend. Add one here, and its spelling to
// internal/cli, when a message needs it.
const (
	_ Name = iota

	// Every command's, kubectl's own.
	Kubeconfig
	Context
	Namespace
	As
	RequestTimeout
	Output
	NoHeaders

	// Every command's, unprune's.
	ArgoCDNamespace
	ArgoCDVersion
	ArgoCDContext
	ArgoCDServer
	ArgoCDAuthToken
	ClusterContext
	ClusterCredentials
	Via

	// The changing commands'.
	DryRun
	Yes
	Force
	To
	Prepare

	// audit's and check's.
	Probe
	ControllerAs
	RepoDir

	// guard policy's.
	GuardName
	GuardKinds
	GuardMerge
	Apply

	// guard approve's and budget's.
	ApplicationSet

	// watch's.
	MetricsBindAddress
	AppNamespaces
	LeaseDuration
	RenewDeadline
	RetryPeriod
	ResyncPeriod
	Workers
	LiveCacheSize
	LiveCacheTTL
	WatchTimeout
	PprofBindAddress
	LiveCacheBytes
	DeletionBudget
	AdmissionBindAddress
	TLSCertFile
	TLSPrivateKeyFile

	end
)

// idents name the options in Go, for the neutral form.
var idents = [...]string{
	Kubeconfig: "Kubeconfig", Context: "Context", Namespace: "Namespace", As: "As",
	RequestTimeout: "RequestTimeout", Output: "Output", NoHeaders: "NoHeaders",
	ArgoCDNamespace: "ArgoCDNamespace", ArgoCDVersion: "ArgoCDVersion", ArgoCDContext: "ArgoCDContext", ArgoCDServer: "ArgoCDServer",
	ArgoCDAuthToken: "ArgoCDAuthToken", ClusterContext: "ClusterContext", ClusterCredentials: "ClusterCredentials",
	Via: "Via", DryRun: "DryRun", Yes: "Yes", Force: "Force", To: "To", Prepare: "Prepare",
	Probe: "Probe", ControllerAs: "ControllerAs", RepoDir: "RepoDir",
	GuardName: "GuardName", GuardKinds: "GuardKinds", GuardMerge: "GuardMerge", Apply: "Apply", ApplicationSet: "ApplicationSet",
	MetricsBindAddress: "MetricsBindAddress", AppNamespaces: "AppNamespaces", LeaseDuration: "LeaseDuration",
	RenewDeadline: "RenewDeadline", RetryPeriod: "RetryPeriod", ResyncPeriod: "ResyncPeriod", Workers: "Workers",
	LiveCacheSize: "LiveCacheSize", LiveCacheTTL: "LiveCacheTTL", WatchTimeout: "WatchTimeout",
	PprofBindAddress: "PprofBindAddress", LiveCacheBytes: "LiveCacheBytes",
	DeletionBudget: "DeletionBudget", AdmissionBindAddress: "AdmissionBindAddress", TLSCertFile: "TLSCertFile", TLSPrivateKeyFile: "TLSPrivateKeyFile",
	end: "",
}

// All lists every option, so that the command line can prove it spells each one.
func All() []Name {
	out := make([]Name, 0, int(end)-1)
	for n := Name(1); n < end; n++ {
		out = append(out, n)
	}
	return out
}

// Form is how much of an option's spelling a message shows.
type Form int

const (
	Long  Form = iota // --namespace
	Short             // -n; the long form for an option without a shorthand
	Both              // -n/--namespace; the long form for an option without a shorthand
)

// Spelling renders an option as the command line spells it, or "" when it does not know it.
type Spelling func(Name, Form) string

var spelling Spelling

// Register sets how options are spelled. internal/cli calls it once, in its init, before any
// message is made.
func Register(s Spelling) { spelling = s }

// String is the option as the user types it, e.g. --argocd-version.
func (n Name) String() string { return n.spell(Long) }

// Short is the option's one-letter form, e.g. -o.
func (n Name) Short() string { return n.spell(Short) }

// Both is the one-letter and the long form, e.g. -n/--namespace.
func (n Name) Both() string { return n.spell(Both) }

// spell asks the command line; without it (a package's own unit tests) the option shows in a
// neutral form, <ArgoCDVersion>, which reads as a placeholder and cannot be mistaken for a flag.
func (n Name) spell(f Form) string {
	if spelling != nil {
		if s := spelling(n, f); s != "" {
			return s
		}
	}
	if n > 0 && n < end {
		return "<" + idents[n] + ">"
	}
	return "<option>"
}

// program is the command the recipes name: the standalone binary, as the documentation does.
const program = "unprune"

// Command is a command line to show the user, as data: what it runs, on what, with which options.
// The command line spells its options; String renders it as the user would type it.
type Command struct {
	Path    []string // the subcommand, e.g. "guard", "protect"
	Args    []string
	Options []Setting
}

// Setting is one option on a command line; an empty Value is a boolean option given alone.
type Setting struct {
	Name  Name
	Value string
}

// Flag is a boolean option given alone.
func Flag(n Name) Setting { return Setting{Name: n} }

// String renders the command line for the standalone binary.
func (c Command) String() string { return c.render(program) }

func (c Command) render(program string) string {
	parts := append([]string{program}, c.Path...)
	parts = append(parts, c.Args...)
	for _, s := range c.Options {
		parts = append(parts, s.Name.String())
		if s.Value != "" {
			parts = append(parts, s.Value)
		}
	}
	return strings.Join(parts, " ")
}
