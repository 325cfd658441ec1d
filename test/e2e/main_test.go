//go:build lab

// Package e2e holds tests against the lab: a real kube-apiserver and real Argo CD.
// Run them with `make test` (they need the lab's binaries, which `make lab-build` builds or finds cached).
//
// Tests run in parallel with each other (`make test-lab` runs six at a time), so a test reads only
// what it made: its own apps, objects and journals. Tests that count across a whole Argo CD namespace
// (a watch replica's Events and metrics) take an installation of their own (Namespace in
// lab.ArgoCDConfig). Two kinds are not parallel, and go test runs them first, before the others
// start: the tests that commit kube-system, which the whole lab shares, and the watch's tests, whose
// replicas must answer within seconds (a run with them among six others, the two cores saturated,
// missed a 10 s and a 20 s window).
package e2e

import (
	"os"
	"testing"

	"github.com/unprune/unprune/lab/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
