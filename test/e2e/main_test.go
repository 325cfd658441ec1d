//go:build lab

// Package e2e holds tests against the lab: a real kube-apiserver and real Argo CD.
// Run them with `make test` (they need the lab's binaries, which `make lab-build` builds or finds cached).
package e2e

import (
	"os"
	"testing"

	"github.com/unprune/unprune/lab/labtest"
)

func TestMain(m *testing.M) { os.Exit(labtest.Main(m)) }
