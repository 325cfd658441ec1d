// Package cmdtest runs unprune in process, as a user would from a shell, for the tests and
// benchmarks against the lab.
package cmdtest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/cli"
)

// Result is one invocation's output and exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run invokes unprune with kubeconfig and a journal directory of the caller's, no standard input,
// and logs the invocation with its output on t.
func Run(t testing.TB, kubeconfig, journalDir string, args ...string) Result {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--kubeconfig", kubeconfig, "--journal-dir", journalDir}, args...)
	code := cli.Execute(context.Background(), "unprune", full,
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	r := Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	t.Logf("unprune %s → exit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, r.Stdout, r.Stderr)
	return r
}

// RunNamed invokes unprune under another binary name (argocd-unprune, kubectl-unprune) with only
// the journal directory added: the caller passes how to reach Argo CD.
func RunNamed(t testing.TB, name, journalDir string, args ...string) Result {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--journal-dir", journalDir}, args...)
	code := cli.Execute(context.Background(), name, full,
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	r := Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	t.Logf("%s %s → exit %d\n--- stdout\n%s--- stderr\n%s", name, strings.Join(args, " "), code, r.Stdout, r.Stderr)
	return r
}
