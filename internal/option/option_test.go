package option

import "testing"

// Without the command line, options show as placeholders, and every option has one.
func TestNeutralForm(t *testing.T) {
	for _, n := range All() {
		if got := n.String(); got == "<option>" || got == "<>" {
			t.Errorf("option %d has no name: %q", int(n), got)
		}
	}
	if got := ArgoCDVersion.String(); got != "<ArgoCDVersion>" {
		t.Errorf("ArgoCDVersion = %q", got)
	}
}

func TestCommand(t *testing.T) {
	c := Command{Path: []string{"move"}, Args: []string{"a", "ConfigMap/x"}, Options: []Setting{{To, "b"}, Flag(Yes)}}
	if got, want := c.String(), "unprune move a ConfigMap/x <To> b <Yes>"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
