package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spf13/cobra"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/engine"
	"github.com/unprune/unprune/internal/option"
	"github.com/unprune/unprune/internal/printer"
)

// Exit codes are part of the product: CI jobs and scripts branch on them.
const (
	ExitOK        = 0 // nothing to do, or everything done
	ExitFindings  = 1 // scan/audit found something; a preview or dry run has changes to make
	ExitFailure   = 2 // bad input or a failure talking to a cluster; nothing was changed
	ExitRefused   = 3 // a safety rule refused; nothing was changed
	ExitPartial   = 4 // some objects were changed, others not: see the journal
	ExitNotSynced = 5 // every change was made, but Argo CD did not show it before --timeout
)

// exitCodesHelp is shown in every command's help.
const exitCodesHelp = `Exit codes:
  0  nothing to do, or everything done (and shown released by Argo CD)
  1  findings: stuck apps or unguarded deletions found, or a preview/dry run with changes to make
  2  error: bad input or a failure talking to a cluster; nothing was changed
  3  refused by a safety rule; nothing was changed
  4  partially done: some objects changed, some not (see the journal)
  5  applied, but Argo CD did not show the release before --timeout (or could not be asked)`

// ExitError carries the process exit code for an outcome; main maps it with one os.Exit.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Silent reports an exit code with nothing more to say: the output already said it.
func Silent(code int) error { return &ExitError{Code: code} }

func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf(format, args...)}
}

// ExitCode maps any error returned by the root command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFailure
}

// failure wraps an error from the engine or a backend: exit 2, said in words the user can act on.
func failure(err error) error {
	var e *ExitError
	if errors.As(err, &e) {
		return err
	}
	if cluster.Classify(err) == cluster.FailureCanceled {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("interrupted; nothing was changed: %w", err)}
	}
	return &ExitError{Code: ExitFailure, Err: err}
}

// runExit decides a changing command's exit code from what happened, and the line that says it.
// It is pure: the table of outcomes is the product's contract.
func runExit(doc printer.ChangeReport, verify bool) (int, string) {
	s := doc.Summary
	changed := s.Applied + s.Restored
	notDone := s.Failed + s.NotAttempted
	switch {
	case s.Interrupted && changed > 0:
		return ExitPartial, fmt.Sprintf("interrupted: %d of %d objects changed, %d not attempted; the journal %s says which (run again to finish, or undo it)",
			changed, s.Total, s.NotAttempted, doc.Journal)
	case notDone > 0 && changed > 0:
		return ExitPartial, fmt.Sprintf("%d of %d objects changed, %d failed; the journal %s says which", changed, s.Total, notDone, doc.Journal)
	case s.Refused > 0 && changed > 0:
		return ExitPartial, fmt.Sprintf("%s changed, %d left alone by a safety rule (see above)", printer.Count(changed, "object"), s.Refused)
	case notDone > 0:
		return ExitFailure, fmt.Sprintf("%d of %d objects failed (see above); nothing was changed", notDone, s.Total)
	case s.Refused > 0:
		return ExitRefused, fmt.Sprintf("%d of %d objects refused (see above); nothing was changed", s.Refused, s.Total)
	case doc.Mode == string(engine.ModePreview) && s.Planned > 0:
		return ExitFindings, ""
	case doc.Mode == string(engine.ModeServerDryRun) && s.DryRunAccepted > 0:
		return ExitFindings, ""
	}
	if verify {
		for _, a := range s.Applications {
			if v := a.Verification; v != nil && !v.Verified {
				why := "did not show the release"
				switch {
				case v.Error != "":
					why = "could not be asked (" + v.Error + ")"
				case !v.Compared:
					why = "has not compared the app since (its controller is busy or stopped), so it did not show the release"
				}
				return ExitNotSynced, fmt.Sprintf("every change was made, but Argo CD %s for Application %s/%s in time",
					why, a.Application.Namespace, a.Application.Name)
			}
		}
	}
	return ExitOK, ""
}

// Execute runs the command tree for args and returns the process exit code, having printed any
// error on stderr. Every binary (unprune, kubectl-unprune, argocd-unprune) is this one call.
func Execute(ctx context.Context, name string, args []string, streams genericiooptions.IOStreams) int {
	return execute(ctx, name, NewRootCommand(name, streams), args, streams)
}

// execute runs the command tree of binary name, prints its error in that binary's words and maps it
// to the exit code.
func execute(ctx context.Context, name string, root *cobra.Command, args []string, streams genericiooptions.IOStreams) int {
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	err := root.ExecuteContext(option.WithProgram(ctx, displayName(name)))
	var e *ExitError
	if err != nil && !(errors.As(err, &e) && e.Err == nil) {
		fmt.Fprintln(streams.ErrOut, "error:", printer.Line(speak(name, err)))
	}
	return ExitCode(err)
}

// Main runs the command named name (unprune, or one of its plugin names) on the process's
// arguments and streams, and exits with its code. The first SIGINT or SIGTERM stops unprune
// gracefully (no new patches; the journal says what was done); a second one ends it at once.
func Main(name string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := Execute(ctx, name, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
