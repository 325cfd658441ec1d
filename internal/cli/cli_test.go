package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/printer"
)

// run invokes the command tree in process, with no cluster: every case here must fail or finish
// before connecting (the kubeconfig points nowhere).
func run(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	kubeconfig := filepath.Join(t.TempDir(), "none")
	full := append([]string{"--kubeconfig", kubeconfig, "--journal-dir", filepath.Join(t.TempDir(), "journals")}, args...)
	code = Execute(context.Background(), name, full, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

func TestFlagErrorsNeedNoCluster(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"detach"}, "name the APP"},
		{[]string{"detach", "app"}, "name the resources to detach"},
		{[]string{"detach", "app", "team-b"}, `resource "team-b": use KIND[.GROUP]/NAME`},
		{[]string{"detach", "/app", "--all"}, `APP "/app": use NAME or NAMESPACE/NAME`},
		{[]string{"detach", "a/b/c", "--all"}, "looks like a RESOURCE"},
		{[]string{"scan", "--cluster-credentials=mine"}, `the only value is "argocd"`},
		{[]string{"scan", "--cluster-context=prod"}, "use NAME_OR_SERVER=CONTEXT"},
		{[]string{"detach", "app", "--all", "--dry-run=true"}, `--dry-run="true": use "client"`},
		{[]string{"detach", "app", "--all", "--dry-run=none"}, "--dry-run=none applies changes: add --yes"},
		{[]string{"detach", "app", "--all", "--timeout=0"}, "--timeout must be positive"},
		{[]string{"detach", "app", "--all", "--workers=0"}, "--workers must be positive"},
		{[]string{"detach", "app", "--all", "--strategy=delete"}, "unknown strategy"},
		{[]string{"detach", "-A"}, "selecting apps with -A, -l or --project needs --all"},
		{[]string{"detach", "app", "-A", "--all"}, "name APPs, or select them"},
		{[]string{"detach", "app", "--all", "-n", "x", "-A"}, "-n and -A exclude each other"},
		{[]string{"detach", "app", "--all", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"scan", "-o", "table", "--no-headers=false", "-o", "csv"}, `unknown output format "csv"`},
		{[]string{"scan", "-o", "json", "--no-headers"}, "--no-headers goes with table output"},
		{[]string{"scan", "--argocd-version", "three"}, "--argocd-version"},
		{[]string{"audit", "--fail-on", "some"}, `--fail-on="some": use high or any`},
		{[]string{"undo"}, "name one JOURNAL file, or use --latest or --list"},
		{[]string{"undo", "--latest", "--list"}, "name one JOURNAL file"},
		{[]string{"undo", "--latest", "--dry-run=none"}, "add --yes"},
		{[]string{"guard", "policy", "--yes"}, "--yes and --dry-run go with --apply"},
		{[]string{"guard", "policy", "--name", "team-a"}, `use RESOURCE/NAME`},
		{[]string{"guard", "protect", "ns"}, `resource "ns"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, stderr, code := run(t, NameUnprune, tt.args...)
			if code != ExitFailure || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, ExitFailure, tt.want)
			}
			if strings.Contains(stderr, "connect") || strings.Contains(stderr, "cannot reach") {
				t.Fatalf("validation connected to a cluster: %s", stderr)
			}
		})
	}
}

// TestPluginNaming: as a kubectl or argocd plugin, unprune names itself as its host shows it, and
// generates no completion script that would replace the host's own.
func TestPluginNaming(t *testing.T) {
	for name, display := range map[string]string{NameKubectlPlugin: "kubectl unprune", NameArgoCDPlugin: "argocd unprune", NameUnprune: "unprune"} {
		t.Run(name, func(t *testing.T) {
			stdout, _, code := run(t, name, "detach", "--help")
			if code != ExitOK || !strings.Contains(stdout, display+" detach APP") {
				t.Fatalf("help of %s (exit %d) does not name the command %q:\n%s", name, code, display, stdout)
			}
			_, stderr, code := run(t, name, "completion", "bash")
			if name == NameUnprune {
				if code != ExitOK {
					t.Fatalf("unprune completion bash: exit %d %s", code, stderr)
				}
				return
			}
			if code == ExitOK {
				t.Fatalf("%s generated a completion script", name)
			}
		})
	}
}

func TestUndoListWithoutJournals(t *testing.T) {
	stdout, stderr, code := run(t, NameUnprune, "undo", "--list")
	if code != ExitOK || stdout != "" || !strings.Contains(stderr, "No journals in") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, _, code = run(t, NameUnprune, "undo", "--list", "-o", "json")
	var doc printer.JournalList
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || doc.Kind != "JournalList" || doc.Items == nil {
		t.Fatalf("undo --list -o json: exit %d\n%s", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := run(t, NameUnprune, "version", "-o", "json")
	var doc printer.VersionDoc
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || doc.Kind != "Version" || doc.Client.Version == "" || doc.Client.GoVersion == "" {
		t.Fatalf("version -o json: exit %d\n%s", code, stdout)
	}
	stdout, _, _ = run(t, NameUnprune, "version", "--short")
	if strings.Count(stdout, "\n") != 1 {
		t.Fatalf("version --short: %q", stdout)
	}
}

// TestUnreachableServer: one line naming the server, exit 2, right away.
func TestUnreachableServer(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: closed, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: closed, context: {cluster: closed, user: u}}]
current-context: closed
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, NameUnprune, "--kubeconfig", kubeconfig, "scan")
	if code != ExitFailure || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestRunExit(t *testing.T) {
	apps := func(verified bool, errText string) []printer.AppSummary {
		return []printer.AppSummary{{Application: printer.AppRef{Namespace: "argocd", Name: "a"}, Verification: &printer.Verification{Verified: verified, Error: errText}}}
	}
	compared := func(verified bool) []printer.AppSummary {
		return []printer.AppSummary{{Application: printer.AppRef{Namespace: "argocd", Name: "a"}, Verification: &printer.Verification{Verified: verified, Compared: true}}}
	}
	tests := []struct {
		name   string
		mode   string
		s      printer.ChangeSummary
		verify bool
		want   int
		// says is a part of the message the exit code comes with.
		says string
	}{
		{name: "preview with changes", mode: "Preview", s: printer.ChangeSummary{Planned: 2}, want: ExitFindings},
		{name: "preview, nothing to do", mode: "Preview", s: printer.ChangeSummary{Unchanged: 2}, want: ExitOK},
		{name: "preview with a refusal", mode: "Preview", s: printer.ChangeSummary{Planned: 1, Refused: 1}, want: ExitRefused},
		{name: "preview with a failed read", mode: "Preview", s: printer.ChangeSummary{Planned: 1, Failed: 1}, want: ExitFailure},
		{name: "dry run accepted", mode: "ServerDryRun", s: printer.ChangeSummary{DryRunAccepted: 2}, want: ExitFindings},
		{name: "dry run rejected", mode: "ServerDryRun", s: printer.ChangeSummary{DryRunAccepted: 1, Failed: 1}, want: ExitFailure},
		{name: "applied and verified", mode: "Apply", s: printer.ChangeSummary{Applied: 2, Applications: apps(true, "")}, verify: true, want: ExitOK},
		{name: "released already, Argo CD has not compared", mode: "Apply", s: printer.ChangeSummary{Unchanged: 2, Applications: apps(false, "")}, verify: true,
			want: ExitNotSynced, says: "has not compared the app since"},
		{name: "released already and verified", mode: "Apply", s: printer.ChangeSummary{Unchanged: 2, Applied: 1, Applications: compared(true)}, verify: true, want: ExitOK},
		{name: "compared, still listed", mode: "Apply", s: printer.ChangeSummary{Applied: 1, Applications: compared(false)}, verify: true,
			want: ExitNotSynced, says: "did not show the release"},
		{name: "applied, not shown", mode: "Apply", s: printer.ChangeSummary{Applied: 2, Applications: apps(false, "")}, verify: true, want: ExitNotSynced},
		{name: "applied, verification failed to run", mode: "Apply", s: printer.ChangeSummary{Applied: 2, Applications: apps(false, "timeout")}, verify: true, want: ExitNotSynced},
		{name: "applied without waiting", mode: "Apply", s: printer.ChangeSummary{Applied: 2}, want: ExitOK},
		{name: "partial", mode: "Apply", s: printer.ChangeSummary{Applied: 1, Failed: 1}, want: ExitPartial},
		{name: "interrupted", mode: "Apply", s: printer.ChangeSummary{Applied: 3, NotAttempted: 7, Interrupted: true}, want: ExitPartial},
		{name: "interrupted before any", mode: "Apply", s: printer.ChangeSummary{NotAttempted: 7, Interrupted: true}, want: ExitFailure},
		{name: "all failed", mode: "Apply", s: printer.ChangeSummary{Failed: 2}, want: ExitFailure},
		{name: "partial undo", mode: "Apply", s: printer.ChangeSummary{Restored: 1, Refused: 1}, want: ExitPartial},
		{name: "undo refused", mode: "Apply", s: printer.ChangeSummary{Refused: 2}, want: ExitRefused},
		{name: "undo restored", mode: "Apply", s: printer.ChangeSummary{Restored: 2, Unchanged: 1}, want: ExitOK},
		{name: "gone and applied", mode: "Apply", s: printer.ChangeSummary{Applied: 1, Gone: 1}, want: ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.Total = s.Planned + s.Unchanged + s.Refused + s.Gone + s.DryRunAccepted + s.Applied + s.Restored + s.Failed + s.NotAttempted
			code, msg := runExit(printer.ChangeReport{Mode: tt.mode, Summary: s, Journal: "/j.json"}, tt.verify)
			if code != tt.want {
				t.Fatalf("exit %d (%s), want %d", code, msg, tt.want)
			}
			if code >= ExitFailure && msg == "" {
				t.Fatalf("exit %d without a message", code)
			}
			if !strings.Contains(msg, tt.says) {
				t.Fatalf("exit %d says %q, want it to say %q", code, msg, tt.says)
			}
		})
	}
}

func TestConfirm(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{{"y\n", true}, {"YES\n", true}, {" yes \n", true}, {"n\n", false}, {"\n", false}, {"", false}, {"yess\n", false}} {
		var errOut bytes.Buffer
		got, _ := confirm(genericiooptions.IOStreams{In: strings.NewReader(tt.in), Out: &bytes.Buffer{}, ErrOut: &errOut}, "Go? ")
		if got != tt.want {
			t.Errorf("confirm(%q) = %t, want %t", tt.in, got, tt.want)
		}
		if errOut.String() != "Go? " {
			t.Errorf("the question went to %q, want stderr", errOut.String())
		}
	}
}

// Input that needs no cluster to judge is judged before anything is reached: with a kubeconfig
// that names no file, a bad rename or broken manifests say so, not the kubeconfig (which a scan,
// the control, does).
func TestInputIsJudgedBeforeConnecting(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "nope"))
	cases := []struct {
		args  []string
		stdin string
		want  string
	}{
		{args: []string{"rename", "shop", "shop"}, want: "is APP's name already"},
		{args: []string{"check", "shop", "--manifests", "-"}, stdin: "kind: [\n", want: "--manifests: stdin: document 1"},
		{args: []string{"scan"}, want: "$KUBECONFIG names"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), NameUnprune, append(c.args, "--journal-dir", t.TempDir()),
			genericiooptions.IOStreams{In: strings.NewReader(c.stdin), Out: &out, ErrOut: &errOut})
		if code != ExitFailure || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("unprune %s: exit %d, stderr %q; want exit 2 saying %q", strings.Join(c.args, " "), code, errOut.String(), c.want)
		}
	}
}
