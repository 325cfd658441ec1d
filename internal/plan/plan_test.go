package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/journal"
)

const (
	keyInstance    = argocd.DefaultInstanceLabelKey
	keyPartOf      = "app.kubernetes.io/part-of"
	keyCustom      = "argocd.argoproj.io/instance"
	keyTracking    = argocd.AnnotationTrackingID
	keyInstallID   = argocd.AnnotationInstallationID
	keySync        = argocd.AnnotationSyncOptions
	keyCompare     = argocd.AnnotationCompareOptions
	keyLastApplied = argocd.AnnotationLastAppliedConfiguration
)

func version(major, minor, patch int) *argocd.Version {
	return &argocd.Version{Major: major, Minor: minor, Patch: patch}
}

func settings(method string, extra ...string) argocd.Settings {
	data := map[string]string{}
	if method != "" {
		data[argocd.SettingTrackingMethod] = method
	}
	for i := 0; i+1 < len(extra); i += 2 {
		data[extra[i]] = extra[i+1]
	}
	return argocd.NewSettings(data, version(3, 6, 1))
}

var (
	labelMode          = settings("label")
	annotationMode     = settings("annotation")
	annotationAndLabel = settings("annotation+label")
	ambiguousMode      = argocd.NewSettings(nil, nil)
	customKeyLabelMode = settings("label", argocd.SettingInstanceLabelKey, keyCustom)

	ui         = argocd.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	uiID       = "guestbook:apps/Deployment:guestbook/ui"
	teamA      = argocd.ObjectRef{Kind: "Namespace", Name: "team-a", ClusterScoped: true}
	cmSettings = argocd.ObjectRef{Kind: "ConfigMap", Namespace: "guestbook", Name: "settings"}
)

// removed renders a removal the way journal.Change.String does.
func removed(field journal.Field, key, before string) string {
	return journal.Removal(field, key, before).String()
}

