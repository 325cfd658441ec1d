package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/printer"
)

// NewVersionCommand builds `unprune version`.
func NewVersionCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	var short bool
	var output outputFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print unprune's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			doc := printer.NewVersionDoc()
			if output.out.Document() {
				return output.out.Print(streams.Out, doc, func() []string { return []string{doc.Client.String()} })
			}
			if short {
				_, err := fmt.Fprintln(streams.Out, doc.Client.String())
				return err
			}
			c := doc.Client
			_, err := fmt.Fprintf(streams.Out, "unprune %s\n  commit: %s\n  built:  %s\n  go:     %s %s\n",
				c.String(), orUnknownText(c.Commit), orUnknownText(c.BuildDate), c.GoVersion, c.Platform)
			return err
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print only the version")
	output.add(cmd, false)
	return cmd
}

func orUnknownText(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
