package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
)

// UndoOptions are `unprune undo`'s inputs.
type UndoOptions struct {
	completed
	genericiooptions.IOStreams

	Journal string
	Latest  bool
	List    bool
	Workers int

	change changeFlags
	output outputFlags
}

// NewUndoCommand builds `unprune undo`.
func NewUndoCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UndoOptions{IOStreams: streams, Workers: 32}
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

Putting back what lets an app delete waits for that app's comparison: tracking given back to an app
with automated prune, or a guard against prune (Prune=false, Prune=confirm, the protection label)
taken off an object such an app tracks, is restored only once Argo CD shows that the app declares the
object (else it would prune it at once: exit 3 for it, saying so). Undo asks Argo CD for that where
it can; guard and keep journals restore no tracking and need it for nothing else. The undo of a rename
writes the Applications back too. Without --yes this is a preview; --dry-run=server asks the API
server. Argo CD compares the journal's Applications again by itself as it sees their objects
change: undo asks for no refresh, and does not wait for that comparison, so scan and audit, which
read it, show the restored tracking once it has run (within seconds).

` + exitCodesHelp,
		Example: `  # Journals, newest first
  unprune undo --list

  # Preview, then restore, the last run
  unprune undo --latest
  unprune undo --latest --yes`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeJournals(f),
		RunE:              runE(f, o),
	}
	cmd.Flags().BoolVar(&o.Latest, "latest", false, "undo the newest journal")
	cmd.Flags().BoolVar(&o.List, "list", false, "list journals, newest first")
	cmd.Flags().IntVar(&o.Workers, "workers", o.Workers, "objects restored concurrently (within --qps/--burst)")
	o.change.add(cmd)
	o.output.add(cmd, false)
	return cmd
}

// Validate reads JOURNAL and checks flag combinations; it needs no cluster.
func (o *UndoOptions) Validate(args []string) error {
	if len(args) == 1 {
		o.Journal = args[0]
	}
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
	j := rec.Snapshot()
	if j.Rename != nil && !o.can.Preconditions {
		_ = rec.Close()
		return usageError("undo of a rename creates and deletes Application objects, which Argo CD's API cannot do with preconditions: use your kubeconfig")
	}
	// Undo needs no Argo CD to restore what a guard wrote, yet asks it, where it can, whether
	// taking a guard off lets an app prune: without it, such an object is left alone.
	argo, settings, _ := o.connect(ctx)
	e, err := o.engine(argo, settings, o.Workers)
	if err != nil {
		_ = rec.Close()
		return err
	}
	c, err := e.PlanUndo(ctx, rec)
	if err != nil {
		_ = rec.Close()
		return engineError(err)
	}
	// No refresh afterwards: Argo CD's controller requeues every app whose tracked objects change,
	// the app an object is tracked by before the change and the one after
	// (controller/cache/cache.go OnResourceUpdated → controller/appcontroller.go
	// handleObjectUpdated), and a refresh is a write of the whole Application, status included —
	// longer than the patches' own tail for an app of 10,000 objects.
	return o.runChange(ctx, o.IOStreams, o.output, o.change.dryRun, e, c, changeCommand{kind: "UndoReport", journal: path,
		question: fmt.Sprintf("Restore what journal %s records? [y/N] ", path), previewLine: "Preview only: nothing was changed. Restore with --yes."})
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
