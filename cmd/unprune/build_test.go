package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildStampsTheCommit: `make build`, as the README says to run it, gives binaries that
// report the commit they were built from, on any machine (GOFLAGS=-buildvcs=false included).
func TestMakeBuildStampsTheCommit(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to build as the README says: %v", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD (the test runs in the checkout): %v", err)
	}
	bin := t.TempDir()
	if out, err := exec.Command("make", "-C", "../..", "build", "BIN_DIR="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, name := range []string{"unprune", "kubectl-unprune", "argocd-unprune"} {
		out, err := exec.Command(filepath.Join(bin, name), "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("%s version -o json: %v", name, err)
		}
		var doc struct {
			Client struct {
				Version, Commit, BuildDate string
			}
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s version -o json: %v\n%s", name, err, out)
		}
		if doc.Client.Commit != strings.TrimSpace(string(head)) || doc.Client.Version == "" || doc.Client.Version == "devel" || doc.Client.BuildDate == "" {
			t.Errorf("%s version = %+v, want commit %s, a version and a date", name, doc.Client, head)
		}
	}
}
