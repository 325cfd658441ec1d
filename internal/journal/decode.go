package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Errors returned (wrapped) by Load, List and Latest; test with errors.Is.
var (
	ErrNotJournal         = errors.New("not an unprune journal")
	ErrNewerVersion       = errors.New("newer than this unprune understands")
	ErrUnsupportedVersion = errors.New("not supported by this unprune")
	ErrNoJournals         = errors.New("no journals")
)

// markSeparator starts every record appended after the journal document.
const markSeparator = "--- "

// mark is one appended record: an entry's outcome, a re-plan, or an undo.
type mark struct {
	Entry           int       `json:"entry"`
	State           State     `json:"state,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Error           string    `json:"error,omitempty"`
	ClearChanges    bool      `json:"clearChanges,omitempty"`
	Changes         []Change  `json:"changes,omitempty"`
	Replan          bool      `json:"replan,omitempty"`
	At              time.Time `json:"at"`
}

func (m mark) apply(j *Journal) error {
	switch {
	case m.Replan:
		return j.Replan(m.Entry, m.ResourceVersion, m.Changes, m.At)
	case m.State == StateApplied:
		return j.MarkApplied(m.Entry, m.ResourceVersion, m.At)
	case m.State == StateFailed:
		return j.MarkFailed(m.Entry, m.Error, m.ClearChanges, m.At)
	case m.State == StateSkipped:
		return j.MarkSkipped(m.Entry, m.Error, m.At)
	case m.State == StateUndone:
		return j.MarkUndone(m.Entry, m.At)
	}
	return fmt.Errorf("unknown record (state %q)", m.State)
}

func (m mark) encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(markSeparator), b...), '\n'), nil
}

// decode reads a journal file: the journal document, then the records appended to it. A last
// record cut short (no newline: the process died while writing it) is dropped — its entry stays in
// its earlier state, which undo handles — and reported in torn.
func decode(path string, data []byte) (j *Journal, torn bool, err error) {
	header, marks := splitMarks(data)
	j, err = decodeHeader(path, header)
	if err != nil {
		return nil, false, err
	}
	for i, line := range marks {
		if i == len(marks)-1 && !bytes.HasSuffix(line, []byte("\n")) {
			torn = true
			break
		}
		var m mark
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(line, []byte(markSeparator))))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, false, fmt.Errorf("journal %s: record %d is damaged: %w", path, i+1, err)
		}
		if err := m.apply(j); err != nil {
			return nil, false, fmt.Errorf("journal %s: record %d: %w", path, i+1, err)
		}
	}
	if err := j.Validate(); err != nil {
		return nil, false, fmt.Errorf("invalid journal %s: %w", path, err)
	}
	return j, torn, nil
}

// splitMarks separates the document from the appended records, each of which is one line starting
// with "--- ". The document itself never has a line starting so: YAML indents block scalars.
func splitMarks(data []byte) (header []byte, marks [][]byte) {
	sep := []byte("\n" + markSeparator)
	i := bytes.Index(data, sep)
	if i < 0 {
		return data, nil
	}
	header, rest := data[:i+1], data[i+1:]
	for len(rest) > 0 {
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			marks = append(marks, rest)
			break
		}
		marks = append(marks, rest[:end+1])
		rest = rest[end+1:]
	}
	return header, marks
}

func decodeHeader(path string, data []byte) (*Journal, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s is %w: invalid YAML: %w", path, ErrNotJournal, err)
	}
	var top any
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s is %w: %w", path, ErrNotJournal, err)
	}
	m, ok := top.(map[string]any)
	if top == nil || !ok {
		return nil, fmt.Errorf("%s is %w (not a YAML mapping)", path, ErrNotJournal)
	}
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	switch {
	case m["kind"] == nil && m["apiVersion"] == nil:
		return nil, fmt.Errorf("%s is %w (no apiVersion or kind)", path, ErrNotJournal)
	case kind != Kind:
		return nil, fmt.Errorf("%s is %w (kind %s)", path, ErrNotJournal, show(m["kind"]))
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != Group {
		return nil, fmt.Errorf("%s is %w (apiVersion %s)", path, ErrNotJournal, show(m["apiVersion"]))
	}
	if version != Version {
		if compareVersions(version, Version) > 0 {
			return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s); upgrade unprune", path, apiVersion, ErrNewerVersion, APIVersion)
		}
		return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s): it was written by an older unprune; undo it with that release",
			path, apiVersion, ErrUnsupportedVersion, APIVersion)
	}
	var j Journal
	if err := yaml.UnmarshalStrict(data, &j); err != nil {
		return nil, fmt.Errorf("parse journal %s: %w", path, err)
	}
	return &j, nil
}

func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "missing"
	case string:
		if v == "" {
			return `""`
		}
		return v
	default:
		return fmt.Sprintf("%v", v)
	}
}

var versionRE = regexp.MustCompile(`^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$`)

// compareVersions orders Kubernetes-style versions (v1alpha1 < v1beta1 < v1 < v2alpha1 < v2).
// Unparseable versions sort before everything.
func compareVersions(a, b string) int {
	key := func(v string) [3]int {
		m := versionRE.FindStringSubmatch(v)
		if m == nil {
			return [3]int{-1, 0, 0}
		}
		major, _ := strconv.Atoi(m[1])
		stage := 2
		switch m[2] {
		case "alpha":
			stage = 0
		case "beta":
			stage = 1
		}
		minor, _ := strconv.Atoi(m[3])
		return [3]int{major, stage, minor}
	}
	ka, kb := key(a), key(b)
	for i := range ka {
		if ka[i] != kb[i] {
			if ka[i] < kb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
