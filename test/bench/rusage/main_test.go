package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestMain lets the test binary serve as the measured command: with RUSAGE_TEST_ALLOC=N it touches
// N MiB and exits.
func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv("RUSAGE_TEST_ALLOC")); err == nil {
		touch(n)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var sink []byte

func touch(mib int) []byte {
	b := make([]byte, mib<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	sink = b
	return b
}

// TestReportsTheCommandsOwnPeak: while this process holds 256 MiB, a command that touches 64 MiB and
// is started through rusage reports its own peak, not this process's.
func TestReportsTheCommandsOwnPeak(t *testing.T) {
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "rusage")
	if out, err := exec.Command("go", "build", "-o", wrapper, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	held := touch(256)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	usageFile := filepath.Join(dir, "usage.json")
	cmd := exec.Command(wrapper, "-o", usageFile, "--", self)
	cmd.Env = append(os.Environ(), "RUSAGE_TEST_ALLOC=64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rusage: %v\n%s", err, out)
	}
	data, err := os.ReadFile(usageFile)
	if err != nil {
		t.Fatal(err)
	}
	var u Usage
	if err := json.Unmarshal(data, &u); err != nil {
		t.Fatal(err)
	}
	if u.MaxRSSKiB < 64<<10 || u.MaxRSSKiB > 160<<10 || u.ExitCode != 0 || u.WallNanos <= 0 {
		t.Fatalf("usage %+v: want the command's own peak, 64 MiB and some, well under the 256 MiB held here", u)
	}
	_ = held[len(held)-1]
}
