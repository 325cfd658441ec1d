package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/session/sessiontest"
	"github.com/unprune/unprune/internal/version"
)

// -update rewrites the golden files from what the commands print now: review the diff before
// committing it.
var update = flag.Bool("update", false, "rewrite testdata/golden from the commands' output")

// goldenTime is the clock of every in-process run: reports and journals carry it.
var goldenTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// result is what one run of a command tree printed and returned.
type result struct {
	// program is how the user ran it: unprune, or a plugin as its host's subcommand.
	program               string
	stdin, stdout, stderr string
	code                  int
}

// runIn runs the command tree of binary name in process against the fake installation w, with args
// after the global flags every run gets (a journal directory of w's, and a kubeconfig leading
// nowhere: the session is the fake's, so nothing may try the kubeconfig).
func runIn(t *testing.T, w *world, name, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	g := newFactory(name, streams)
	g.Now = w.now
	g.NewSession = sessiontest.Factory(w.argo, w.env, w.rand)
	full := append([]string{"--kubeconfig", filepath.Join(w.dir, "no-kubeconfig"), "--journal-dir", w.journalDir()}, args...)
	// A wait that never ends (a clock that does not move past a --timeout) fails the case instead
	// of the whole package's run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := execute(ctx, name, newRootCommand(name, g), full, streams)
	return result{program: displayName(name), stdin: stdin, stdout: out.String(), stderr: errOut.String(), code: code}
}

// goldenVars are the values that differ per run or per machine, longest first so that a value
// containing another (the journal directory, in the world's directory) is replaced whole.
func goldenVars(w *world) [][2]string {
	return [][2]string{
		{"JournalDir", w.journalDir()},
		{"Dir", w.dir},
		{"Version", version.Get().String()},
		{"GoVersion", runtime.Version()},
		{"Platform", runtime.GOOS + "/" + runtime.GOARCH},
	}
}

// golden compares a run with testdata/golden/<name>.golden: the command line (and its stdin), the
// exit code, stdout and stderr, with the values that differ per run (the world's directory, the
// tool's version, the Go toolchain) as template placeholders, as flux2's golden files have them.
func golden(t *testing.T, w *world, file string, r result, args ...string) {
	t.Helper()
	got := "$ " + r.program + " " + strings.Join(args, " ") + "\n"
	if r.stdin != "" {
		got += "--- stdin\n" + r.stdin
	}
	got += "--- exit " + strconv.Itoa(r.code) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
	vars := map[string]string{}
	for _, kv := range goldenVars(w) {
		vars[kv[0]] = kv[1]
	}
	path := filepath.Join("testdata", "golden", file+".golden")
	if *update {
		// Output that holds template actions itself (-o go-template=…) is kept literal.
		templated := strings.ReplaceAll(got, "{{", `{{"{{"}}`)
		for _, kv := range goldenVars(w) {
			if kv[1] != "" {
				templated = strings.ReplaceAll(templated, kv[1], "{{ ."+kv[0]+" }}")
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(templated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with: go test ./internal/cli -run %s -update)", err, t.Name())
	}
	tmpl, err := template.New(file).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var want bytes.Buffer
	if err := tmpl.Execute(&want, vars); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got != want.String() {
		t.Errorf("%s differs (rewrite with -update and review the diff):\n%s", path, lineDiff(want.String(), got))
	}
}

// lineDiff shows the first lines that differ, with a little context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
		if shown++; shown == 8 {
			b.WriteString("  …\n")
			break
		}
	}
	return b.String()
}
