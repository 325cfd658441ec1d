//go:build lab

// Package e2e holds tests against the lab: a real kube-apiserver and real Argo CD.
// Run them with `make test` (they need the lab's binaries, which `make lab-build` builds or finds cached).
//
// Every test runs in parallel with the others (`make test-lab` runs six at a time), so a test reads
// only what it made: its own apps, objects and journals. Tests that count across a whole Argo CD
// namespace (a watch replica's Events and metrics) take an installation of their own (Namespace in
// lab.ArgoCDConfig). Only the tests that commit kube-system, which the whole lab shares, are not
// parallel: go test runs them first, alone.
package e2e

import (
	"os"
	"testing"

	"github.com/unprune/unprune/lab/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
