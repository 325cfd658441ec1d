package argocd

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr string
	}{
		{in: "v3.6.1", want: Version{3, 6, 1}},
		{in: "3.6.1", want: Version{3, 6, 1}},
		{in: "v2.14.11+abc123", want: Version{2, 14, 11}},
		{in: "3.0", want: Version{3, 0, 0}},
		{in: " v3.0.0 ", want: Version{3, 0, 0}},
		{in: "", wantErr: "empty"},
		{in: "   ", wantErr: "empty"},
		{in: "abc", wantErr: "want MAJOR.MINOR[.PATCH]"},
		{in: "v3", wantErr: "want MAJOR.MINOR[.PATCH]"},
		{in: "v3.x", wantErr: `minor version "x" is not a number`},
		{in: "v3.6.x", wantErr: `patch version "x" is not a number`},
		{in: "v3..1", wantErr: `minor version "" is empty`},
		{in: "3.6.1x", wantErr: `patch version "1x" is not a number`},
		{in: "-3.6", wantErr: "pre-release"},
		{in: "1.2.3.4", wantErr: "want MAJOR.MINOR[.PATCH]"},
		{in: "v3.6.0-rc1", wantErr: `pre-release "rc1" is not supported`},
		{in: "v99999999999999999999.0", wantErr: "out of range"},
		{in: "latest", wantErr: "want MAJOR.MINOR[.PATCH]"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVersion(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseVersion(%q) = %v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "invalid Argo CD version") {
					t.Fatalf("ParseVersion(%q) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseVersion(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestVersionOrdering(t *testing.T) {
	tests := []struct {
		a, b Version
		less bool
	}{
		{Version{2, 14, 11}, Version{3, 0, 0}, true},
		{Version{3, 0, 0}, Version{2, 14, 11}, false},
		{Version{3, 5, 9}, Version{3, 6, 0}, true},
		{Version{3, 6, 0}, Version{3, 6, 1}, true},
		{Version{3, 6, 1}, Version{3, 6, 1}, false},
		{Version{2, 12, 6}, Version{2, 12, 7}, true},
	}
	for _, tt := range tests {
		if got := tt.a.Less(tt.b); got != tt.less {
			t.Errorf("%v.Less(%v) = %v, want %v", tt.a, tt.b, got, tt.less)
		}
		if got := tt.a.AtLeast(tt.b); got == tt.less {
			t.Errorf("%v.AtLeast(%v) = %v, want %v", tt.a, tt.b, got, !tt.less)
		}
	}
}

func TestVersionString(t *testing.T) {
	if got := (Version{3, 6, 1}).String(); got != "v3.6.1" {
		t.Fatalf("String() = %q, want v3.6.1", got)
	}
}

func TestVersionFromImage(t *testing.T) {
	tests := []struct {
		image string
		want  Version
		ok    bool
	}{
		{image: "quay.io/argoproj/argocd:v3.6.1", want: Version{3, 6, 1}, ok: true},
		{image: "ghcr.io/x/argocd:v2.14.11@sha256:0123456789abcdef", want: Version{2, 14, 11}, ok: true},
		{image: "localhost:5000/argocd:v3.6.1", want: Version{3, 6, 1}, ok: true},
		{image: "argocd:v3.0.0", want: Version{3, 0, 0}, ok: true},
		{image: "argocd:3.1", want: Version{3, 1, 0}, ok: true},
		{image: "argocd:latest"},
		{image: "quay.io/argoproj/argocd"},
		{image: "localhost:5000/argocd"},
		{image: "quay.io/argoproj/argocd@sha256:0123456789abcdef"},
		{image: "quay.io/argoproj/argocd:v3.6.0-rc1"},
		{image: ""},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, ok := VersionFromImage(tt.image)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("VersionFromImage(%q) = %v, %v; want %v, %v", tt.image, got, ok, tt.want, tt.ok)
			}
		})
	}
}
