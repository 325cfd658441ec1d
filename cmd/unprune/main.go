// Command unprune releases Argo CD resources stuck on "requires pruning" without deleting anything.
package main

import "github.com/unprune/unprune/internal/cli"

func main() { cli.Main(cli.NameUnprune) }
