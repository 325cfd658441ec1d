package cli

import (
	"strings"
	"testing"
)

// The golden tests run every command in process against the incident's world (world_test.go), each
// case from a fresh world, and compare what it prints and its exit code with testdata/golden: one
// file per command, TestGolden<Command>. Rewrite the files with
//
//	go test ./internal/cli -run TestGolden -update
//
// and read every one you change: a golden file that records a wrong answer is a bug.

// goldenCase is one command line run against a fresh world.
type goldenCase struct {
	name  string
	args  []string
	stdin string
	// setup prepares the world before the run: more apps, a failing patch, earlier runs.
	setup func(w *world)
	// keep cuts the output down to what the case is about (a completion script's first line).
	keep func(r result) result
	// binary runs the case as a plugin (kubectl-unprune, argocd-unprune) instead of unprune.
	binary string
}

// runGoldens runs the cases, each as a subtest with its golden file. "{{ .JournalDir }}" and
// "{{ .Dir }}" in args are the world's, as the golden files show them.
func runGoldens(t *testing.T, cases []goldenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				a = strings.ReplaceAll(a, "{{ .JournalDir }}", w.journalDir())
				args[i] = strings.ReplaceAll(a, "{{ .Dir }}", w.dir)
			}
			binary := tc.binary
			if binary == "" {
				binary = NameUnprune
			}
			r := runIn(t, w, binary, tc.stdin, args...)
			if tc.keep != nil {
				r = tc.keep(r)
			}
			golden(t, w, tc.name, r, args...)
		})
	}
}

// mustRun runs an earlier command of a case's setup, which must end with code.
func (w *world) mustRun(code int, args ...string) {
	w.t.Helper()
	if r := w.run(args...); r.code != code {
		w.t.Fatalf("setup: unprune %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
}

// firstLine keeps stdout's first line.
func firstLine(r result) result {
	line, _, _ := strings.Cut(r.stdout, "\n")
	r.stdout = line + "\n"
	return r
}
