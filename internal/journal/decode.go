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
)

// Errors returned (wrapped) by Load, List and Latest; test with errors.Is.
var (
	ErrNotJournal         = errors.New("not an unprune journal")
	ErrNewerVersion       = errors.New("newer than this unprune understands")
	ErrUnsupportedVersion = errors.New("not supported by this unprune")
	ErrNoJournals         = errors.New("no journals")
)

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

// encode is one line of JSON.
func (m mark) encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// encodeJournal is the journal document: JSON on one line (which YAML readers read too; jq . or
// unprune undo --list shows it), ending in a newline so that records can be appended line by line.
// It is written before the first patch and again at the end, both on the command's path: at 10,000
// objects, indenting it cost a third of encoding it, and the file half again as many bytes.
func encodeJournal(j *Journal) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// decode reads a journal file: the journal document, then the records appended to it, one JSON
// object per line. A last record cut short (no newline: the process died while writing it) is
// dropped — its entry stays in its earlier state, which undo handles — and reported in torn.
func decode(path string, data []byte) (j *Journal, torn bool, err error) {
	// A journal of this version decodes strictly in one go. Anything else is read again, in steps,
	// to say what it is: another type, another version, or a journal with unknown fields.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	j = &Journal{}
	if err := dec.Decode(j); err != nil || j.Kind != Kind || j.APIVersion != APIVersion {
		dec = json.NewDecoder(bytes.NewReader(data))
		var header json.RawMessage
		if err := dec.Decode(&header); err != nil {
			return nil, false, fmt.Errorf("%s is %w: %v", path, ErrNotJournal, err)
		}
		if j, err = decodeHeader(path, header); err != nil {
			return nil, false, err
		}
	}
	rest := data[dec.InputOffset():]
	lines := bytes.SplitAfter(rest, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if i == len(lines)-1 && !bytes.HasSuffix(line, []byte("\n")) {
			torn = true
			break
		}
		var m mark
		d := json.NewDecoder(bytes.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&m); err != nil {
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

func decodeHeader(path string, js []byte) (*Journal, error) {
	// Only the type is read first: decoding the whole document into maps cost more than the
	// typed decode below for a journal of 10,000 entries.
	var m *struct {
		Kind       any `json:"kind"`
		APIVersion any `json:"apiVersion"`
	}
	if err := json.Unmarshal(js, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s is %w (not a JSON object)", path, ErrNotJournal)
	}
	kind, _ := m.Kind.(string)
	apiVersion, _ := m.APIVersion.(string)
	switch {
	case m.Kind == nil && m.APIVersion == nil:
		return nil, fmt.Errorf("%s is %w (no apiVersion or kind)", path, ErrNotJournal)
	case kind != Kind:
		return nil, fmt.Errorf("%s is %w (kind %s)", path, ErrNotJournal, show(m.Kind))
	}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != Group {
		return nil, fmt.Errorf("%s is %w (apiVersion %s)", path, ErrNotJournal, show(m.APIVersion))
	}
	if version != Version {
		if compareVersions(version, Version) > 0 {
			return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s); upgrade unprune", path, apiVersion, ErrNewerVersion, APIVersion)
		}
		return nil, fmt.Errorf("journal %s: apiVersion %s is %w (it reads %s): it was written by an older unprune; undo it with that release",
			path, apiVersion, ErrUnsupportedVersion, APIVersion)
	}
	// Strict: unknown fields are an error.
	var j Journal
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
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
