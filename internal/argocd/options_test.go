package argocd

import (
	"slices"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: ""},
		{in: "Prune=false", want: []string{"Prune=false"}},
		{in: "Prune=false,ServerSideApply=true", want: []string{"Prune=false", "ServerSideApply=true"}},
		{in: " ServerSideApply=true , Prune=confirm ,, ", want: []string{"ServerSideApply=true", "Prune=confirm"}},
		{in: "A,A,B", want: []string{"A", "B"}},
	}
	for _, tt := range tests {
		if got := ParseOptions(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("ParseOptions(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHasOption(t *testing.T) {
	tests := []struct {
		value, option string
		want          bool
	}{
		{value: "Prune=false,ServerSideApply=true", option: OptionPruneDisabled, want: true},
		{value: "ServerSideApply=true, Prune=false", option: OptionPruneDisabled, want: true},
		{value: "ServerSideApply=true, Prune=confirm", option: OptionPruneConfirm, want: true},
		{value: "ServerSideApply=true, Prune=confirm", option: OptionPruneDisabled},
		{value: "IgnoreExtraneous", option: OptionIgnoreExtraneous, want: true},
		{value: "ServerSideDiff=true,IgnoreExtraneous", option: OptionIgnoreExtraneous, want: true},
		{value: "ServerSideDiff=true", option: OptionIgnoreExtraneous},
		{value: "prune=false", option: OptionPruneDisabled},
		{value: "Prune = false", option: OptionPruneDisabled},
		{value: "", option: OptionPruneDisabled},
	}
	for _, tt := range tests {
		if got := HasOption(tt.value, tt.option); got != tt.want {
			t.Errorf("HasOption(%q, %q) = %v, want %v", tt.value, tt.option, got, tt.want)
		}
	}
}

func TestSetOption(t *testing.T) {
	tests := []struct {
		name, value, option string
		want                string
		wantChanged         bool
	}{
		{name: "replaces Prune=confirm in place", value: "ServerSideApply=true, Prune=confirm", option: OptionPruneDisabled, want: "ServerSideApply=true,Prune=false", wantChanged: true},
		{name: "replaces before other entries", value: "Prune=confirm,ServerSideApply=true", option: OptionPruneDisabled, want: "Prune=false,ServerSideApply=true", wantChanged: true},
		{name: "appends bare option", value: "ServerSideDiff=true", option: OptionIgnoreExtraneous, want: "ServerSideDiff=true,IgnoreExtraneous", wantChanged: true},
		{name: "sets into empty value", value: "", option: OptionPruneDisabled, want: "Prune=false", wantChanged: true},
		{name: "already present keeps formatting", value: "ServerSideApply=true, Prune=false", option: OptionPruneDisabled, want: "ServerSideApply=true, Prune=false"},
		{name: "bare option already present", value: "IgnoreExtraneous", option: OptionIgnoreExtraneous, want: "IgnoreExtraneous"},
		{name: "drops contradicting duplicates", value: "Prune=false,Validate=false,Prune=confirm", option: OptionPruneDisabled, want: "Prune=false,Validate=false", wantChanged: true},
		{name: "does not touch similarly named options", value: "PruneLast=true", option: OptionPruneDisabled, want: "PruneLast=true,Prune=false", wantChanged: true},
		{name: "empty option is a no-op", value: "A=b", option: " ", want: "A=b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := SetOption(tt.value, tt.option)
			if got != tt.want || changed != tt.wantChanged {
				t.Fatalf("SetOption(%q, %q) = %q, %v; want %q, %v", tt.value, tt.option, got, changed, tt.want, tt.wantChanged)
			}
			if !HasOption(got, tt.option) && tt.option != " " {
				t.Fatalf("SetOption(%q, %q) = %q lacks the option", tt.value, tt.option, got)
			}
		})
	}
}