func changeStrings(cs []journal.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestParseStrategy(t *testing.T) {
	for _, s := range []string{"untrack", "keep"} {
		got, err := ParseStrategy(s)
		if err != nil || string(got) != s {
			t.Errorf("ParseStrategy(%q) = %q, %v; want %q, nil", s, got, err, s)
		}
	}
	for _, s := range []string{"", "Keep", "delete", "untrack "} {
		if got, err := ParseStrategy(s); err == nil {
			t.Errorf("ParseStrategy(%q) = %q, nil; want an error", s, got)
		}
	}
}

func TestBuildUntrack(t *testing.T) {
	tests := []struct {
		name        string
		settings    argocd.Settings
		instance    string // default "guestbook"
		ref         argocd.ObjectRef
		labels      map[string]string
		annotations map[string]string

		want      []string // exact changes, in order
		wantNotes []string // substrings, one per note, in order
	}{
		{
			name:     "label mode removes the instance label only",
			settings: labelMode,
			ref:      ui,
			labels:   map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook", "app": "ui"},
			want:     []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:        "label mode also removes a tracking-id naming this app and object, with its installation-id",
			settings:    labelMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyTracking: uiID, keyInstallID: "prod", "other": "x"},
			want: []string{
				removed(journal.FieldLabel, keyInstance, "guestbook"),
				removed(journal.FieldAnnotation, keyInstallID, "prod"),
				removed(journal.FieldAnnotation, keyTracking, uiID),
			},
		},
		{
			name:        "label mode leaves a tracking-id naming another app",
			settings:    labelMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyTracking: "other:apps/Deployment:guestbook/ui", keyInstallID: "prod"},
			want:        []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:        "label mode leaves a tracking-id naming another object",
			settings:    labelMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook"},
			annotations: map[string]string{keyTracking: "guestbook:apps/Deployment:guestbook/original"},
			want:        []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:        "annotation mode removes the tracking-id and leaves Helm's instance label with a note",
			settings:    annotationMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook"},
			annotations: map[string]string{keyTracking: uiID},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, uiID)},
			wantNotes: []string{
				"label app.kubernetes.io/instance=guestbook left alone: annotation tracking does not read it, and other tools (Helm) set it for their own purposes",
			},
		},
		{
			name:        "annotation mode removes the installation-id with the tracking-id",
			settings:    settings("annotation", argocd.SettingInstallationID, "prod"),
			ref:         ui,
			annotations: map[string]string{keyTracking: uiID, keyInstallID: "prod"},
			want: []string{
				removed(journal.FieldAnnotation, keyInstallID, "prod"),
				removed(journal.FieldAnnotation, keyTracking, uiID),
			},
		},
		{
			name:        "annotation+label removes the label Argo CD wrote along with the tracking-id",
			settings:    annotationAndLabel,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook"},
			annotations: map[string]string{keyTracking: uiID},
			want: []string{
				removed(journal.FieldLabel, keyInstance, "guestbook"),
				removed(journal.FieldAnnotation, keyTracking, uiID),
			},
		},
		{
			name:        "annotation+label leaves an instance label with another value",
			settings:    annotationAndLabel,
			ref:         ui,
			labels:      map[string]string{keyInstance: "my-release"},
			annotations: map[string]string{keyTracking: uiID},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, uiID)},
			wantNotes:   []string{"label app.kubernetes.io/instance=my-release left alone: annotation+label tracking does not read it"},
		},
		{
			name:        "ambiguous settings remove both candidates when they agree",
			settings:    ambiguousMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook"},
			annotations: map[string]string{keyTracking: uiID},
			want: []string{
				removed(journal.FieldLabel, keyInstance, "guestbook"),
				removed(journal.FieldAnnotation, keyTracking, uiID),
			},
		},
		{
			name:      "ambiguous settings with the label only: removed, with an uncertainty note",
			settings:  ambiguousMode,
			ref:       ui,
			labels:    map[string]string{keyInstance: "guestbook"},
			want:      []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
			wantNotes: []string{"ownership is uncertain ("},
		},
		{
			name:        "ambiguous settings with the annotation only: removed, with an uncertainty note",
			settings:    ambiguousMode,
			ref:         ui,
			annotations: map[string]string{keyTracking: uiID},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, uiID)},
			wantNotes:   []string{"ownership is uncertain ("},
		},
		{
			name:        "ambiguous settings keep a label naming another instance",
			settings:    ambiguousMode,
			ref:         ui,
			labels:      map[string]string{keyInstance: "my-release"},
			annotations: map[string]string{keyTracking: uiID},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, uiID)},
			wantNotes:   []string{"ownership is uncertain ("},
		},
		{
			name:     "custom instanceLabelKey: only that key is removed",
			settings: customKeyLabelMode,
			ref:      ui,
			labels:   map[string]string{keyCustom: "guestbook", keyInstance: "guestbook"},
			want:     []string{removed(journal.FieldLabel, keyCustom, "guestbook")},
		},
		{
			name:     "apps in any namespace: label with the <namespace>_<app> instance",
			settings: labelMode,
			instance: "team-a_guestbook",
			ref:      ui,
			labels:   map[string]string{keyInstance: "team-a_guestbook"},
			want:     []string{removed(journal.FieldLabel, keyInstance, "team-a_guestbook")},
		},
		{
			name:        "apps in any namespace: tracking-id with the <namespace>_<app> instance",
			settings:    annotationMode,
			instance:    "team-a_guestbook",
			ref:         ui,
			annotations: map[string]string{keyTracking: "team-a_guestbook:apps/Deployment:guestbook/ui"},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, "team-a_guestbook:apps/Deployment:guestbook/ui")},
		},
		{
			name:        "cluster-scoped object with the destination namespace in the id",
			settings:    annotationMode,
			ref:         teamA,
			annotations: map[string]string{keyTracking: "guestbook:/Namespace:guestbook/team-a"},
			want:        []string{removed(journal.FieldAnnotation, keyTracking, "guestbook:/Namespace:guestbook/team-a")},
		},
		{
			name:     "cluster-scoped object whose name has colons",
			settings: annotationMode,
			ref:      argocd.ObjectRef{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:aggregate-to-admin", ClusterScoped: true},
			annotations: map[string]string{
				keyTracking: "guestbook:rbac.authorization.k8s.io/ClusterRole:/system:aggregate-to-admin",
			},
			want: []string{removed(journal.FieldAnnotation, keyTracking, "guestbook:rbac.authorization.k8s.io/ClusterRole:/system:aggregate-to-admin")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			instance := tt.instance
			if instance == "" {
				instance = "guestbook"
			}
			target := Target{Instance: instance, Ref: tt.ref, Labels: tt.labels, Annotations: tt.annotations, RequiresPruning: true}
			p := Build(tt.settings, target, Options{Strategy: StrategyUntrack})
			if p.Refusal != nil {
				t.Fatalf("refused: %s: %s", p.Refusal.Code, p.Refusal.Message)
			}
			if got := changeStrings(p.Changes); !slices.Equal(got, tt.want) {
				t.Errorf("changes:\n got %q\nwant %q", got, tt.want)
			}
			if len(p.Notes) != len(tt.wantNotes) {
				t.Fatalf("notes = %q, want %d notes like %q", p.Notes, len(tt.wantNotes), tt.wantNotes)
			}
			for i, want := range tt.wantNotes {
				if !strings.Contains(p.Notes[i], want) {
					t.Errorf("note %d = %q, want it to contain %q", i, p.Notes[i], want)
				}
			}
			if p.Refusal == nil && len(p.Changes) == 0 {
				t.Error("Done() = true for a plan with changes")
			}
			for _, c := range p.Changes {
				if !c.IsRemoval() {
					t.Errorf("untrack change %s is not a removal", c)
				}
				if c.Key == keyPartOf {
					t.Errorf("untrack removes %s", keyPartOf)
				}
			}
		})
	}
}

