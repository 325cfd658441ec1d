package cli

import (
	"context"

	"errors"
	"fmt"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Exit codes are part of the product: CI jobs and scripts branch on them.
const (
	ExitOK        = 0 // nothing to do, or everything done
	ExitFindings  = 1 // scan found stuck apps; a preview or dry-run has changes to make
	ExitFailure   = 2 // bad input or a failure talking to the cluster; nothing was changed unless said
	ExitRefused   = 3 // a safety rule refused; nothing was changed
	ExitPartial   = 4 // some objects were changed, others not: see the journal
	ExitNotSynced = 5 // every change was made, but the app did not show Synced in time
)

// exitCodesHelp is shown in every command's help.
const exitCodesHelp = `Exit codes:
  0  nothing to do, or everything done (and the app shown Synced)
  1  findings: stuck apps found, or a preview/dry-run with changes to make
  2  error: bad input or a failure talking to the cluster
  3  refused by a safety rule; nothing was changed
  4  partially applied: some objects changed, some not (see the journal)
  5  applied, but the Application did not show Synced before --timeout`

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

func refused(format string, args ...any) error {
	return &ExitError{Code: ExitRefused, Err: fmt.Errorf(format, args...)}
}

func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf(format, args...)}
}

// Execute runs the command tree for args and returns the process exit code, having printed any
// error on stderr. Both binaries (unprune, kubectl-unprune) are this one call.
func Execute(ctx context.Context, name string, args []string, streams genericiooptions.IOStreams) int {
	root := NewRootCommand(name, streams)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	err := root.ExecuteContext(ctx)
	var e *ExitError
	if err != nil && !(errors.As(err, &e) && e.Err == nil) {
		fmt.Fprintln(streams.ErrOut, "error:", err)
	}
	return ExitCode(err)
}
