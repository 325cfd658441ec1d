//go:build lab

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/unprune/unprune/lab"
)

// TestUpDownStatus drives the command as `make lab-up/lab-status/lab-down` do: up prints the
// kubeconfig last, a second up with the same configuration returns the running lab, another
// configuration is refused, and down stops every process up started.
func TestUpDownStatus(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LAB_DIR": dir, "ARGOCD_VERSION": "none", "KCM": "off"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	cmd := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, getenv, &out, &errOut)
		return out.String(), err
	}
	t.Cleanup(func() { _ = lab.Down(dir) })

	out, err := cmd("up")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := "KUBECONFIG=" + filepath.Join(dir, "kubeconfig")
	if lines[len(lines)-1] != want {
		t.Fatalf("last line of up = %q, want %q", lines[len(lines)-1], want)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubeconfig-noaccess")); err != nil {
		t.Errorf("no kubeconfig for the user without rights beside the admin's: %v", err)
	}
	first, err := lab.Load(dir)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := cmd("up"); err != nil {
		t.Fatalf("second up: %v", err)
	}
	again, _ := lab.Load(dir)
	if !again.StartedAt.Equal(first.StartedAt) || again.APIServerPort != first.APIServerPort {
		t.Errorf("a second up with the same configuration restarted the lab")
	}
	env["KCM"] = "on"
	if _, err := cmd("up"); err == nil || !strings.Contains(err.Error(), "make lab-down") {
		t.Errorf("up with another configuration: %v; want a refusal that says to run make lab-down", err)
	}
	env["KCM"] = "off"

	status, err := cmd("status")
	if err != nil || strings.Count(status, "running") != 2 || !strings.Contains(status, "kube-apiserver") {
		t.Errorf("status = %q, %v; want etcd and kube-apiserver running", status, err)
	}
	pids := map[string]int{}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		b, err := os.ReadFile(filepath.Join(dir, "pids", name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
		if err != nil {
			t.Fatal(err)
		}
		pids[name] = pid
	}
	if _, err := cmd("down"); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after down", name, pid)
		}
	}
}

// alive reports a process that exists and has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
