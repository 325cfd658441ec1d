// Command argocd-unprune is unprune as an Argo CD CLI plugin (Argo CD v3.1+): `argocd unprune ...`.
package main

import "github.com/unprune/unprune/internal/cli"

func main() { cli.Main(cli.NameArgoCDPlugin) }
