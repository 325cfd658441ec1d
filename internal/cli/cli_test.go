package cli

import (
	"bytes"

	"errors"
	"fmt"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cluster"
)

func TestParseResourceArg(t *testing.T) {
	tests := []struct {
		in   string
		want resourceArg
	}{
		{in: "Namespace/kube-system", want: resourceArg{Kind: "Namespace", Name: "kube-system"}},
		{in: "ConfigMap/guestbook/settings", want: resourceArg{Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}},
		{in: "Deployment.apps/guestbook/ui", want: resourceArg{Kind: "Deployment", Group: "apps", Namespace: "guestbook", Name: "ui"}},
		{in: "ClusterRole.rbac.authorization.k8s.io/system:aggregate-to-admin",
			want: resourceArg{Kind: "ClusterRole", Group: "rbac.authorization.k8s.io", Name: "system:aggregate-to-admin"}},
		{in: "CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com",
			want: resourceArg{Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Name: "widgets.example.com"}},
		{in: "namespace/team-a", want: resourceArg{Kind: "namespace", Name: "team-a"}},
	}
	for _, tt := range tests {
		got, err := parseResourceArg(tt.in)
		if err != nil {
			t.Errorf("parseResourceArg(%q): %v", tt.in, err)
			continue
		}
		tt.want.raw = tt.in
		if got != tt.want {
			t.Errorf("parseResourceArg(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseResourceArgRejects(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "kube-system", wantErr: `resource "kube-system": use KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME, e.g. Namespace/kube-system`},
		{in: "", wantErr: `resource "": use KIND[.GROUP]/NAME`},
		{in: "Deployment.apps/a/b/c", wantErr: `resource "Deployment.apps/a/b/c": use KIND[.GROUP]/NAME`},
		{in: "/kube-system", wantErr: `resource "/kube-system": kind and name must not be empty`},
		{in: ".apps/guestbook/ui", wantErr: `resource ".apps/guestbook/ui": kind and name must not be empty`},
		{in: "Namespace/", wantErr: `resource "Namespace/": kind and name must not be empty`},
		{in: "ConfigMap/guestbook/", wantErr: `resource "ConfigMap/guestbook/": kind and name must not be empty`},
		{in: "/", wantErr: `resource "/": kind and name must not be empty`},
	}
	for _, tt := range tests {
		_, err := parseResourceArg(tt.in)
		if err == nil {
			t.Errorf("parseResourceArg(%q) accepted", tt.in)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("parseResourceArg(%q) error = %q, want prefix %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestResourceArgMatches(t *testing.T) {
	teamA := cluster.Resource{Version: "v1", Kind: "Namespace", Name: "team-a", RequiresPruning: true}
	ui := cluster.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	settings := cluster.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}
	tests := []struct {
		arg  string
		res  cluster.Resource
		want bool
	}{
		{arg: "Namespace/team-a", res: teamA, want: true},
		{arg: "namespace/team-a", res: teamA, want: true},
		{arg: "NAMESPACE/team-a", res: teamA, want: true},
		{arg: "Namespace/Team-A", res: teamA},
		{arg: "Namespace/team-b", res: teamA},
		{arg: "Namespace/x/team-a", res: teamA},
		{arg: "Deployment.apps/guestbook/ui", res: ui, want: true},
		{arg: "deployment.apps/guestbook/ui", res: ui, want: true},
		{arg: "Deployment/guestbook/ui", res: ui},
		{arg: "Deployment.extensions/guestbook/ui", res: ui},
		{arg: "Deployment.apps/ui", res: ui},
		{arg: "Deployment.apps/other/ui", res: ui},
		{arg: "ConfigMap/guestbook/settings", res: settings, want: true},
		{arg: "ConfigMap.core/guestbook/settings", res: settings},
		{arg: "Secret/guestbook/settings", res: settings},
	}
	for _, tt := range tests {
		arg, err := parseResourceArg(tt.arg)
		if err != nil {
			t.Fatalf("parseResourceArg(%q): %v", tt.arg, err)
		}
		if got := arg.matches(tt.res); got != tt.want {
			t.Errorf("%q matches %s = %v, want %v", tt.arg, tt.res, got, tt.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "nil", err: nil, want: ExitOK},
		{name: "plain error", err: errors.New("boom"), want: ExitFailure},
		{name: "findings", err: Silent(ExitFindings), want: 1},
		{name: "refused", err: refused("no %s", "way"), want: 3},
		{name: "usage", err: usageError("bad flag"), want: 2},
		{name: "partial", err: &ExitError{Code: ExitPartial, Err: errors.New("half")}, want: 4},
		{name: "not synced", err: &ExitError{Code: ExitNotSynced}, want: 5},
		{name: "wrapped", err: fmt.Errorf("context: %w", &ExitError{Code: ExitRefused, Err: errors.New("x")}), want: 3},
		{name: "wrapped silent", err: fmt.Errorf("context: %w", Silent(ExitFindings)), want: 1},
		{name: "explicit zero", err: &ExitError{Code: ExitOK}, want: 0},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%s) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestExitCodeValues(t *testing.T) {
	// The numbers are a contract with scripts.
	got := []int{ExitOK, ExitFindings, ExitFailure, ExitRefused, ExitPartial, ExitNotSynced}
	want := []int{0, 1, 2, 3, 4, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("exit codes = %v, want %v", got, want)
			break
		}
	}
}

func TestExitError(t *testing.T) {
	cause := errors.New("the cause")
	e := &ExitError{Code: ExitRefused, Err: cause}
	if e.Error() != "the cause" {
		t.Errorf("Error() = %q", e.Error())
	}
	if !errors.Is(e, cause) {
		t.Error("ExitError does not unwrap to its cause")
	}
	if got := Silent(ExitFindings).Error(); got != "exit code 1" {
		t.Errorf("Silent(1).Error() = %q", got)
	}
	if got := refused("%d of %d resources refused", 1, 2).Error(); got != "1 of 2 resources refused" {
		t.Errorf("refused message = %q", got)
	}
}

func validDetach() DetachOptions {
	return DetachOptions{App: "guestbook", Resources: []string{"Namespace/team-a"}, Timeout: 2 * time.Minute, Workers: 8}
}

func TestDetachValidate(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*DetachOptions)
		wantErr string // exact; empty: valid
	}{
		{name: "resources named", modify: func(*DetachOptions) {}},
		{name: "--all", modify: func(o *DetachOptions) { o.Resources, o.All = nil, true }},
		{name: "namespaced app", modify: func(o *DetachOptions) { o.App = "team-a/guestbook" }},
		{name: "--dry-run=client", modify: func(o *DetachOptions) { o.DryRun = "client" }},
		{name: "--dry-run=server", modify: func(o *DetachOptions) { o.DryRun = "server" }},
		{name: "--dry-run=none --yes", modify: func(o *DetachOptions) { o.DryRun, o.Yes = "none", true }},
		{name: "--yes alone", modify: func(o *DetachOptions) { o.Yes = true }},
		{name: "several resources", modify: func(o *DetachOptions) {
			o.Resources = []string{"Namespace/team-a", "Deployment.apps/guestbook/ui"}
		}},
		{
			name:    "--all with resources",
			modify:  func(o *DetachOptions) { o.All = true },
			wantErr: "name resources or use --all, not both",
		},
		{
			name:    "neither resources nor --all",
			modify:  func(o *DetachOptions) { o.Resources = nil },
			wantErr: "name the resources to detach (as `unprune scan` prints them) or use --all",
		},
		{
			name:    "bad --dry-run",
			modify:  func(o *DetachOptions) { o.DryRun = "true" },
			wantErr: `--dry-run="true": use "client", "server" or "none"`,
		},
		{
			name:    "--dry-run=none without --yes",
			modify:  func(o *DetachOptions) { o.DryRun = "none" },
			wantErr: "--dry-run=none applies changes: add --yes to confirm",
		},
		{
			name:    "zero timeout",
			modify:  func(o *DetachOptions) { o.Timeout = 0 },
			wantErr: "--timeout must be positive",
		},
		{
			name:    "negative workers",
			modify:  func(o *DetachOptions) { o.Workers = -1 },
			wantErr: "--workers must be positive",
		},
		{
			name:    "app with a leading slash",
			modify:  func(o *DetachOptions) { o.App = "/guestbook" },
			wantErr: `APP "/guestbook": use NAME or NAMESPACE/NAME`,
		},
		{
			name:    "app with a trailing slash",
			modify:  func(o *DetachOptions) { o.App = "team-a/" },
			wantErr: `APP "team-a/": use NAME or NAMESPACE/NAME`,
		},
		{
			name:    "app with two slashes",
			modify:  func(o *DetachOptions) { o.App = "a/b/c" },
			wantErr: `APP "a/b/c": use NAME or NAMESPACE/NAME`,
		},
		{
			name:    "bad resource",
			modify:  func(o *DetachOptions) { o.Resources = []string{"Namespace/team-a", "team-b"} },
			wantErr: `resource "team-b": use KIND[.GROUP]/NAME or KIND[.GROUP]/NAMESPACE/NAME, e.g. Namespace/kube-system`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validDetach()
			tt.modify(&o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted; want %q", tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("Validate = %q, want %q", err, tt.wantErr)
			}
			if code := ExitCode(err); code != ExitFailure {
				t.Errorf("exit code = %d, want %d", code, ExitFailure)
			}
		})
	}
}

func TestUndoValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       UndoOptions
		wantErr string // exact; empty: valid
	}{
		{name: "journal file", o: UndoOptions{Journal: "/tmp/j.json"}},
		{name: "--latest --yes", o: UndoOptions{Latest: true, Yes: true}},
		{name: "--list -o yaml", o: UndoOptions{List: true, Output: "yaml"}},
		{name: "--dry-run=server", o: UndoOptions{Latest: true, DryRun: "server"}},
		{name: "--dry-run=client", o: UndoOptions{Latest: true, DryRun: "client"}},
		{name: "--dry-run=none --yes", o: UndoOptions{Latest: true, DryRun: "none", Yes: true}},
		{name: "nothing chosen", o: UndoOptions{}, wantErr: "name one JOURNAL file, or use --latest or --list"},
		{name: "journal and --latest", o: UndoOptions{Journal: "j.json", Latest: true}, wantErr: "name one JOURNAL file, or use --latest or --list"},
		{name: "--latest and --list", o: UndoOptions{Latest: true, List: true}, wantErr: "name one JOURNAL file, or use --latest or --list"},
		{name: "bad --dry-run", o: UndoOptions{Latest: true, DryRun: "all"}, wantErr: `--dry-run="all": use "client", "server" or "none"`},
		{name: "--dry-run=none without --yes", o: UndoOptions{Latest: true, DryRun: "none"}, wantErr: "--dry-run=none restores: add --yes to confirm"},
		{name: "bad output", o: UndoOptions{Latest: true, Output: "wide"}, wantErr: `unknown output format "wide": use one of table, json, yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted; want %q", tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("Validate = %q, want %q", err, tt.wantErr)
			}
			if code := ExitCode(err); code != ExitFailure {
				t.Errorf("exit code = %d, want %d", code, ExitFailure)
			}
		})
	}
}

func TestUndoValidateSetsFormat(t *testing.T) {
	for in, want := range map[string]string{"": "table", "table": "table", "json": "json", "yaml": "yaml"} {
		o := UndoOptions{Latest: true, Output: in}
		if err := o.Validate(); err != nil {
			t.Fatalf("Validate(-o %q): %v", in, err)
		}
		if string(o.format) != want {
			t.Errorf("-o %q: format = %q, want %q", in, o.format, want)
		}
	}
}

func TestSplitAppRef(t *testing.T) {
	tests := []struct{ in, ns, name string }{
		{in: "guestbook", name: "guestbook"},
		{in: "team-a/guestbook", ns: "team-a", name: "guestbook"},
	}
	for _, tt := range tests {
		ns, name := splitAppRef(tt.in)
		if ns != tt.ns || name != tt.name {
			t.Errorf("splitAppRef(%q) = %q, %q; want %q, %q", tt.in, ns, name, tt.ns, tt.name)
		}
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
	if isTerminal(strings.NewReader("")) {
		t.Error("a reader that is not a file is not a terminal")
	}
}
