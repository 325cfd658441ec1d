package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// Field says whether a change concerns a label or an annotation.
type Field string

// Fields a change can touch.
const (
	FieldLabel      Field = "label"
	FieldAnnotation Field = "annotation"
	// FieldManagedFields: the entries of one field manager (the change's Key) in
	// metadata.managedFields, carried by ManagedFields (journal v1alpha3).
	FieldManagedFields Field = "managedFields"
)

// Change is one label or annotation key as it was before and after the patch. A nil Before or After
// means the key is absent: a removal has Before set and After nil, an addition the opposite, a
// rewrite both.
//
// A change of a value that embeds the object (kubectl's last-applied-configuration) carries
// Embedded instead of Before and After, so that the object's data never reaches the journal or the
// output; the values it needs to patch stay in memory.
type Change struct {
	Field    Field           `json:"field"`
	Key      string          `json:"key"`
	Before   *string         `json:"before,omitempty"`
	After    *string         `json:"after,omitempty"`
	Embedded *EmbeddedChange `json:"embedded,omitempty"`
	// ManagedFields is set, instead of Before and After, when Field is managedFields.
	ManagedFields *ManagedFieldsChange `json:"managedFields,omitempty"`
}

// EmbeddedChange describes the rewrite of a value that embeds the object's configuration, without
// its content: which metadata keys left (or return to) the embedded configuration, and digests of
// the whole value before and after.
type EmbeddedChange struct {
	// Removed are the labels and annotations removed from the embedded metadata, with their values
	// (tracking metadata, never the object's data).
	Removed []EmbeddedKey `json:"removed"`
	// Restore is true for the inverse change, which puts Removed back.
	Restore      bool   `json:"restore,omitempty"`
	BeforeSHA256 string `json:"beforeSHA256"`
	AfterSHA256  string `json:"afterSHA256"`

	// before and after are the values themselves, in memory only.
	before, after string
}

