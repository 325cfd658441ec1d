// Package printer renders unprune's results: human tables on stdout, and documents (JSON, YAML, or
// a kubectl-style template over them) whose schema is a versioned contract — every document has
// apiVersion unprune.dev/v1alpha2, a kind, metadata, and one list field, items (docs/output.md).
package printer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/internal/option"
)

// APIVersion of every document unprune prints or writes.
const APIVersion = "unprune.dev/v1alpha2"

// Format is an -o value's kind.
type Format string

const (
	Table Format = "table"
	Wide  Format = "wide"
	JSON  Format = "json"
	YAML  Format = "yaml"
	Name  Format = "name"
	// Template covers kubectl's jsonpath, jsonpath-as-json, jsonpath-file, go-template and
	// go-template-file, rendered over the JSON document.
	Template Format = "template"
)

// Output is a parsed -o flag with --no-headers.
type Output struct {
	Format    Format
	NoHeaders bool
	template  printers.ResourcePrinter
}

// templateFormats are kubectl's template outputs, printed by cli-runtime's own printers.
var templateFormats = []string{"jsonpath", "jsonpath-as-json", "jsonpath-file", "go-template", "go-template-file", "template", "templatefile"}

// ParseOutput reads -o VALUE against the table formats a command has (table, and wide where it has
// one); json, yaml, name and kubectl's templates work everywhere.
func ParseOutput(value string, wide bool, noHeaders bool) (Output, error) {
	o := Output{NoHeaders: noHeaders}
	format, arg, hasArg := strings.Cut(value, "=")
	switch {
	case value == "" || value == string(Table):
		o.Format = Table
	case value == string(Wide) && wide:
		o.Format = Wide
	case value == string(JSON), value == string(YAML), value == string(Name):
		o.Format = Format(value)
	case hasArg && contains(templateFormats, format):
		flags := genericclioptions.NewGoTemplatePrintFlags()
		flags.TemplateArgument = &arg
		p, err := flags.ToPrinter(format)
		if err != nil {
			jp := genericclioptions.NewJSONPathPrintFlags(arg, false)
			p, err = jp.ToPrinter(format)
		}
		if err != nil {
			return o, fmt.Errorf("-o %s: %v", value, err)
		}
		o.Format, o.template = Template, p
	default:
		allowed := []string{"table"}
		if wide {
			allowed = append(allowed, "wide")
		}
		allowed = append(allowed, "json", "yaml", "name", "jsonpath=…", "go-template=…")
		return o, fmt.Errorf("unknown output format %q: use one of %s", value, strings.Join(allowed, ", "))
	}
	if noHeaders && o.Format != Table && o.Format != Wide {
		return o, fmt.Errorf("%v goes with table output, not %s %s", option.NoHeaders, option.Output.Short(), value)
	}
	return o, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Document reports whether the output is a document rather than a table.
func (o Output) Document() bool { return o.Format != Table && o.Format != Wide }

// Print writes doc in the output's document format; names are the -o name lines.
func (o Output) Print(w io.Writer, doc any, names func() []string) error {
	switch o.Format {
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
	case Name:
		for _, n := range names() {
			if _, err := fmt.Fprintln(w, n); err != nil {
				return err
			}
		}
		return nil
	case Template:
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return err
		}
		// Escape the document's strings, not the rendered text: the values come from clusters and
		// may carry terminal escape sequences, while the template's own newlines and tabs are the
		// user's layout and must stay. Values are escaped as the table's cells are, but never cut:
		// a template extracts data, and a shortened value would be silently wrong. jsonpath-as-json
		// stays valid JSON (an escaped value is an ordinary string); -o json and -o yaml carry the
		// values as they are, encoded by their encoders.
		u.Object = escapeStrings(u.Object).(map[string]any)
		return o.template.PrintObj(u, w)
	}
	return fmt.Errorf("format %s is not a document format", o.Format)
}

// Rows writes a kubectl-style table; every cell goes through Safe.
func (o Output) Rows(w io.Writer, header []string, rows [][]string) error {
	// tabwriter writes each cell and its padding on its own: buffered, a table of 10,000 rows is a
	// few writes to the terminal or pipe instead of a hundred thousand.
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := printers.GetNewTabWriter(bw)
	if !o.NoHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = Safe(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// maxCell bounds what one table cell shows; values quoted inside messages are cut shorter already.
const maxCell = 512

// Safe makes a value read from a cluster fit to print on a terminal: control characters (escape
// sequences, newlines, tabs) are shown escaped, invalid UTF-8 is replaced, and long values are cut.
func Safe(s string) string {
	return escape(s, maxCell)
}

// escape is Safe with a limit of runes shown, none when limit is negative.
func escape(s string, limit int) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if limit >= 0 && n >= limit {
			fmt.Fprintf(&b, "…(%d bytes)", len(s))
			break
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\ufffd`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.In(r, unicode.Bidi_Control):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// escapeStrings escapes every string of a decoded JSON value, map keys included (a template can
// range over labels and print their keys), as Safe does but without cutting.
func escapeStrings(v any) any {
	switch v := v.(type) {
	case string:
		return escape(v, -1)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[escape(k, -1)] = escapeStrings(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = escapeStrings(x)
		}
		return out
	}
	return v
}

// Line is Safe for a whole message: it keeps the message's length but escapes control characters.
func Line(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
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

// names is a document's -o name output: one line per item.
func names[T any](items []T, line func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, line(it))
	}
	return out
}

// Count is n and the noun, singular for one: "1 deletion", "2 deletions" (every noun the messages
// count takes an s).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
