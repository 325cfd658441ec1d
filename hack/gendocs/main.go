// Command gendocs writes the command reference, docs/commands/*.md, from unprune's own command
// tree with cobra's generator: `make docs`. Its test fails when the committed pages differ from
// what the current tree generates.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cli"
)

func main() {
	dir := flag.String("dir", "docs/commands", "where the pages are written; its *.md are replaced")
	flag.Parse()
	if err := generate(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// generate replaces dir's pages with those of the unprune command tree.
func generate(dir string) error {
	root := cli.NewRootCommand(cli.NameUnprune, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	// Cobra adds `completion` only when the tree runs; the reference documents it too.
	root.InitDefaultCompletionCmd()
	home, _ := os.UserHomeDir()
	stabilize(root, home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return doc.GenMarkdownTree(root, dir)
}

// stabilize makes the pages the same on every machine and day: no generation date, and defaults
// derived from the home directory (kubectl's --cache-dir) written as $HOME.
func stabilize(cmd *cobra.Command, home string) {
	cmd.DisableAutoGenTag = true
	fix := func(f *pflag.Flag) {
		if home != "" && strings.Contains(f.DefValue, home) {
			f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
		}
	}
	cmd.LocalFlags().VisitAll(fix)
	cmd.PersistentFlags().VisitAll(fix)
	for _, c := range cmd.Commands() {
		stabilize(c, home)
	}
}
