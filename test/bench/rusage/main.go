// Command rusage runs a command and writes its wall time and the resource usage the kernel reports
// for it, as JSON, to the file named by -o; it exits with the command's exit code.
//
// The benchmarks start every process they time through it. Linux reports as a child's peak RSS at
// least its parent's peak at the moment of exec: Go starts children with vfork, so until exec the
// child runs in the parent's memory, whose high-water mark the kernel keeps for the child. A
// benchmark holding hundreds of MiB of parsed output would have every child report that much. This
// command is small, so the peak it passes on is negligible and the figure is the command's own.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Usage is what the file holds.
type Usage struct {
	WallNanos int64 `json:"wallNanos"`
	UserNanos int64 `json:"userNanos"`
	SysNanos  int64 `json:"sysNanos"`
	MaxRSSKiB int64 `json:"maxRSSKiB"`
	ExitCode  int   `json:"exitCode"`
}

func main() {
	out := flag.String("o", "", "the file to write the usage to")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage -o FILE -- COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	u := Usage{WallNanos: int64(time.Since(start))}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(127)
	}
	st := cmd.ProcessState
	u.ExitCode, u.UserNanos, u.SysNanos = st.ExitCode(), int64(st.UserTime()), int64(st.SystemTime())
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSSKiB = ru.Maxrss
	}
	data, _ := json.Marshal(u)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(127)
	}
	os.Exit(u.ExitCode)
}