// The plan must never mutate the maps it was given: they are the live object's metadata.
func TestBuildDoesNotMutateTarget(t *testing.T) {
	labels := map[string]string{keyInstance: "guestbook"}
	annotations := map[string]string{keyTracking: uiID, keySync: "ServerSideApply=true"}
	for _, strategy := range []Strategy{StrategyUntrack, StrategyKeep} {
		Build(ambiguousMode, Target{Instance: "guestbook", Ref: ui, Labels: labels, Annotations: annotations, RequiresPruning: true},
			Options{Strategy: strategy, ScrubLastApplied: true})
	}
	if len(labels) != 1 || labels[keyInstance] != "guestbook" {
		t.Errorf("labels changed: %v", labels)
	}
	if len(annotations) != 2 || annotations[keyTracking] != uiID || annotations[keySync] != "ServerSideApply=true" {
		t.Errorf("annotations changed: %v", annotations)
	}
}

func TestBuildRefusals(t *testing.T) {
	tracked := map[string]string{keyInstance: "guestbook"}
	tests := []struct {
		name     string
		settings argocd.Settings
		target   Target
		opts     Options

		wantCode    RefusalCode
		wantMessage []string // substrings
	}{
		{
			name:        "being deleted",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: tracked, Deleting: true, RequiresPruning: true},
			wantCode:    RefuseDeleting,
			wantMessage: []string{"Deployment.apps/ui in namespace guestbook is being deleted already"},
		},
		{
			name:        "being deleted wins over owner references",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: tracked, Deleting: true, OwnerReferences: []string{"Foo/bar"}, RequiresPruning: true},
			wantCode:    RefuseDeleting,
			wantMessage: []string{"being deleted"},
		},
		{
			name:     "owner references",
			settings: labelMode,
			target: Target{Ref: ui, Labels: tracked, RequiresPruning: true,
				OwnerReferences: []string{"ReplicaSet/ui-abc", "Foo/bar"}},
			wantCode:    RefuseHasOwner,
			wantMessage: []string{"is owned by ReplicaSet/ui-abc, Foo/bar", "detach its owner instead"},
		},
		{
			name:        "owner references refused even with --force",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: tracked, OwnerReferences: []string{"ReplicaSet/ui-abc"}},
			opts:        Options{Force: true},
			wantCode:    RefuseHasOwner,
			wantMessage: []string{"ReplicaSet/ui-abc"},
		},
		{
			name:        "label names another app",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: map[string]string{keyInstance: "other"}, RequiresPruning: true},
			wantCode:    RefuseOtherOwner,
			wantMessage: []string{`tracked by app instance "other"`, `not by "guestbook"`},
		},
		{
			name:        "tracking-id names another app",
			settings:    annotationMode,
			target:      Target{Ref: ui, Annotations: map[string]string{keyTracking: "other:apps/Deployment:guestbook/ui"}, RequiresPruning: true},
			wantCode:    RefuseOtherOwner,
			wantMessage: []string{`app instance "other"`},
		},
		{
			name:        "tracked by another app, even with --force and keep",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: map[string]string{keyInstance: "other"}},
			opts:        Options{Force: true, Strategy: StrategyKeep},
			wantCode:    RefuseOtherOwner,
			wantMessage: []string{`app instance "other"`},
		},
		{
			name:     "copied object whose tracking-id names another object",
			settings: annotationMode,
			target: Target{Ref: ui, RequiresPruning: true,
				Annotations: map[string]string{keyTracking: "guestbook:apps/Deployment:guestbook/original"}},
			wantCode:    RefuseNamesOtherObject,
			wantMessage: []string{"names Deployment.apps/original", "not this object"},
		},
		{
			// Argo CD ignores the copy, but its metadata is not this app's to remove either.
			name:        "copied object no longer requiring pruning",
			settings:    annotationMode,
			target:      Target{Ref: ui, Annotations: map[string]string{keyTracking: "guestbook:apps/Deployment:guestbook/original"}},
			wantCode:    RefuseNamesOtherObject,
			wantMessage: []string{"not this object"},
		},
		{
			name:     "installation-id of another installation",
			settings: settings("annotation", argocd.SettingInstallationID, "prod"),
			target: Target{Ref: ui, RequiresPruning: true,
				Annotations: map[string]string{keyTracking: uiID, keyInstallID: "staging"}},
			wantCode:    RefuseOtherInstallation,
			wantMessage: []string{"another Argo CD installation", `"staging"`},
		},
		{
			name:        "not requiring pruning without --force",
			settings:    labelMode,
			target:      Target{Ref: ui, Labels: tracked},
			wantCode:    RefuseNotRequiresPruning,
			wantMessage: []string{"does not require pruning", "<Force>"},
		},
		{
			name:        "not requiring pruning without --force, keep strategy",
			settings:    annotationMode,
			target:      Target{Ref: ui, Annotations: map[string]string{keyTracking: uiID}},
			opts:        Options{Strategy: StrategyKeep},
			wantCode:    RefuseNotRequiresPruning,
			wantMessage: []string{"does not require pruning"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Instance = "guestbook"
			p := Build(tt.settings, tt.target, tt.opts)
			if p.Refusal == nil {
				t.Fatalf("not refused; changes %q, notes %q", changeStrings(p.Changes), p.Notes)
			}
			if p.Refusal.Code != tt.wantCode {
				t.Errorf("code = %s, want %s (%s)", p.Refusal.Code, tt.wantCode, p.Refusal.Message)
			}
			for _, want := range tt.wantMessage {
				if !strings.Contains(p.Refusal.Message, want) {
					t.Errorf("message %q lacks %q", p.Refusal.Message, want)
				}
			}
			if p.Refusal.Error() != p.Refusal.Message {
				t.Errorf("Error() = %q, want the message", p.Refusal.Error())
			}
			if len(p.Changes) != 0 {
				t.Errorf("refused plan has changes %q", changeStrings(p.Changes))
			}
			if p.Refusal == nil && len(p.Changes) == 0 {
				t.Error("Done() = true for a refused plan")
			}
		})
	}
}

