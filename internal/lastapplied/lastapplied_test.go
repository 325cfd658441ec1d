package lastapplied

import (
	"errors"
	"testing"
)

func TestRoundTripIsExact(t *testing.T) {
	raw := `{"apiVersion":"v1","data":{"big":12345678901234567890,"html":"\u003cb\u003e"},"kind":"Secret","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"app:/Secret:ns/s","x":"y"},"labels":{"app.kubernetes.io/instance":"app"},"name":"s","namespace":"ns"}}` + "\n"
	d, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	label, ok := d.Remove("label", "app.kubernetes.io/instance")
	if !ok || label != "app" {
		t.Fatalf("remove label: %q %v", label, ok)
	}
	id, _ := d.Remove("annotation", "argocd.argoproj.io/tracking-id")
	scrubbed, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1","data":{"big":12345678901234567890,"html":"\u003cb\u003e"},"kind":"Secret","metadata":{"annotations":{"x":"y"},"name":"s","namespace":"ns"}}` + "\n"
	if scrubbed != want {
		t.Fatalf("scrubbed:\n got %s\nwant %s", scrubbed, want)
	}
	back, err := Parse(scrubbed)
	if err != nil {
		t.Fatal(err)
	}
	back.Insert("label", "app.kubernetes.io/instance", label)
	back.Insert("annotation", "argocd.argoproj.io/tracking-id", id)
	restored, _ := back.Encode()
	if restored != raw {
		t.Fatalf("restored:\n got %s\nwant %s", restored, raw)
	}
}

func TestParseRefusesWhatItCannotRestore(t *testing.T) {
	for name, raw := range map[string]string{
		"unsorted keys": `{"kind":"Secret","apiVersion":"v1"}`,
		"indented":      "{\n  \"kind\": \"Secret\"\n}",
		"not json":      "kind: Secret",
		"two values":    `{"a":1}{"b":2}`,
		"an array":      `[1,2]`,
	} {
		if _, err := Parse(raw); err == nil {
			t.Errorf("%s: parsed %q", name, raw)
		} else if name == "unsorted keys" && !errors.Is(err, ErrNotCanonical) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
