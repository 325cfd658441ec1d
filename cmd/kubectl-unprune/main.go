// Command kubectl-unprune is unprune as a kubectl plugin: `kubectl unprune ...`.
package main

import "github.com/unprune/unprune/internal/cli"

func main() { cli.Main(cli.NameKubectlPlugin) }
