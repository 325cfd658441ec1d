package journal

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func ptr(s string) *string { return &s }

func val(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return "=" + *p
}

func TestChangeInverse(t *testing.T) {
	tests := []struct {
		name       string
		in         Change
		wantBefore *string
		wantAfter  *string
		removal    bool
		addition   bool
		rewrite    bool
	}{
		{"removal becomes addition", Removal(FieldLabel, "app.kubernetes.io/instance", "guestbook"), nil, ptr("guestbook"), true, false, false},
		{"addition becomes removal", Addition(FieldAnnotation, "argocd.argoproj.io/sync-options", "Prune=false"), ptr("Prune=false"), nil, false, true, false},
		{"rewrite swaps", Rewrite(FieldAnnotation, "argocd.argoproj.io/sync-options", "Validate=false", "Validate=false,Prune=false"), ptr("Validate=false,Prune=false"), ptr("Validate=false"), false, false, true},
		{"empty value is not absent", Removal(FieldLabel, "k", ""), nil, ptr(""), true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.IsRemoval() != tt.removal || tt.in.IsAddition() != tt.addition || tt.in.IsRewrite() != tt.rewrite {
				t.Errorf("kind predicates of %s: removal=%v addition=%v rewrite=%v", tt.in, tt.in.IsRemoval(), tt.in.IsAddition(), tt.in.IsRewrite())
			}
			inv := tt.in.Inverse()
			if inv.Field != tt.in.Field || inv.Key != tt.in.Key {
				t.Errorf("inverse changed field/key: %s", inv)
			}
			if val(inv.Before) != val(tt.wantBefore) || val(inv.After) != val(tt.wantAfter) {
				t.Errorf("inverse of %s = %s", tt.in, inv)
			}
			back := inv.Inverse()
			if val(back.Before) != val(tt.in.Before) || val(back.After) != val(tt.in.After) {
				t.Errorf("double inverse of %s = %s", tt.in, back)
			}
			// The inverse must not alias the original's values.
			if inv.Before != nil && tt.in.After != nil && inv.Before == tt.in.After {
				t.Error("inverse shares a pointer with the original")
			}
		})
	}
}

func TestEntryInverseReversesOrder(t *testing.T) {
	e := NewEntry(testObject("a"), Removal(FieldLabel, "x", "1"), Addition(FieldAnnotation, "y", "2"))
	inv := e.Inverse()
	if len(inv) != 2 || inv[0].Key != "y" || !inv[0].IsRemoval() || inv[1].Key != "x" || !inv[1].IsAddition() {
		t.Fatalf("Inverse = %v", inv)
	}
}

func TestChangeString(t *testing.T) {
	got := Removal(FieldAnnotation, "a/b", "x\"y").String()
	want := `annotation "a/b": "x\"y" -> <absent>`
	if got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}

func testObject(name string) ObjectRef {
	return ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		Namespace: "default", Name: name, UID: "uid-" + name, ResourceVersion: "100"}
}

