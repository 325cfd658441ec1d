// Package printer renders unprune's results: human tables, and JSON/YAML documents that carry
// apiVersion and kind so scripts can rely on them as a stable contract.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// APIVersion of every machine-readable document unprune prints.
const APIVersion = "unprune.dev/v1alpha1"

// Format is an -o value.
type Format string

const (
	Table Format = "table"
	Wide  Format = "wide"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat validates -o against the formats a command supports.
func ParseFormat(s string, allowed ...Format) (Format, error) {
	if s == "" {
		return Table, nil
	}
	names := make([]string, 0, len(allowed))
	for _, f := range allowed {
		if string(f) == s {
			return f, nil
		}
		names = append(names, string(f))
	}
	return "", fmt.Errorf("unknown output format %q: use one of %s", s, strings.Join(names, ", "))
}

// Machine reports whether f is a document format.
func (f Format) Machine() bool { return f == JSON || f == YAML }

// Document writes doc as JSON or YAML.
func Document(w io.Writer, f Format, doc any) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case YAML:
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("format %s is not a document format", f)
}

// Rows writes a kubectl-style table.
func Rows(w io.Writer, header []string, rows [][]string) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