func TestBuildForce(t *testing.T) {
	target := Target{Instance: "guestbook", Ref: ui, Labels: map[string]string{keyInstance: "guestbook"}}
	p := Build(labelMode, target, Options{Force: true})
	if p.Refusal != nil {
		t.Fatalf("refused with --force: %s", p.Refusal.Message)
	}
	want := []string{removed(journal.FieldLabel, keyInstance, "guestbook")}
	if got := changeStrings(p.Changes); !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
}

// TestBuildStatusRowIsAuthority: a row requiring pruning means Argo CD matched the object to the
// app. When the settings find no tracking, unprune's model is wrong: it removes what names this app
// under any method; only when nothing names the app under any method is the object released already
// (a rerun while Argo CD has not compared), and then nothing is planned.
func TestBuildStatusRowIsAuthority(t *testing.T) {
	tests := []struct {
		name         string
		settings     argocd.Settings
		target       Target
		opts         Options
		wantCode     RefusalCode
		wantChanges  []string
		wantNote     string
		wantReleased bool
	}{
		{name: "no metadata at all", settings: labelMode, target: Target{Ref: ui, RequiresPruning: true}, wantReleased: true, wantNote: "under any tracking method"},
		{name: "ambiguous, part-of only", settings: ambiguousMode, target: Target{Ref: ui, RequiresPruning: true, Labels: map[string]string{keyPartOf: "guestbook"}},
			wantReleased: true},
		{name: "released, another app's label left", settings: annotationMode,
			target:       Target{Ref: ui, RequiresPruning: true, Labels: map[string]string{keyInstance: "other"}, Annotations: map[string]string{"team": "a"}},
			wantReleased: true},
		{name: "keep, released already", settings: labelMode, target: Target{Ref: ui, RequiresPruning: true}, opts: Options{Strategy: StrategyKeep},
			wantReleased: true},
		{name: "annotation mode read, label tracking real", settings: annotationMode,
			target:      Target{Ref: ui, RequiresPruning: true, Labels: map[string]string{keyInstance: "guestbook"}},
			wantChanges: []string{removed(journal.FieldLabel, keyInstance, "guestbook")}, wantNote: "unprune's view of the settings is wrong"},
		{name: "label mode read, annotation tracking real", settings: labelMode,
			target:      Target{Ref: ui, RequiresPruning: true, Annotations: map[string]string{keyTracking: uiID}},
			wantChanges: []string{removed(journal.FieldAnnotation, keyTracking, uiID)}, wantNote: "unprune's view of the settings is wrong"},
		{name: "another installation's object", settings: settings("annotation", argocd.SettingInstallationID, "prod"),
			target:   Target{Ref: ui, RequiresPruning: true, Annotations: map[string]string{keyTracking: uiID, keyInstallID: "staging"}},
			wantCode: RefuseOtherInstallation},
		{name: "no row, no metadata, --force", settings: labelMode, target: Target{Ref: ui}, opts: Options{Force: true}, wantNote: "not tracked by Argo CD"},
		{name: "no row, no metadata", settings: labelMode, target: Target{Ref: ui}, wantCode: RefuseNotRequiresPruning},
		{name: "hook", settings: annotationMode, target: Target{Ref: ui, RequiresPruning: true, Hook: true, Annotations: map[string]string{keyTracking: uiID}},
			wantCode: RefuseHook},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Instance = "guestbook"
			p := Build(tt.settings, tt.target, tt.opts)
			switch {
			case tt.wantCode != "" && (p.Refusal == nil || p.Refusal.Code != tt.wantCode):
				t.Fatalf("refusal %+v, want %s", p.Refusal, tt.wantCode)
			case tt.wantCode == "" && p.Refusal != nil:
				t.Fatalf("refused: %s", p.Refusal.Message)
			}
			if got := changeStrings(p.Changes); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes %q, want %q", got, tt.wantChanges)
			}
			if p.Released != tt.wantReleased {
				t.Errorf("released %v, want %v", p.Released, tt.wantReleased)
			}
			if tt.wantNote != "" && !strings.Contains(strings.Join(p.Notes, "\n"), tt.wantNote) {
				t.Errorf("notes %q lack %q", p.Notes, tt.wantNote)
			}
		})
	}
}

