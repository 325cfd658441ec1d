//go:build tools

// Package tools keeps Argo CD's command in this module's dependency graph.
package tools

import _ "github.com/argoproj/argo-cd/v3/cmd"
