package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/apply"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/internal/verify"
)

// UndoOptions are `unprune undo`'s inputs.
type UndoOptions struct {
	*GlobalOptions
	genericiooptions.IOStreams

	Journal string
	Latest  bool
	List    bool
	DryRun  string
	Yes     bool
	Output  string

	format printer.Format
}

// NewUndoCommand builds `unprune undo`.
func NewUndoCommand(g *GlobalOptions, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UndoOptions{GlobalOptions: g, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "undo JOURNAL | --latest | --list",
		Short: "Restore exactly what a journal says unprune changed",
		Long: `Restore the labels and annotations a detach (or guard) journal records, exactly as they were.

Each object is matched by UID: an object deleted and recreated under the same name is refused. Each
key is restored only while it still holds what unprune wrote; a key someone has set differently
since is left alone and reported. Without --yes this is a preview; --dry-run=server asks the API
server. Afterwards the journal's Application gets a refresh so Argo CD sees the restored tracking.

` + exitCodesHelp,
		Example: `  # Journals, newest first
  unprune undo --list

  # Preview, then restore, the last run
  unprune undo --latest
  unprune undo --latest --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "", `"client" previews (the default without --yes); "server" asks the API server with dryRun=All`)
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "restore without asking")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// Validate checks flag combinations.
func (o *UndoOptions) Validate() error {
	f, err := printer.ParseFormat(o.Output, printer.Table, printer.JSON, printer.YAML)
	if err != nil {
		return usageError("%v", err)
	}
	o.format = f
	n := 0
	for _, set := range []bool{o.Journal != "", o.Latest, o.List} {
		if set {
			n++
		}
	}
	if n != 1 {
		return usageError("name one JOURNAL file, or use --latest or --list")
	}
	switch o.DryRun {
	case "", "client", "server", "none":
	default:
		return usageError(`--dry-run=%q: use "client", "server" or "none"`, o.DryRun)
	}
	if o.DryRun == "none" && !o.Yes {
		return usageError("--dry-run=none restores: add --yes to confirm")
	}
	return nil
}

// UndoReport is `unprune undo -o json|yaml`.
type UndoReport struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Journal    string          `json:"journal"`
	Mode       string          `json:"mode"`
	Items      []UndoReportRow `json:"items"`
}

// UndoReportRow is one journal entry's fate.
type UndoReportRow struct {
	Object   string           `json:"object"`
	Outcome  string           `json:"outcome"`
	Restored []printer.Change `json:"restored"`
	Refused  []string         `json:"refused,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// Run previews or restores.
func (o *UndoOptions) Run(ctx context.Context) error {
	store, err := o.journalStore()
	if err != nil {
		return err
	}
	if o.List {
		return o.list(store)
	}
	path := o.Journal
	if o.Latest {
		if path, _, err = store.Latest(); err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%w (journals are in %s; pass a JOURNAL path or --journal-dir)", err, store.Dir)}
		}
	}
	j, err := store.Load(path)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	s, err := o.connect(ctx, o.IOStreams)
	if err != nil {
		return err
	}
	if j.Cluster != "" && j.Cluster != s.Server {
		return refused("journal %s was written against %s, but your context talks to %s: switch with --context", path, j.Cluster, s.Server)
	}
	mode := changeMode(o.DryRun, o.Yes)
	undoMode := map[string]apply.UndoMode{"client": apply.UndoPreview, "server": apply.UndoDryRun, "none": apply.UndoApply}[mode]
	rec := store.NewRecorder(path, j)
	doc := UndoReport{APIVersion: printer.APIVersion, Kind: "UndoReport", Journal: path, Mode: mode, Items: []UndoReportRow{}}
	var refusedKeys, failed, restored int
	for _, r := range apply.Undo(ctx, s.Client.Dynamic, rec, undoMode) {
		row := UndoReportRow{Object: r.Object, Restored: printer.Changes(r.Restored), Refused: r.Refused}
		switch {
		case r.Skipped != "":
			row.Outcome = "already-undone"
		case r.Err != nil:
			row.Outcome, row.Error = printer.OutcomeFailed, r.Err.Error()
			failed++
		case mode == "client":
			row.Outcome = printer.OutcomePlanned
		case mode == "server":
			row.Outcome = printer.OutcomeDryRunOK
		default:
			row.Outcome = printer.OutcomeRestored
		}
		refusedKeys += len(r.Refused)
		restored += len(r.Restored)
		doc.Items = append(doc.Items, row)
	}
	if err := o.print(doc); err != nil {
		return err
	}
	if mode == "none" && restored > 0 && j.Application != nil {
		app := cluster.Application{Namespace: j.Application.Namespace, Name: j.Application.Name}
		if err := verify.Refresh(ctx, s.Client, app); err != nil {
			fmt.Fprintln(o.ErrOut, "warning:", err)
		} else {
			fmt.Fprintf(o.ErrOut, "Asked Argo CD to refresh Application %s.\n", app.Ref())
		}
	}
	switch {
	case failed > 0:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d objects could not be restored (see above)", failed)}
	case refusedKeys > 0:
		return refused("%d keys were left alone because they changed since unprune wrote them (see above)", refusedKeys)
	case mode == "client" && restored > 0:
		fmt.Fprintln(o.ErrOut, "Preview only: nothing was changed. Restore with --yes.")
		return Silent(ExitFindings)
	case mode == "server":
		return Silent(ExitFindings)
	}
	return nil
}

func (o *UndoOptions) print(doc UndoReport) error {
	if o.format.Machine() {
		return printer.Document(o.Out, o.format, doc)
	}
	rows := make([][]string, 0, len(doc.Items))
	for _, it := range doc.Items {
		var what []string
		for _, c := range it.Restored {
			switch {
			case c.After == nil:
				what = append(what, "remove "+c.Field+" "+c.Key)
			default:
				what = append(what, "restore "+c.Field+" "+c.Key+"="+*c.After)
			}
		}
		what = append(what, it.Refused...)
		if it.Error != "" {
			what = append(what, it.Error)
		}
		detail := strings.Join(what, "; ")
		if detail == "" {
			detail = "<nothing to restore>"
		}
		rows = append(rows, []string{it.Object, strings.ToUpper(it.Outcome), detail})
	}
	return printer.Rows(o.Out, []string{"OBJECT", "OUTCOME", "DETAIL"}, rows)
}

func (o *UndoOptions) list(store *journal.Store) error {
	sums, err := store.List()
	if err != nil {
		return err
	}
	if len(sums) == 0 {
		fmt.Fprintf(o.ErrOut, "No journals in %s.\n", store.Dir)
		return nil
	}
	rows := make([][]string, 0, len(sums))
	for _, s := range sums {
		app := "<none>"
		if s.Application != nil {
			app = s.Application.Namespace + "/" + s.Application.Name
		}
		state := fmt.Sprintf("%d applied, %d failed, %d undone", s.Applied, s.Failed, s.Undone)
		if s.Err != nil {
			state = "unreadable: " + s.Err.Error()
		}
		rows = append(rows, []string{s.Path, s.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), s.Command + "/" + s.Strategy, app, state})
	}
	return printer.Rows(o.Out, []string{"JOURNAL", "CREATED", "COMMAND", "APPLICATION", "ENTRIES"}, rows)
}