// TestBuildTruncatedLabel: in annotation+label mode Argo CD writes the instance label cut to 63
// characters; detach removes that value too.
func TestBuildTruncatedLabel(t *testing.T) {
	instance := "team-apps_" + strings.Repeat("a", 50) + "-guestbook-long"
	truncated, _ := argocd.TruncatedLabelValue(instance)
	ref := argocd.ObjectRef{Kind: "Namespace", Name: "x", ClusterScoped: true}
	id := instance + ":/Namespace:dest/x"
	target := Target{Instance: instance, Ref: ref, RequiresPruning: true,
		Labels: map[string]string{keyInstance: truncated}, Annotations: map[string]string{keyTracking: id}}
	p := Build(annotationAndLabel, target, Options{})
	want := []string{removed(journal.FieldLabel, keyInstance, truncated), removed(journal.FieldAnnotation, keyTracking, id)}
	if got := changeStrings(p.Changes); p.Refusal != nil || !slices.Equal(got, want) {
		t.Fatalf("changes %q (refusal %+v), want %q", got, p.Refusal, want)
	}
	// In label mode nothing is truncated: such an instance cannot be tracked at all, and unprune says so.
	p = Build(labelMode, Target{Instance: instance, Ref: ref, RequiresPruning: true, Labels: map[string]string{keyInstance: instance}}, Options{})
	if !strings.Contains(strings.Join(p.Notes, "\n"), "longer than 63 characters") {
		t.Fatalf("notes %q do not say label tracking cannot write this instance", p.Notes)
	}
}

