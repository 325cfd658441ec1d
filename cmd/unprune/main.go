// Command unprune releases Argo CD resources stuck on "requires pruning" without deleting anything.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal stops unprune gracefully (no new patches; the journal says what was done);
	// after it a second one ends the process at once.
	go func() { <-ctx.Done(); stop() }()
	code := cli.Execute(ctx, cli.NameUnprune, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