func validJournal() *Journal {
	j := New("detach", "untrack")
	j.ID = "20261130T031500Z-detach-guestbook-abcd"
	j.CreatedAt = time.Date(2026, 11, 30, 3, 15, 0, 0, time.UTC)
	j.Cluster = "https://127.0.0.1:6443"
	j.Context = "kind-lab"
	j.ArgoCDNamespace = "argocd"
	j.Application = &AppRef{Namespace: "argocd", Name: "guestbook"}
	j.Entries = []Entry{
		NewEntry(testObject("web"),
			Removal(FieldLabel, "app.kubernetes.io/instance", "guestbook"),
			Removal(FieldAnnotation, "argocd.argoproj.io/tracking-id", "guestbook:apps/Deployment:default/web"),
			Rewrite(FieldAnnotation, "kubectl.kubernetes.io/last-applied-configuration", "{\"a\":1}\n", "{}\n"),
		),
		NewEntry(ObjectRef{Version: "v1", Resource: "namespaces", Kind: "Namespace", Name: "guestbook", UID: "uid-ns"},
			Addition(FieldAnnotation, "argocd.argoproj.io/sync-options", "Prune=false"),
		),
	}
	return j
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(j *Journal)
		want   []string // substrings of the error; none means valid
	}{
		{"valid", func(j *Journal) {}, nil},
		{"no entries is valid", func(j *Journal) { j.Entries = nil }, nil},
		{"wrong apiVersion", func(j *Journal) { j.APIVersion = "unprune.dev/v2" }, []string{`apiVersion "unprune.dev/v2"`}},
		{"wrong kind", func(j *Journal) { j.Kind = "Receipt" }, []string{`kind "Receipt"`}},
		{"no id", func(j *Journal) { j.ID = "" }, []string{"id is empty"}},
		{"id with slash", func(j *Journal) { j.ID = "../x" }, []string{"id"}},
		{"no command", func(j *Journal) { j.Command = "" }, []string{"command is empty"}},
		{"object without uid, name, resource, version", func(j *Journal) { j.Entries[0].Object = ObjectRef{} },
			[]string{"object uid is empty", "object name is empty", "object resource is empty", "object version is empty"}},
		{"bad state", func(j *Journal) { j.Entries[1].State = "done" }, []string{`entries[1]`, `state "done"`}},
		{"bad field", func(j *Journal) { j.Entries[0].Changes[0].Field = "finalizer" }, []string{`changes[0]`, `field "finalizer"`}},
		{"empty key", func(j *Journal) { j.Entries[0].Changes[1].Key = "" }, []string{`changes[1]`, "key is empty"}},
		{"both absent", func(j *Journal) { j.Entries[0].Changes[0].After = nil; j.Entries[0].Changes[0].Before = nil }, []string{"both absent"}},
		{"before equals after", func(j *Journal) { j.Entries[0].Changes[2].After = ptr("{\"a\":1}\n") }, []string{"changes[2]", "equal"}},
		{"duplicate key", func(j *Journal) {
			j.Entries[1].Changes = append(j.Entries[1].Changes, Removal(FieldAnnotation, "argocd.argoproj.io/sync-options", "x"))
		}, []string{"already changed by changes[0]"}},
		{"same key as label and annotation is fine", func(j *Journal) {
			j.Entries[1].Changes = append(j.Entries[1].Changes, Removal(FieldLabel, "argocd.argoproj.io/sync-options", "x"))
		}, nil},
		{"application without name", func(j *Journal) { j.Application = &AppRef{Namespace: "argocd"} }, []string{"application"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := validJournal()
			tt.mutate(j)
			err := j.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	var nilJ *Journal
	if nilJ.Validate() == nil {
		t.Error("nil journal validated")
	}
}

func TestMarkTransitions(t *testing.T) {
	now := time.Date(2026, 11, 30, 3, 16, 0, 0, time.FixedZone("X", 3600))
	apply := func(j *Journal) error { return j.MarkApplied(0, "101", now) }
	fail := func(j *Journal) error { return j.MarkFailed(0, errors.New("conflict"), now) }
	undo := func(j *Journal) error { return j.MarkUndone(0, now) }
	tests := []struct {
		name      string
		from      State
		op        func(*Journal) error
		wantState State
		wantErr   bool
	}{
		{"planned to applied", StatePlanned, apply, StateApplied, false},
		{"failed to applied (retry)", StateFailed, apply, StateApplied, false},
		{"applied to applied", StateApplied, apply, StateApplied, true},
		{"undone to applied", StateUndone, apply, StateUndone, true},
		{"planned to failed", StatePlanned, fail, StateFailed, false},
		{"failed to failed", StateFailed, fail, StateFailed, false},
		{"applied to failed", StateApplied, fail, StateApplied, true},
		{"applied to undone", StateApplied, undo, StateUndone, false},
		{"planned to undone", StatePlanned, undo, StateUndone, false},
		{"failed to undone", StateFailed, undo, StateUndone, false},
		{"undone to undone", StateUndone, undo, StateUndone, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := validJournal()
			j.Entries[0].State = tt.from
			err := tt.op(j)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("err = %v, want ErrInvalidTransition", err)
			}
			e := j.Entries[0]
			if e.State != tt.wantState {
				t.Errorf("state = %s, want %s", e.State, tt.wantState)
			}
			if err == nil {
				if !e.UpdatedAt.Equal(now) || e.UpdatedAt.Location() != time.UTC {
					t.Errorf("updatedAt = %v, want %v in UTC", e.UpdatedAt, now)
				}
				switch e.State {
				case StateApplied:
					if e.AppliedResourceVersion != "101" || e.Error != "" {
						t.Errorf("applied entry = %+v", e)
					}
				case StateFailed:
					if e.Error != "conflict" {
						t.Errorf("error = %q", e.Error)
					}
				case StateUndone:
					if e.Error != "" {
						t.Errorf("error = %q", e.Error)
					}
				}
			}
		})
	}
	j := validJournal()
	for _, i := range []int{-1, 2} {
		if err := j.MarkApplied(i, "1", now); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("MarkApplied(%d) = %v, want out of range", i, err)
		}
	}
	if err := j.MarkFailed(1, nil, now); err != nil || j.Entries[1].Error != "unknown error" {
		t.Errorf("MarkFailed(nil) = %v, error %q", err, j.Entries[1].Error)
	}
}

func TestCloneIsDeep(t *testing.T) {
	j := validJournal()
	c := j.Clone()
	*c.Entries[0].Changes[0].Before = "changed"
	c.Entries[0].Changes[1].Key = "changed"
	c.Entries[1].State = StateApplied
	c.Application.Name = "changed"
	if *j.Entries[0].Changes[0].Before != "guestbook" || j.Entries[0].Changes[1].Key == "changed" ||
		j.Entries[1].State != StatePlanned || j.Application.Name != "guestbook" {
		t.Errorf("Clone shares memory with the original: %+v", j)
	}
}