func TestBuildKeep(t *testing.T) {
	trackedAnnotations := func(extra ...string) map[string]string {
		m := map[string]string{keyTracking: uiID}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	tests := []struct {
		name        string
		annotations map[string]string
		want        []journal.Change
	}{
		{
			name:        "adds both annotations",
			annotations: trackedAnnotations(),
			want: []journal.Change{
				journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
				journal.Addition(journal.FieldAnnotation, keySync, "Prune=false,Delete=false"),
			},
		},
		{
			name:        "merges into an existing sync-options list",
			annotations: trackedAnnotations(keySync, "ServerSideApply=true"),
			want: []journal.Change{
				journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
				journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true", "ServerSideApply=true,Prune=false,Delete=false"),
			},
		},
		{
			name:        "replaces Prune=confirm",
			annotations: trackedAnnotations(keySync, "Prune=confirm", keyCompare, "IgnoreExtraneous"),
			want: []journal.Change{
				journal.Rewrite(journal.FieldAnnotation, keySync, "Prune=confirm", "Prune=false,Delete=false"),
			},
		},
		{
			name:        "replaces Prune=confirm inside a list, in place",
			annotations: trackedAnnotations(keySync, "ServerSideApply=true, Prune=confirm,Validate=false"),
			want: []journal.Change{
				journal.Addition(journal.FieldAnnotation, keyCompare, "IgnoreExtraneous"),
				journal.Rewrite(journal.FieldAnnotation, keySync, "ServerSideApply=true, Prune=confirm,Validate=false", "ServerSideApply=true,Prune=false,Validate=false,Delete=false"),
			},
		},
		{
			name:        "merges into an existing compare-options list",
			annotations: trackedAnnotations(keyCompare, "ServerSideDiff=true", keySync, "Prune=false,Delete=false"),
			want: []journal.Change{
				journal.Rewrite(journal.FieldAnnotation, keyCompare, "ServerSideDiff=true", "ServerSideDiff=true,IgnoreExtraneous"),
			},
		},
		{
			name:        "already present: no change",
			annotations: trackedAnnotations(keyCompare, "IgnoreExtraneous", keySync, "ServerSideApply=true, Prune=false,Delete=false"),
		},
		{
			name:        "Delete=false added beside an existing Prune=false",
			annotations: trackedAnnotations(keyCompare, "IgnoreExtraneous", keySync, "Prune=false"),
			want: []journal.Change{
				journal.Rewrite(journal.FieldAnnotation, keySync, "Prune=false", "Prune=false,Delete=false"),
			},
		},
		{
			name:        "empty values are rewritten, not added",
			annotations: trackedAnnotations(keyCompare, "", keySync, ""),
			want: []journal.Change{
				journal.Rewrite(journal.FieldAnnotation, keyCompare, "", "IgnoreExtraneous"),
				journal.Rewrite(journal.FieldAnnotation, keySync, "", "Prune=false,Delete=false"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := Target{Instance: "guestbook", Ref: ui, Annotations: tt.annotations,
				Labels: map[string]string{keyInstance: "guestbook"}, RequiresPruning: true}
			p := Build(annotationMode, target, Options{Strategy: StrategyKeep, ScrubLastApplied: true})
			if p.Refusal != nil {
				t.Fatalf("refused: %s", p.Refusal.Message)
			}
			if got, want := changeStrings(p.Changes), changeStrings(tt.want); !slices.Equal(got, want) {
				t.Errorf("changes:\n got %q\nwant %q", got, want)
			}
			if (p.Refusal == nil && len(p.Changes) == 0) != (len(tt.want) == 0) {
				t.Errorf("Done() = %v with %d changes", (p.Refusal == nil && len(p.Changes) == 0), len(tt.want))
			}
			if len(p.Notes) != 0 {
				t.Errorf("notes = %q, want none", p.Notes)
			}
		})
	}
}

func TestBuildScrubLastApplied(t *testing.T) {
	lastApplied := `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"guestbook:/ConfigMap:guestbook/settings","note":"x"},"labels":{"app.kubernetes.io/instance":"guestbook","app.kubernetes.io/part-of":"guestbook"},"name":"settings","namespace":"guestbook"}}` + "\n"
	settingsID := "guestbook:/ConfigMap:guestbook/settings"

	tests := []struct {
		name        string
		settings    argocd.Settings
		labels      map[string]string
		annotations map[string]string
		scrub       bool

		wantRemovals []string
		wantAfter    string // the rewritten last-applied-configuration; empty: no rewrite
		wantNote     string // substring of the only note; empty: no note
	}{
		{
			name:         "label mode: the label goes from the copy too",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook"},
			annotations:  map[string]string{keyLastApplied: lastApplied},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
			wantAfter:    `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"guestbook:/ConfigMap:guestbook/settings","note":"x"},"labels":{"app.kubernetes.io/part-of":"guestbook"},"name":"settings","namespace":"guestbook"}}` + "\n",
		},
		{
			name:         "annotation+label: label and tracking-id go, part-of and other annotations stay",
			settings:     annotationAndLabel,
			labels:       map[string]string{keyInstance: "guestbook", keyPartOf: "guestbook"},
			annotations:  map[string]string{keyTracking: settingsID, keyLastApplied: lastApplied},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook"), removed(journal.FieldAnnotation, keyTracking, settingsID)},
			wantAfter:    `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"note":"x"},"labels":{"app.kubernetes.io/part-of":"guestbook"},"name":"settings","namespace":"guestbook"}}` + "\n",
		},
		{
			name:         "annotation mode: Helm's label stays in the copy",
			settings:     annotationMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			annotations:  map[string]string{keyTracking: settingsID, keyLastApplied: lastApplied},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldAnnotation, keyTracking, settingsID)},
			wantAfter:    `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{"note":"x"},"labels":{"app.kubernetes.io/instance":"guestbook","app.kubernetes.io/part-of":"guestbook"},"name":"settings","namespace":"guestbook"}}` + "\n",
			wantNote:     "label app.kubernetes.io/instance=guestbook left alone",
		},
		{
			name:     "numbers keep every digit",
			settings: annotationMode,
			annotations: map[string]string{keyTracking: settingsID,
				keyLastApplied: `{"data":{"n":9007199254740993},"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"x"}}}`},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldAnnotation, keyTracking, settingsID)},
			wantAfter:    `{"data":{"n":9007199254740993},"metadata":{}}`,
		},
		{
			name:     "emptied sections are dropped and no trailing newline is added",
			settings: annotationMode,
			annotations: map[string]string{keyTracking: settingsID,
				keyLastApplied: `{"kind":"ConfigMap","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"x"},"name":"settings"}}`},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldAnnotation, keyTracking, settingsID)},
			wantAfter:    `{"kind":"ConfigMap","metadata":{"name":"settings"}}`,
		},
		{
			name:         "not JSON: left alone with a note",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			annotations:  map[string]string{keyLastApplied: "apiVersion: v1\nkind: ConfigMap\n"},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
			wantNote:     "kubectl.kubernetes.io/last-applied-configuration left as is: it is not JSON",
		},
		{
			name:         "copy without the keys: nothing to rewrite",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			annotations:  map[string]string{keyLastApplied: `{"metadata":{"labels":{"app":"x"}}}`},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:         "copy without metadata: nothing to rewrite",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			annotations:  map[string]string{keyLastApplied: `{"kind":"ConfigMap"}`},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:         "no copy: nothing to rewrite",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			scrub:        true,
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
		{
			name:         "scrubbing off: the copy is untouched",
			settings:     labelMode,
			labels:       map[string]string{keyInstance: "guestbook"},
			annotations:  map[string]string{keyLastApplied: lastApplied},
			wantRemovals: []string{removed(journal.FieldLabel, keyInstance, "guestbook")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := Target{Instance: "guestbook", Ref: cmSettings, Labels: tt.labels, Annotations: tt.annotations, RequiresPruning: true}
			p := Build(tt.settings, target, Options{Strategy: StrategyUntrack, ScrubLastApplied: tt.scrub})
			if p.Refusal != nil {
				t.Fatalf("refused: %s", p.Refusal.Message)
			}
			var removals []journal.Change
			var rewrites []journal.Change
			for _, c := range p.Changes {
				if c.Key == keyLastApplied {
					rewrites = append(rewrites, c)
				} else {
					removals = append(removals, c)
				}
			}
			if got := changeStrings(removals); !slices.Equal(got, tt.wantRemovals) {
				t.Errorf("removals:\n got %q\nwant %q", got, tt.wantRemovals)
			}
			if tt.wantAfter == "" {
				if len(rewrites) != 0 {
					t.Errorf("unexpected rewrite %s", rewrites[0])
				}
			} else {
				if len(rewrites) != 1 {
					t.Fatalf("rewrites = %q, want one", changeStrings(rewrites))
				}
				c := rewrites[0]
				if p.Changes[len(p.Changes)-1].Key != keyLastApplied {
					t.Errorf("the rewrite is not the last change: %q", changeStrings(p.Changes))
				}
				// The change records digests and removed keys, never the value (it may hold a Secret's data).
				if c.Embedded == nil || c.Before != nil || c.After != nil || c.Field != journal.FieldAnnotation ||
					c.Embedded.BeforeSHA256 != journal.Digest(tt.annotations[keyLastApplied]) {
					t.Errorf("rewrite %s is not an embedded change of the live value", c)
				}
				after, _ := c.Value()
				if after != tt.wantAfter {
					t.Errorf("last-applied after:\n got %s\nwant %s", after, tt.wantAfter)
				}
				if !json.Valid([]byte(after)) {
					t.Errorf("last-applied after is not JSON: %s", after)
				}
			}
			if tt.wantNote == "" {
				if len(p.Notes) != 0 {
					t.Errorf("notes = %q, want none", p.Notes)
				}
			} else if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], tt.wantNote) {
				t.Errorf("notes = %q, want one containing %q", p.Notes, tt.wantNote)
			}
		})
	}
}
