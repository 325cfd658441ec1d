package cli

import "testing"

func TestGoldenVersion(t *testing.T) {
	runGoldens(t, []goldenCase{
		{name: "version", args: []string{"version", "-o", "json"}},
		{name: "version-table", args: []string{"version"}},
		{name: "version-short", args: []string{"version", "--short"}},
		{name: "version-yaml", args: []string{"version", "-o", "yaml"}},
		{name: "version-name", args: []string{"version", "-o", "name"}},
		{name: "version-jsonpath", args: []string{"version", "-o", "jsonpath={.kind}"}},
		{name: "version-args", args: []string{"version", "extra"}},
		{name: "version-wide", args: []string{"version", "-o", "wide"}},
	})
}
