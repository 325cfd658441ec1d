//go:build lab

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestUpRemoteServer is `make lab-up REMOTE=1 SERVER=1`: the remote cluster starts and is registered
// with the installation, argocd-server answers, up says where the remote's kubeconfig is and how to
// log in (on stderr), the last stdout line stays KUBECONFIG=…, and down stops every process.
func TestUpRemoteServer(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LAB_DIR": dir, "ARGOCD_VERSION": "v3.6.1", "REMOTE": "1", "SERVER": "1"}
	getenv := func(k string) string { return env[k] }
	t.Cleanup(func() { _ = lab.Down(dir) })
	var out, errOut bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), []string{"up"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("up: %v\n%s", err, errOut.String())
	}
	t.Logf("up with the remote and argocd-server in %.1fs", time.Since(start).Seconds())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if want := "KUBECONFIG=" + filepath.Join(dir, "kubeconfig"); lines[len(lines)-1] != want {
		t.Errorf("last line of up = %q, want %q", lines[len(lines)-1], want)
	}
	st, err := lab.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Remote == nil || len(st.Remote.Registrations) != 1 || len(st.ArgoCD) != 1 || st.ArgoCD[0].ServerURL == "" {
		t.Fatalf("state after up: remote %+v, argocd %+v", st.Remote, st.ArgoCD)
	}
	stderr := errOut.String()
	for _, want := range []string{
		filepath.Join(dir, "remote", "kubeconfig"),
		filepath.Join(dir, "remote", "kubeconfig-noaccess"),
		fmt.Sprintf("argocd login 127.0.0.1:%d --plaintext --username admin --password %s", st.ArgoCD[0].ServerPort, lab.ServerAdmin.Password),
		"--username deployer --password " + lab.ServerDeployer.Password,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up's stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, f := range []string{st.Remote.Kubeconfig, st.Remote.NoAccessKubeconfig} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	resp, err := http.Post(st.ArgoCD[0].ServerURL+"/api/v1/session", "application/json",
		strings.NewReader(fmt.Sprintf(`{"username":"admin","password":%q}`, lab.ServerAdmin.Password)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("admin login: HTTP %d", resp.StatusCode)
	}

	pids := map[string]int{}
	for name, running := range st.Running() {
		if !running {
			t.Errorf("%s is not running after up", name)
		}
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
	for _, name := range []string{"remote-etcd", "remote-kube-apiserver", "remote-kube-controller-manager", "argocd-server"} {
		if pids[name] == 0 {
			t.Errorf("no %s among the recorded processes %v", name, pids)
		}
	}
	if err := run(context.Background(), []string{"down"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still running after down", name, pid)
		}
	}
}
