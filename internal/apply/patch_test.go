package apply

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/journal"
)

const (
	keyInstance = "app.kubernetes.io/instance"
	keyTracking = "argocd.argoproj.io/tracking-id"
	keyInstall  = "argocd.argoproj.io/installation-id"
	keySync     = "argocd.argoproj.io/sync-options"
	keyCompare  = "argocd.argoproj.io/compare-options"
	uiID        = "guestbook:apps/Deployment:guestbook/ui"
)

func object(uid string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("guestbook")
	u.SetName("ui")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion("100")
	if labels != nil {
		u.SetLabels(labels)
	}
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

func strs(cs []journal.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestMergePatch(t *testing.T) {
	tests := []struct {
		name            string
		resourceVersion string
		changes         []journal.Change
		want            string
	}{
		{
			name:            "untrack removes keys with null",
			resourceVersion: "42",
			changes: []journal.Change{
				journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
				journal.Removal(journal.FieldAnnotation, keyInstall, "prod"),
				journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
			},
			want: `{"metadata":{"annotations":{"argocd.argoproj.io/installation-id":null,"argocd.argoproj.io/tracking-id":null},"labels":{"app.kubernetes.io/instance":null},"resourceVersion":"42"}}`,
		},
		{
			name:            "keep sets annotations to their merged values",
			resourceVersion: "7",
			changes: []journal.Change{
				journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
				journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
			},
			want: `{"metadata":{"annotations":{"argocd.argoproj.io/compare-options":"IgnoreExtraneous","argocd.argoproj.io/sync-options":"ServerSideApply=true,Prune=false"},"resourceVersion":"7"}}`,
		},
		{
			name:            "labels only",
			resourceVersion: "1",
			changes:         []journal.Change{journal.Addition(journal.FieldLabel, keyInstance, "guestbook")},
			want:            `{"metadata":{"labels":{"app.kubernetes.io/instance":"guestbook"},"resourceVersion":"1"}}`,
		},
		{
			name:            "undo of an untrack: inverses restore the values",
			resourceVersion: "43",
			changes: journal.Entry{Changes: []journal.Change{
				journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
				journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
			}}.Inverse(),
			want: `{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"guestbook:apps/Deployment:guestbook/ui"},"labels":{"app.kubernetes.io/instance":"guestbook"},"resourceVersion":"43"}}`,
		},
		{
			name:            "values are JSON-escaped",
			resourceVersion: "5",
			changes: []journal.Change{
				journal.Rewrite(journal.FieldAnnotation, "kubectl.kubernetes.io/last-applied-configuration", "x", `{"a":"b"}`+"\n"),
			},
			want: `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"a\":\"b\"}\n"},"resourceVersion":"5"}}`,
		},
		{
			name:            "same key as label and annotation stay apart",
			resourceVersion: "9",
			changes: []journal.Change{
				journal.Removal(journal.FieldLabel, "k", "a"),
				journal.Addition(journal.FieldAnnotation, "k", "b"),
			},
			want: `{"metadata":{"annotations":{"k":"b"},"labels":{"k":null},"resourceVersion":"9"}}`,
		},
		{
			name:            "no changes still carries the resourceVersion",
			resourceVersion: "3",
			want:            `{"metadata":{"resourceVersion":"3"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergePatch(tt.resourceVersion, tt.changes)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("MergePatch =\n %s\nwant\n %s", got, tt.want)
			}
		})
	}
}

// A merge patch applied to the object must produce exactly what the changes say.
func TestMergePatchAppliesToObject(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{
		"resourceVersion": "1",
		"labels":          map[string]any{keyInstance: "guestbook", "app": "ui"},
		"annotations":     map[string]any{keyTracking: uiID, keySync: "ServerSideApply=true"},
	}}
	changes := []journal.Change{
		journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
		journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
		journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
	}
	body, err := MergePatch("1", changes)
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil {
		t.Fatal(err)
	}
	merged := mergePatch(live, patch).(map[string]any)
	u := &unstructured.Unstructured{Object: merged}
	if bad := Mismatches(u, changes); len(bad) > 0 {
		t.Errorf("after the patch: %q", bad)
	}
	if got := u.GetLabels(); len(got) != 1 || got["app"] != "ui" {
		t.Errorf("labels after the patch = %v, want only app=ui", got)
	}
}

// mergePatch is RFC 7386.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

func TestMismatches(t *testing.T) {
	changes := []journal.Change{
		journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
		journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
		journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
	}
	tests := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		want        []string
	}{
		{
			name:        "as planned",
			labels:      map[string]string{"app": "ui"},
			annotations: map[string]string{keyCompare: "IgnoreExtraneous", keySync: "ServerSideApply=true,Prune=false"},
		},
		{
			name:        "a key with the same name in the other field does not count",
			labels:      map[string]string{keyCompare: "x", keySync: "y"},
			annotations: map[string]string{keyInstance: "guestbook", keyCompare: "IgnoreExtraneous", keySync: "ServerSideApply=true,Prune=false"},
		},
		{
			name:        "a webhook put the label back",
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyCompare: "IgnoreExtraneous", keySync: "ServerSideApply=true,Prune=false"},
			want:        []string{`label app.kubernetes.io/instance is still "guestbook"`},
		},
		{
			name:        "nothing applied",
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keySync: "ServerSideApply=true"},
			want: []string{
				`label app.kubernetes.io/instance is still "guestbook"`,
				`annotation argocd.argoproj.io/compare-options is absent, want "IgnoreExtraneous"`,
				`annotation argocd.argoproj.io/sync-options is "ServerSideApply=true", want "ServerSideApply=true,Prune=false"`,
			},
		},
		{
			name: "no metadata at all",
			want: []string{
				`annotation argocd.argoproj.io/compare-options is absent, want "IgnoreExtraneous"`,
				`annotation argocd.argoproj.io/sync-options is absent, want "ServerSideApply=true,Prune=false"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Mismatches(object("uid-1", tt.labels, tt.annotations), changes)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Mismatches =\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	changes := []journal.Change{
		journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
		journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
		journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
		journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
	}
	original := strs(changes)
	want := `--- Deployment.apps/guestbook/ui (live)
+++ Deployment.apps/guestbook/ui (after)
  metadata.labels:
-   app.kubernetes.io/instance: "guestbook"
  metadata.annotations:
+   argocd.argoproj.io/compare-options: "IgnoreExtraneous"
-   argocd.argoproj.io/sync-options: "ServerSideApply=true"
+   argocd.argoproj.io/sync-options: "ServerSideApply=true,Prune=false"
-   argocd.argoproj.io/tracking-id: "guestbook:apps/Deployment:guestbook/ui"
`
	if got := Diff("Deployment.apps/guestbook/ui", changes); got != want {
		t.Errorf("Diff =\n%s\nwant\n%s", got, want)
	}
	if !slices.Equal(strs(changes), original) {
		t.Errorf("Diff reordered its input: %q", strs(changes))
	}
}

func TestDiffEmpty(t *testing.T) {
	want := "--- Namespace/team-a (live)\n+++ Namespace/team-a (after)\n"
	if got := Diff("Namespace/team-a", nil); got != want {
		t.Errorf("Diff = %q, want %q", got, want)
	}
}

func TestDiffQuotesAndShortensValues(t *testing.T) {
	long := strings.Repeat("a", 300)
	got := Diff("x", []journal.Change{
		journal.Rewrite(journal.FieldAnnotation, "k", "line1\nline2", long),
	})
	wantLines := []string{
		"--- x (live)",
		"+++ x (after)",
		"  metadata.annotations:",
		`-   k: "line1\nline2"`,
		`+   k: "` + strings.Repeat("a", 150) + `"… (300 bytes)`,
		"",
	}
	if lines := strings.Split(got, "\n"); !slices.Equal(lines, wantLines) {
		t.Errorf("Diff lines =\n %q\nwant\n %q", lines, wantLines)
	}
}

func TestUndoPlan(t *testing.T) {
	entry := journal.Entry{
		Object: journal.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "guestbook", Name: "ui", UID: "uid-1"},
		Changes: []journal.Change{
			journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
			journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
			journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
			journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
		},
		State: journal.StateApplied,
	}
	asWritten := map[string]string{keyCompare: "IgnoreExtraneous", keySync: "ServerSideApply=true,Prune=false"}
	asFound := map[string]string{keyTracking: uiID, keySync: "ServerSideApply=true"}

	tests := []struct {
		name        string
		uid         string
		labels      map[string]string
		annotations map[string]string

		wantRestore []journal.Change
		wantAlready []journal.Change
		wantRefused []string
	}{
		{
			name:        "recreated object: nothing touched",
			uid:         "uid-2",
			annotations: asWritten,
			wantRefused: []string{"the object was recreated (uid uid-2, the journal recorded uid-1): it is not the object unprune changed"},
		},
		{
			name:        "still as unprune wrote it: every change reversed",
			uid:         "uid-1",
			labels:      map[string]string{"app": "ui"},
			annotations: asWritten,
			wantRestore: []journal.Change{
				journal.Addition(journal.FieldLabel, keyInstance, "guestbook"),
				journal.Addition(journal.FieldAnnotation, keyTracking, uiID),
				journal.Removal(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
				journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true,Prune=false", "ServerSideApply=true"),
			},
		},
		{
			name:        "already as it was: nothing to restore",
			uid:         "uid-1",
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: asFound,
			wantAlready: entry.Changes,
		},
		{
			name:        "changed by someone else: their values win",
			uid:         "uid-1",
			labels:      map[string]string{keyInstance: "other"},
			annotations: map[string]string{keyCompare: "IgnoreExtraneous", keySync: "Validate=false"},
			wantRestore: []journal.Change{
				journal.Addition(journal.FieldAnnotation, keyTracking, uiID),
				journal.Removal(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
			},
			wantRefused: []string{
				`label app.kubernetes.io/instance is now "other", neither what unprune wrote (absent) nor what it found ("guestbook"): left as is`,
				`annotation argocd.argoproj.io/sync-options is now "Validate=false", neither what unprune wrote ("ServerSideApply=true,Prune=false") nor what it found ("ServerSideApply=true"): left as is`,
			},
		},
		{
			name:        "an added key removed since, a rewritten one gone",
			uid:         "uid-1",
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyTracking: uiID},
			wantAlready: []journal.Change{
				journal.Removal(journal.FieldLabel, keyInstance, "guestbook"),
				journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
				journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
			},
			wantRefused: []string{
				`annotation argocd.argoproj.io/sync-options is now absent, neither what unprune wrote ("ServerSideApply=true,Prune=false") nor what it found ("ServerSideApply=true"): left as is`,
			},
		},
		{
			name:        "label values are read from labels, not annotations",
			uid:         "uid-1",
			annotations: map[string]string{keyInstance: "guestbook", keyTracking: uiID, keyCompare: "IgnoreExtraneous", keySync: "ServerSideApply=true"},
			wantRestore: []journal.Change{
				journal.Addition(journal.FieldLabel, keyInstance, "guestbook"),
				journal.Removal(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
			},
			wantAlready: []journal.Change{
				journal.Removal(journal.FieldAnnotation, keyTracking, uiID),
				journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restore, already, refused := UndoPlan(entry, object(tt.uid, tt.labels, tt.annotations))
			if got, want := strs(restore), strs(tt.wantRestore); !slices.Equal(got, want) {
				t.Errorf("restore =\n %q\nwant\n %q", got, want)
			}
			if got, want := strs(already), strs(tt.wantAlready); !slices.Equal(got, want) {
				t.Errorf("already =\n %q\nwant\n %q", got, want)
			}
			if !slices.Equal(refused, tt.wantRefused) {
				t.Errorf("refused =\n %q\nwant\n %q", refused, tt.wantRefused)
			}
		})
	}
}

func TestObjectRef(t *testing.T) {
	m := &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Scope:            meta.RESTScopeNamespace,
	}
	got := ObjectRef(m, object("uid-1", nil, nil))
	want := journal.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		Namespace: "guestbook", Name: "ui", UID: "uid-1", ResourceVersion: "100"}
	if got != want {
		t.Errorf("ObjectRef = %+v, want %+v", got, want)
	}
}

func TestDiffShortensLongValuesOnRuneBoundaries(t *testing.T) {
	long := "a" + strings.Repeat("é", 200)
	got := Diff("x", []journal.Change{journal.Removal(journal.FieldAnnotation, "k", long)})
	if !utf8.ValidString(got) {
		t.Fatalf("diff is not valid UTF-8: %q", got)
	}
	if !strings.Contains(got, `… (401 bytes)`) {
		t.Fatalf("diff does not say how long the value was: %q", got)
	}
}
