package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one lab component running in the background, detached from the terminal that started
// it so that `make lab-up` can return while the lab keeps running.
type process struct {
	Name string   // file name stem for the pid and log files
	Path string   // absolute binary path
	Args []string // arguments after argv[0]
	Env  []string // extra environment, appended to the parent's
	Dir  string   // working directory
}

func pidFile(state, name string) string { return filepath.Join(state, "pids", name+".pid") }
func logFile(state, name string) string { return filepath.Join(state, "logs", name+".log") }

// start launches p in its own session, records its PID and returns it. The PID file also records the
// binary so that stop never signals a PID the kernel has since handed to an unrelated program.
func (p process) start(state string) (int, error) {
	for _, d := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			return 0, err
		}
	}
	logf, err := os.OpenFile(logFile(state, p.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	// Record the binary as the kernel will report it (/proc/PID/exe), symlinks resolved: Debian's
	// redis-server, for one, is a link to redis-check-rdb.
	path, err := filepath.EvalSymlinks(p.Path)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", p.Name, err)
	}
	cmd := exec.Command(path, p.Args...)
	cmd.Args[0] = p.Path
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Dir = p.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", p.Name, err)
	}
	pid := cmd.Process.Pid
	// Reap the child when it exits so that a crashed component does not linger as a zombie while
	// the process that started it (a test binary) is still running.
	go func() { _ = cmd.Wait() }()
	content := fmt.Sprintf("%d\n%s\n", pid, path)
	if err := os.WriteFile(pidFile(state, p.Name), []byte(content), 0o644); err != nil {
		return pid, err
	}
	return pid, nil
}

// runningPID returns the PID recorded for name when that process is still alive and still runs the
// recorded binary; 0 otherwise.
func runningPID(state, name string) int {
	b, err := os.ReadFile(pidFile(state, name))
	if err != nil {
		return 0
	}
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	pid, err := strconv.Atoi(lines[0])
	if err != nil || pid <= 0 {
		return 0
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0
	}
	if len(lines) == 2 && strings.TrimSuffix(exe, " (deleted)") != lines[1] {
		return 0
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// A zombie has exited; only its parent can still reap it.
		if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return 0
		}
	}
	return pid
}

// stopProcess ends the process recorded under name: SIGTERM, then SIGKILL after grace.
func stopProcess(state, name string, grace time.Duration) error {
	pid := runningPID(state, name)
	defer os.Remove(pidFile(state, name))
	if pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", name, pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if exited(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	for i := 0; i < 100 && !exited(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// exited reports whether a process signalled to stop is gone or a zombie. runningPID cannot tell:
// while a process exits, the kernel drops its /proc/PID/exe link before it becomes a zombie, so
// runningPID already says 0 while it still runs (and holds its ports).
func exited(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// recordedProcesses lists the names with a PID file, in a stable order.
func recordedProcesses(state string) []string {
	entries, _ := os.ReadDir(filepath.Join(state, "pids"))
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
			names = append(names, n)
		}
	}
	return names
}

// logTail returns the last lines of a component's log, for error messages that say why it died.
func logTail(state, name string, lines int) string {
	b, err := os.ReadFile(logFile(state, name))
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
