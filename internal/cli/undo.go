package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// UndoOptions are `unprune undo`'s inputs.
type UndoOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams

	Journal string
	Latest  bool
	List    bool
	Workers int

	change changeFlags
	output outputFlags
}

// NewUndoCommand builds `unprune undo`.
func NewUndoCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UndoOptions{GlobalOptions: g, IOStreams: streams, Workers: 32}
	cmd := &cobra.Command{
		Use:   "undo JOURNAL | --latest | --list",
		Short: "Restore exactly what a journal says unprune changed",
		Long: `Restore the labels and annotations a detach (or guard) journal records, exactly as they were,
in the cluster each entry was changed in.

Each object is matched by UID: an object deleted and recreated under the same name is refused. Each
key is restored only while it still holds what unprune wrote; a key someone has set differently
since is left alone and reported. Tracking metadata that would name another app or another object
than the entry's own is never restored, nor tracking for an app that does not exist, as the journal
records it, in the journal's Argo CD installation: undo reads those Applications first (in the
cluster of --argocd-context, else --context; or through Argo CD's API with --via argocd), and
refuses the entry when it cannot. Journals others can write are refused, as ssh refuses loose keys.
These checks catch mistakes and stale journals; whoever runs as you can still edit a journal.

Without --yes this is a preview; --dry-run=server asks the API server. Guard and keep journals
restore no tracking and need no Argo CD; after a restore, the journal's Applications get a refresh
when Argo CD is reachable.

` + exitCodesHelp,
		Example: `  # Journals, newest first
  unprune undo --list

  # Preview, then restore, the last run
  unprune undo --latest
  unprune undo --latest --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeJournals(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if len(args) == 1 {
				o.Journal = args[0]
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.Latest, "latest", false, "undo the newest journal")
	cmd.Flags().BoolVar(&o.List, "list", false, "list journals, newest first")
	cmd.Flags().IntVar(&o.Workers, "workers", o.Workers, "objects restored concurrently (within --qps/--burst)")
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// Validate checks flag combinations; it needs no cluster.
func (o *UndoOptions) Validate() error {
	if err := o.output.validate(); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{o.Journal != "", o.Latest, o.List} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError("name one JOURNAL file, or use --latest or --list")
	}
	if o.Workers <= 0 {
		return usageError("--workers must be positive")
	}
	return o.change.validate()
}

// Run lists, previews or restores.
func (o *UndoOptions) Run(ctx context.Context) error {
	store, err := o.journals()
	if err != nil {
		return err
	}
	if o.List {
		return o.list(store)
	}
	path := o.Journal
	if o.Latest {
		if path, err = store.Latest(); err != nil {
			if errors.Is(err, journal.ErrNoJournals) {
				return usageError("%v: pass a JOURNAL path, or --journal-dir for another directory", err)
			}
			return usageError("%v (journals are in %s; pass a JOURNAL path or --journal-dir)", err, store.Dir)
		}
	}
	rec, err := store.Open(path)
	if err != nil {
		return usageError("%v; nothing was changed", err)
	}
	e, err := o.engine(nil, argocd.Settings{}, o.Workers)
	if err != nil {
		_ = rec.Close()
		return err
	}
	var ru *renameUndo
	if j := rec.Snapshot(); j.Rename != nil {
		var done bool
		if ru, done, err = o.undoRenameBefore(ctx, j); done {
			_ = rec.Close()
			return err
		}
	}
	u, err := e.PlanUndo(ctx, rec, o.session.Recorded, o.session.JournalArgoCD)
	if err != nil {
		_ = rec.Close()
		return engineError(err)
	}
	done := e.Restore(ctx, u, o.change.dryRun)
	if ru != nil {
		o.undoRenameAfter(ctx, ru, u, done)
	}
	if done.Mode == engine.ModeApply && done.Counts()[engine.OutcomeRestored] > 0 {
		o.refresh(ctx, u.Journal)
	}
	return o.finish(engine.Result{Planned: u.Planned, Applied: done}, path)
}

func (o *UndoOptions) finish(r engine.Result, path string) error {
	doc := printer.NewChangeReport("UndoReport", o.metadata(nil), nil, r)
	doc.Journal = path // the journal undone
	if o.output.out.Document() {
		if err := o.output.out.Print(o.Out, doc, doc.Names); err != nil {
			return err
		}
	} else if err := printer.ChangeTable(o.Out, o.output.out, doc); err != nil {
		return err
	}
	if err := r.Done().JournalErr; err != nil {
		fmt.Fprintln(o.ErrOut, "warning: the journal could not record everything:", err)
	}
	if doc.Mode == string(engine.ModePreview) && doc.Summary.Planned > 0 && !o.output.out.Document() {
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Restore with --yes.")
	}
	code, msg := runExit(doc, false)
	if msg != "" {
		return &ExitError{Code: code, Err: fmt.Errorf("%s", msg)}
	}
	return Silent(code)
}

// refresh asks Argo CD to compare the journal's apps again, when it can be reached; undo does not
// need it.
func (o *UndoOptions) refresh(ctx context.Context, j *journal.Journal) {
	apps := j.Applications()
	if len(apps) == 0 || j.ArgoCD == nil {
		return
	}
	argo, err := o.session.JournalArgoCD(ctx, j)
	if err != nil {
		return
	}
	for _, a := range apps {
		app, err := argo.GetApplication(ctx, a.Namespace, a.Name)
		if err == nil {
			err = argo.Refresh(ctx, app, false)
		}
		if err != nil {
			fmt.Fprintf(o.ErrOut, "warning: could not ask Argo CD to refresh Application %s: %v\n", a, err)
			continue
		}
		fmt.Fprintf(o.ErrOut, "Asked Argo CD to refresh Application %s.\n", a)
	}
}

func (o *UndoOptions) list(store *journal.Store) error {
	sums, err := store.List()
	if err != nil {
		return failure(err)
	}
	doc := printer.NewJournalList(o.metadata(nil), store.Dir, sums)
	if o.output.out.Document() {
		return o.output.out.Print(o.Out, doc, doc.Names)
	}
	if len(sums) == 0 {
		fmt.Fprintf(o.ErrOut, "No journals in %s.\n", store.Dir)
		return nil
	}
	return printer.JournalTable(o.Out, o.output.out, doc)
}