// EmbeddedKey is one label or annotation inside an embedded configuration.
type EmbeddedKey struct {
	Field Field  `json:"field"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Digest is the hex SHA-256 of a value, as journals record embedded configurations.
func Digest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// Removal records that key (whose value was before) is removed.
func Removal(field Field, key, before string) Change {
	return Change{Field: field, Key: key, Before: &before}
}

// Addition records that key is added with value after.
func Addition(field Field, key, after string) Change {
	return Change{Field: field, Key: key, After: &after}
}

// Rewrite records that key's value changes from before to after.
func Rewrite(field Field, key, before, after string) Change {
	return Change{Field: field, Key: key, Before: &before, After: &after}
}

// EmbeddedRewrite records the rewrite of an annotation embedding the object, keeping only the
// removed keys and the digests in what is written out.
func EmbeddedRewrite(key, before, after string, removed []EmbeddedKey) Change {
	return Change{Field: FieldAnnotation, Key: key, Embedded: &EmbeddedChange{
		Removed: removed, BeforeSHA256: Digest(before), AfterSHA256: Digest(after), before: before, after: after,
	}}
}

// WithValues returns the embedded change holding the values to patch with, for undo, after it
// checked that they match the digests.
func (e EmbeddedChange) WithValues(before, after string) (EmbeddedChange, error) {
	if Digest(before) != e.BeforeSHA256 || Digest(after) != e.AfterSHA256 {
		return e, errors.New("the values do not match the journal's digests")
	}
	e.before, e.after = before, after
	return e, nil
}

// Value is the value the change sets (has false when it removes the key), for building patches. An
// embedded change knows its value only in the run that planned it, or after WithValues.
func (c Change) Value() (value string, has bool) {
	if c.Embedded != nil {
		return c.Embedded.after, true
	}
	if c.After == nil {
		return "", false
	}
	return *c.After, true
}

// Expects reports whether a live value is what the change leaves: for checking a patch's result.
func (c Change) Expects(value string, has bool) bool {
	if c.Embedded != nil {
		return has && Digest(value) == c.Embedded.AfterSHA256
	}
	if c.After == nil {
		return !has
	}
	return has && value == *c.After
}

// Found reports whether a live value is what the change found before it.
func (c Change) Found(value string, has bool) bool {
	if c.Embedded != nil {
		return has && Digest(value) == c.Embedded.BeforeSHA256
	}
	if c.Before == nil {
		return !has
	}
	return has && value == *c.Before
}

// Inverse returns the change that undoes c: before and after swapped.
func (c Change) Inverse() Change {
	out := Change{Field: c.Field, Key: c.Key, Before: clonePtr(c.After), After: clonePtr(c.Before)}
	if c.Embedded != nil {
		e := *c.Embedded
		e.Removed = append([]EmbeddedKey(nil), e.Removed...)
		e.Restore = !e.Restore
		e.BeforeSHA256, e.AfterSHA256 = e.AfterSHA256, e.BeforeSHA256
		e.before, e.after = e.after, e.before
		out.Embedded = &e
	}
	if c.ManagedFields != nil {
		out.ManagedFields = c.ManagedFields.inverse()
	}
	return out
}

// IsRemoval reports whether c removes a key that was present.
func (c Change) IsRemoval() bool {
	return c.Embedded == nil && c.ManagedFields == nil && c.Before != nil && c.After == nil
}

// String renders c for humans without any embedded content, e.g. `annotation "a/b": "x" -> <absent>`.
func (c Change) String() string {
	if c.ManagedFields != nil {
		verb := "remove"
		if c.ManagedFields.Restore {
			verb = "restore"
		}
		return fmt.Sprintf("managedFields: %s entries of %s (%s)", verb, c.Key, c.ManagedFields.Describe())
	}
	if c.Embedded != nil {
		verb := "remove"
		if c.Embedded.Restore {
			verb = "restore"
		}
		return fmt.Sprintf("%s %q: %s %s in the embedded configuration", c.Field, c.Key, verb, describeKeys(c.Embedded.Removed))
	}
	return fmt.Sprintf("%s %q: %s -> %s", c.Field, c.Key, showValue(c.Before), showValue(c.After))
}

func describeKeys(keys []EmbeddedKey) string {
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += string(k.Field) + " " + k.Key
	}
	return s
}

func showValue(p *string) string {
	if p == nil {
		return "<absent>"
	}
	return strconv.Quote(*p)
}

func (c Change) validate() error {
	var errs []error
	if c.Key == "" {
		errs = append(errs, errors.New("key is empty"))
	}
	if (c.Field == FieldManagedFields) != (c.ManagedFields != nil) {
		return errors.Join(append(errs, errors.New("a managedFields change, and only one, carries managedFields"))...)
	}
	if c.ManagedFields != nil {
		return errors.Join(append(errs, validateManagedFields(c)...)...)
	}
	if c.Field != FieldLabel && c.Field != FieldAnnotation {
		errs = append(errs, fmt.Errorf("field %q is not %q, %q or %q", c.Field, FieldLabel, FieldAnnotation, FieldManagedFields))
	}
	switch {
	case c.Embedded != nil:
		if c.Before != nil || c.After != nil {
			errs = append(errs, errors.New("an embedded change records digests, not before and after"))
		}
		if len(c.Embedded.Removed) == 0 {
			errs = append(errs, errors.New("embedded: removed is empty"))
		}
		for _, d := range []string{c.Embedded.BeforeSHA256, c.Embedded.AfterSHA256} {
			if b, err := hex.DecodeString(d); err != nil || len(b) != sha256.Size {
				errs = append(errs, fmt.Errorf("embedded: digest %q is not a SHA-256", d))
			}
		}
	case c.Before == nil && c.After == nil:
		errs = append(errs, errors.New("before and after are both absent"))
	case c.Before != nil && c.After != nil && *c.Before == *c.After:
		errs = append(errs, errors.New("before and after are equal"))
	}
	return errors.Join(errs...)
}

func (c Change) clone() Change {
	out := Change{Field: c.Field, Key: c.Key, Before: clonePtr(c.Before), After: clonePtr(c.After)}
	if c.Embedded != nil {
		e := *c.Embedded
		e.Removed = append([]EmbeddedKey(nil), e.Removed...)
		out.Embedded = &e
	}
	if c.ManagedFields != nil {
		out.ManagedFields = c.ManagedFields.clone()
	}
	return out
}

func clonePtr(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
