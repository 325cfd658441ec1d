package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// MergePatch builds the JSON merge patch for changes: null removes a key, a string sets it. The
// resourceVersion makes the API server refuse the patch with 409 Conflict when the object changed
// since it was read; nothing outside metadata.labels, metadata.annotations and (for a change of
// field ownership) metadata.managedFields is ever sent.
func MergePatch(resourceVersion string, changes []journal.Change) ([]byte, error) {
	if resourceVersion == "" {
		return nil, errors.New("no resourceVersion to make the patch conditional on")
	}
	labels := map[string]any{}
	annotations := map[string]any{}
	var managed []cluster.ManagedFieldsEntry
	for _, c := range changes {
		if c.ManagedFields != nil {
			if managed != nil {
				return nil, errors.New("two changes of managedFields in one patch")
			}
			list, err := managedFieldsToSend(c)
			if err != nil {
				return nil, err
			}
			managed = list
			continue
		}
		target := annotations
		if c.Field == journal.FieldLabel {
			target = labels
		}
		value, has := c.Value()
		if c.Embedded != nil && value == "" {
			return nil, fmt.Errorf("%s: the embedded value is not known in this run", c.Key)
		}
		if has {
			target[c.Key] = value
		} else {
			target[c.Key] = nil
		}
	}
	meta := map[string]any{"resourceVersion": resourceVersion}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if managed != nil {
		meta["managedFields"] = managed
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// Mismatches compares an object, as the API server returned it after a patch or a dry run, with
// what the changes should have produced. Embedded values are compared by digest and never shown.
func Mismatches(o *cluster.Object, changes []journal.Change) []string {
	var out []string
	for _, c := range changes {
		if c.ManagedFields != nil {
			if !c.ExpectsEntries(o.ManagedFields) {
				out = append(out, fmt.Sprintf("managedFields of %s are not what unprune sent", c.Key))
			}
			continue
		}
		current := o.Annotations
		if c.Field == journal.FieldLabel {
			current = o.Labels
		}
		v, has := current[c.Key]
		if c.Expects(v, has) {
			continue
		}
		switch {
		case c.Embedded != nil:
			out = append(out, fmt.Sprintf("%s %s differs from what unprune wrote", c.Field, c.Key))
		case !has:
			out = append(out, fmt.Sprintf("%s %s is absent", c.Field, c.Key))
		default:
			out = append(out, fmt.Sprintf("%s %s is %s", c.Field, c.Key, Quote(v)))
		}
	}
	return out
}

// redactor hides the embedded values of a plan (a Secret's last-applied configuration, with its
// data) in messages that may quote them, such as an API server's validation error.
type redactor []string

func redactorFor(changes []journal.Change, live *cluster.Object) redactor {
	var r redactor
	for _, c := range changes {
		if c.Embedded == nil {
			continue
		}
		if v, ok := c.Value(); ok && v != "" {
			r = append(r, v)
		}
		if live != nil {
			if v := live.Annotations[c.Key]; v != "" {
				r = append(r, v)
			}
		}
	}
	return r
}

func (r redactor) String(s string) string {
	for _, secret := range r {
		for _, form := range []string{secret, strconv.Quote(secret), jsonString(secret), strings.TrimSuffix(secret, "\n")} {
			if len(form) > 8 {
				s = strings.ReplaceAll(s, form, "<redacted>")
			}
		}
	}
	return s
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Quote shows a value read from a cluster safely on one line: control characters (terminal escape
// sequences among them) escaped, long values cut.
func Quote(s string) string {
	const max = 200
	q := strconv.Quote(s)
	if len(q) > max {
		return q[:max] + fmt.Sprintf(`…" (%d bytes)`, len(s))
	}
	return q
}
