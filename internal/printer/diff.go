package printer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
)

// Metadata renders an object's labels and annotations as YAML-like lines, one key per line, values
// quoted and cut, and the last-applied configuration (which embeds the object — a Secret's data)
// replaced by its size. changes, when given, are applied first: the lines show the object after.
func MetadataLines(labels, annotations map[string]string, changes []journal.Change) []string {
	labels, annotations = clone(labels), clone(annotations)
	embedded := map[string]string{}
	var managed []string
	for _, c := range changes {
		if c.ManagedFields != nil {
			managed = append(managed, "  "+Safe(c.String()))
			continue
		}
		m := annotations
		if c.Field == journal.FieldLabel {
			m = labels
		}
		switch {
		case c.Embedded != nil:
			verb := "without"
			if c.Embedded.Restore {
				verb = "with"
			}
			embedded[c.Key] = fmt.Sprintf("<embedded configuration %s %s>", verb, embeddedKeys(c.Embedded.Removed))
		case c.After == nil:
			delete(m, c.Key)
		default:
			m[c.Key] = *c.After
		}
	}
	lines := []string{"metadata:"}
	for _, section := range []struct {
		name string
		m    map[string]string
	}{{"annotations", annotations}, {"labels", labels}} {
		if len(section.m) == 0 {
			continue
		}
		lines = append(lines, "  "+section.name+":")
		keys := make([]string, 0, len(section.m))
		for k := range section.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := quoteCut(section.m[k])
			if section.name == "annotations" && k == argocd.AnnotationLastAppliedConfiguration {
				v = fmt.Sprintf("<embedded configuration, %d bytes>", len(section.m[k]))
				if e, ok := embedded[k]; ok {
					v = e
				}
			}
			lines = append(lines, "    "+Safe(k)+": "+v)
		}
	}
	return append(lines, managed...)
}

func embeddedKeys(keys []journal.EmbeddedKey) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, string(k.Field)+" "+k.Key)
	}
	return strings.Join(parts, ", ")
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func quoteCut(v string) string {
	const max = 120
	q := strconv.Quote(v)
	if len(q) > max {
		return q[:max] + fmt.Sprintf(`…" (%d bytes)`, len(v))
	}
	return q
}

// UnifiedDiff is a unified diff (three lines of context, valid @@ hunks) of before and after, the
// form `diff -u` and kubectl diff print.
func UnifiedDiff(name string, before, after []string) string {
	ops := diffLines(before, after)
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s (live)\n+++ %s (after)\n", name, name)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := ops[start].a, ops[start].b, 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			b.WriteByte(op.kind)
			b.WriteString(op.line)
			b.WriteByte('\n')
		}
		i = end
	}
	return b.String()
}

func hunkRange(start, length int) string {
	if length == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if length == 1 {
		return strconv.Itoa(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, length)
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
	a, b int // line indexes (0-based) in before and after at this op
}

// diffLines is a longest-common-subsequence line diff; metadata blocks are tens of lines.
func diffLines(a, b []string) []diffOp {
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], i, j})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, diffOp{'+', b[j], i, j})
			j++
		default:
			ops = append(ops, diffOp{'-', a[i], i, j})
			i++
		}
	}
	return ops
}

// ExternalDiff runs the program in KUBECTL_EXTERNAL_DIFF as kubectl diff does: with two directories,
// the live and the changed metadata of each object as a file in them. A diff program exits 1 when
// it found differences, which is not an error.
func ExternalDiff(w, errOut io.Writer, program string, files map[string][2][]string) error {
	args := strings.Fields(program)
	if len(args) == 0 {
		return errors.New("KUBECTL_EXTERNAL_DIFF is empty")
	}
	dir, err := os.MkdirTemp("", "unprune-diff-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	live, merged := filepath.Join(dir, "LIVE"), filepath.Join(dir, "MERGED")
	for _, d := range []string{live, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	for name, sides := range files {
		file := strings.NewReplacer("/", "-", "\\", "-").Replace(name)
		if err := os.WriteFile(filepath.Join(live, file), []byte(strings.Join(sides[0], "\n")+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(merged, file), []byte(strings.Join(sides[1], "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	cmd := exec.Command(args[0], append(args[1:], live, merged)...)
	cmd.Stdout, cmd.Stderr = w, errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("KUBECTL_EXTERNAL_DIFF=%q: %w", program, err)
	}
	return nil
}
