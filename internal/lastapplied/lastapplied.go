// Package lastapplied edits the metadata inside kubectl's last-applied-configuration annotation
// without touching anything else in it, and only where the edit can be undone byte for byte.
//
// kubectl (and Argo CD, which applies the same way) writes the annotation as Go's JSON encoding of
// the applied object — keys sorted, HTML characters escaped — usually followed by a newline. A
// value in that canonical form survives decode → edit → encode unchanged except for the edit, so
// the journal can record the keys removed and digests instead of the value, which for a Secret
// holds its data.
package lastapplied

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Doc is a decoded last-applied configuration.
type Doc struct {
	obj             map[string]any
	trailingNewline bool
}

// ErrNotCanonical is returned for a value that re-encodes differently, which an edit could not be
// undone exactly for.
var ErrNotCanonical = errors.New("it is not in the canonical form kubectl writes, so unprune could not restore it exactly")

// Parse decodes raw and checks it is canonical.
func Parse(raw string) (*Doc, error) {
	body := raw
	d := &Doc{}
	if strings.HasSuffix(body, "\n") {
		body, d.trailingNewline = strings.TrimSuffix(body, "\n"), true
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber() // numbers keep their exact literal
	if err := dec.Decode(&d.obj); err != nil {
		return nil, fmt.Errorf("it is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("it holds more than one JSON value")
	}
	if d.obj == nil {
		return nil, errors.New("it is not a JSON object")
	}
	encoded, err := d.Encode()
	if err != nil {
		return nil, err
	}
	if encoded != raw {
		return nil, ErrNotCanonical
	}
	return d, nil
}

// Encode writes the document back in canonical form.
func (d *Doc) Encode() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // escapes HTML as json.Marshal and kubectl do
	if err := enc.Encode(d.obj); err != nil {
		return "", err
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if d.trailingNewline {
		out += "\n"
	}
	return out, nil
}

func section(field string) string {
	if field == "label" {
		return "labels"
	}
	return "annotations"
}

// Remove deletes a label ("label") or annotation ("annotation") from the embedded metadata and
// returns its value. An emptied map is removed too, as kubectl would not have written it.
func (d *Doc) Remove(field, key string) (string, bool) {
	meta, _ := d.obj["metadata"].(map[string]any)
	if meta == nil {
		return "", false
	}
	m, _ := meta[section(field)].(map[string]any)
	raw, ok := m[key]
	if !ok {
		return "", false
	}
	value, isString := raw.(string)
	if !isString {
		return "", false
	}
	delete(m, key)
	if len(m) == 0 {
		delete(meta, section(field))
	}
	return value, true
}

// Has reports whether the embedded metadata holds the key.
func (d *Doc) Has(field, key string) bool {
	meta, _ := d.obj["metadata"].(map[string]any)
	m, _ := meta[section(field)].(map[string]any)
	_, ok := m[key]
	return ok
}

// Insert sets a label or annotation in the embedded metadata, creating the maps it needs.
func (d *Doc) Insert(field, key, value string) {
	meta, _ := d.obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		d.obj["metadata"] = meta
	}
	m, _ := meta[section(field)].(map[string]any)
	if m == nil {
		m = map[string]any{}
		meta[section(field)] = m
	}
	m[key] = value
}
