package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/version"
)

// installation is an Argo CD installation and its settings, as connect read them.
type installation struct {
	argo     cluster.ArgoCD
	settings cluster.Settings
}

// completed is what a command's Complete takes from the Factory, as kubectl's Options keep the
// clients their Complete made: the session and the global flags' values the command reads. connect
// adds the installation it reached, for the reports. Every verb's Options embed one.
type completed struct {
	session session.Session
	cfg     session.Config
	// can is what the backend --via chose can do: commands ask it, not which backend it is.
	can          session.Capabilities
	program      string
	namespace    string
	namespaceSet bool
	// installed is the installation connect reached, for the reports that describe it.
	installed installation
}

// complete takes the session and the global flags' values from f.
func (c *completed) complete(f Factory) error {
	return c.completeWith(f, nil)
}

// completeWith is complete for a command that adjusts the configuration (adjust) before its
// session is made.
func (c *completed) completeWith(f Factory, adjust func(*session.Config)) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if adjust != nil {
		adjust(&cfg)
		c.session = f.SessionFor(cfg)
	} else if c.session, err = f.Session(); err != nil {
		return err
	}
	c.cfg, c.can, c.program = cfg, f.Capabilities(), f.Program()
	c.namespace, c.namespaceSet = f.NamespaceFlag()
	return nil
}

// namespaceFlag returns -n when the user set it.
func (c *completed) namespaceFlag() (string, bool) { return c.namespace, c.namespaceSet }

// connect reaches Argo CD and reads its tracking settings: what most commands do first.
func (c *completed) connect(ctx context.Context) (cluster.ArgoCD, argocd.Settings, error) {
	return c.connectReading(ctx, nil)
}

// connectReading is connect, running read — a read that needs the installation but not its
// settings, such as the apps a command names — while the settings are read: both are round trips
// that every command waits for before it plans. An installation that learns its namespace from its
// settings (through argocd-server) is read after them: the apps default to that namespace. read
// keeps its own outcome; connect's error comes first.
func (c *completed) connectReading(ctx context.Context, read func(context.Context, cluster.ArgoCD)) (cluster.ArgoCD, argocd.Settings, error) {
	argo, err := c.session.ArgoCD(ctx)
	if err != nil {
		return nil, argocd.Settings{}, failure(err)
	}
	if read == nil {
		read = func(context.Context, cluster.ArgoCD) {}
	}
	var s cluster.Settings
	if settling, ok := argo.(cluster.SettlingNamespace); ok && !settling.NamespaceSettled() {
		if s, err = c.session.Settings(ctx); err == nil {
			read(ctx, argo)
		}
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			read(ctx, argo)
		}()
		s, err = c.session.Settings(ctx)
		<-done
	}
	if err != nil {
		return nil, argocd.Settings{}, failure(err)
	}
	c.installed = installation{argo: argo, settings: s}
	return argo, s.Settings, nil
}

// journals is the journal store.
func (c *completed) journals() (*journal.Store, error) {
	store, err := c.session.Journals()
	if err != nil {
		return nil, usageError("%v", err)
	}
	return store, nil
}

// engine builds the engine for a command.
func (c *completed) engine(argo cluster.ArgoCD, s argocd.Settings, workers int) (*engine.Engine, error) {
	store, err := c.journals()
	if err != nil {
		return nil, err
	}
	return &engine.Engine{ArgoCD: argo, Settings: s, Journals: store, Workers: workers, ToolVersion: version.Get().String(), Now: c.cfg.Now, CompactWhileReporting: true,
		Connect: c.session.Recorded, ArgoCDOf: c.session.JournalArgoCD}, nil
}

// metadata starts every document.
func (c *completed) metadata(in *cluster.Info) printer.Metadata {
	m := printer.Metadata{GeneratedAt: c.session.Now().UTC().Truncate(time.Second), ToolVersion: version.Get().String()}
	if in != nil {
		ref := printer.NewClusterRef(*in)
		m.Cluster = &ref
	}
	return m
}

// verb is a verb's Options, run in kubectl's three steps.
type verb interface {
	complete(Factory) error
	Validate(args []string) error
	Run(ctx context.Context) error
}

// runE runs a verb as kubectl runs its commands: complete takes what the verb needs from the
// Factory, Validate checks the flags and arguments without a cluster, and Run does the work.
func runE(f Factory, o verb) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.complete(f); err != nil {
			return err
		}
		if err := o.Validate(args); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}
