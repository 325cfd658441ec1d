package argocd

import (
	"slices"
	"strings"
	"testing"
)

func fieldKeys(fields []Field) []string {
	var keys []string
	for _, f := range fields {
		keys = append(keys, string(f.Kind)+" "+f.Key)
	}
	return keys
}

func TestOwner(t *testing.T) {
	const (
		instanceLabel  = "label " + DefaultInstanceLabelKey
		trackingID     = "annotation " + AnnotationTrackingID
		installationID = "annotation " + AnnotationInstallationID
	)
	ui := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	uiID := "guestbook:apps/Deployment:guestbook/ui"
	kubeSystem := ObjectRef{Kind: "Namespace", Name: "kube-system", ClusterScoped: true}

	labelMode := NewSettings(map[string]string{SettingTrackingMethod: "label"}, versionPtr(3, 6, 1))
	annotationMode := NewSettings(map[string]string{SettingTrackingMethod: "annotation"}, versionPtr(3, 6, 1))
	annotationAndLabel := NewSettings(map[string]string{SettingTrackingMethod: "annotation+label"}, versionPtr(3, 6, 1))
	ambiguous := NewSettings(nil, nil)

	tests := []struct {
		name        string
		settings    Settings
		labels      map[string]string
		annotations map[string]string
		object      ObjectRef

		wantInstance      string
		wantTracked       bool
		wantCertain       bool
		wantReason        Reason
		wantDetail        string // substring
		trackedBy         []string
		wantFieldsFor     []string // FieldsFor(first of trackedBy, else "guestbook")
		wantInformational []string
	}{
		{
			name:          "label mode reads the label",
			settings:      labelMode,
			labels:        map[string]string{DefaultInstanceLabelKey: "guestbook"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			wantDetail:    `label app.kubernetes.io/instance="guestbook"`,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{instanceLabel},
		},
		{
			name:              "label mode ignores the annotation",
			settings:          labelMode,
			annotations:       map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "prod"},
			object:            ui,
			wantCertain:       true,
			wantReason:        ReasonNoTrackingMetadata,
			wantDetail:        "no label app.kubernetes.io/instance",
			wantInformational: []string{trackingID, installationID},
		},
		{
			name:              "label mode has no self-reference check",
			settings:          labelMode,
			labels:            map[string]string{DefaultInstanceLabelKey: "guestbook"},
			annotations:       map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/api"},
			object:            ui,
			wantInstance:      "guestbook",
			wantTracked:       true,
			wantCertain:       true,
			wantReason:        ReasonTracked,
			trackedBy:         []string{"guestbook"},
			wantFieldsFor:     []string{instanceLabel},
			wantInformational: []string{trackingID},
		},
		{
			name:        "label mode: empty label is untracked",
			settings:    labelMode,
			labels:      map[string]string{DefaultInstanceLabelKey: ""},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonNoTrackingMetadata,
		},
		{
			name: "label mode with instance label key override",
			settings: NewSettings(map[string]string{
				SettingTrackingMethod:   "label",
				SettingInstanceLabelKey: "argocd.argoproj.io/instance",
			}, nil),
			labels:        map[string]string{DefaultInstanceLabelKey: "helm-release", "argocd.argoproj.io/instance": "guestbook"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{"label argocd.argoproj.io/instance"},
		},
		{
			name:        "part-of is never a tracking key",
			settings:    labelMode,
			labels:      map[string]string{"app.kubernetes.io/part-of": "guestbook"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonNoTrackingMetadata,
		},
		{
			name:              "annotation mode reads the tracking-id",
			settings:          annotationMode,
			labels:            map[string]string{DefaultInstanceLabelKey: "guestbook"},
			annotations:       map[string]string{AnnotationTrackingID: uiID},
			object:            ui,
			wantInstance:      "guestbook",
			wantTracked:       true,
			wantCertain:       true,
			wantReason:        ReasonTracked,
			trackedBy:         []string{"guestbook"},
			wantFieldsFor:     []string{trackingID},
			wantInformational: []string{instanceLabel},
		},
		{
			name:              "annotation mode ignores the label",
			settings:          annotationMode,
			labels:            map[string]string{DefaultInstanceLabelKey: "guestbook"},
			object:            ui,
			wantCertain:       true,
			wantReason:        ReasonNoTrackingMetadata,
			wantDetail:        "no annotation argocd.argoproj.io/tracking-id",
			wantInformational: []string{instanceLabel},
		},
		{
			name:              "annotation+label reads only the annotation",
			settings:          annotationAndLabel,
			labels:            map[string]string{DefaultInstanceLabelKey: "other"},
			annotations:       map[string]string{AnnotationTrackingID: uiID},
			object:            ui,
			wantInstance:      "guestbook",
			wantTracked:       true,
			wantCertain:       true,
			wantReason:        ReasonTracked,
			trackedBy:         []string{"guestbook"},
			wantFieldsFor:     []string{trackingID},
			wantInformational: []string{instanceLabel},
		},
		{
			name:              "annotation+label: label alone is untracked",
			settings:          annotationAndLabel,
			labels:            map[string]string{DefaultInstanceLabelKey: "guestbook"},
			object:            ui,
			wantCertain:       true,
			wantReason:        ReasonNoTrackingMetadata,
			wantInformational: []string{instanceLabel},
		},
		{
			name:        "malformed tracking-id",
			settings:    annotationMode,
			annotations: map[string]string{AnnotationTrackingID: "guestbook"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonMalformedTrackingID,
			wantDetail:  "is malformed",
		},
		{
			name:        "tracking-id naming another object",
			settings:    annotationMode,
			annotations: map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/api"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonTrackingIDNamesOtherObject,
			wantDetail:  "names Deployment.apps/api in namespace guestbook, not this object",
		},
		{
			name:          "cluster-scoped object with destination namespace in the slot",
			settings:      annotationMode,
			annotations:   map[string]string{AnnotationTrackingID: "feas:/Namespace:default/kube-system"},
			object:        kubeSystem,
			wantInstance:  "feas",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"feas"},
			wantFieldsFor: []string{trackingID},
		},
		{
			name:          "unknown method on v3 skips the self-reference check",
			settings:      NewSettings(map[string]string{SettingTrackingMethod: "annotations"}, versionPtr(3, 6, 1)),
			annotations:   map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/api"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID},
		},
		{
			name:          "v2.12.6 ignores installation-id",
			settings:      NewSettings(map[string]string{SettingTrackingMethod: "annotation"}, versionPtr(2, 12, 6)),
			annotations:   map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "other"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID, installationID},
		},
		{
			name:        "v2.14.11 without configured ID ignores objects carrying one",
			settings:    NewSettings(map[string]string{SettingTrackingMethod: "annotation"}, versionPtr(2, 14, 11)),
			annotations: map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "other"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonInstallationIDMismatch,
			wantDetail:  `annotation argocd.argoproj.io/installation-id="other" while argocd-cm sets no installationID; Argo CD v2.14.11`,
		},
		{
			name:          "v3.6.1 without configured ID tracks objects carrying one",
			settings:      annotationMode,
			annotations:   map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "other"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID, installationID},
		},
		{
			name:         "v2.14.11 configured ID mismatch",
			settings:     NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(2, 14, 11)),
			labels:       map[string]string{DefaultInstanceLabelKey: "guestbook"},
			annotations:  map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "staging"},
			object:       ui,
			wantInstance: "guestbook",
			wantTracked:  true,
			wantCertain:  true,
			wantReason:   ReasonTracked,
			// v2.14.11 defaults to label tracking, where the installation-id plays no part.
			trackedBy:         []string{"guestbook"},
			wantFieldsFor:     []string{instanceLabel},
			wantInformational: []string{trackingID, installationID},
		},
		{
			name:        "v2.14.11 annotation mode, configured ID mismatch",
			settings:    NewSettings(map[string]string{SettingTrackingMethod: "annotation", SettingInstallationID: "prod"}, versionPtr(2, 14, 11)),
			annotations: map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "staging"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonInstallationIDMismatch,
			wantDetail:  `but argocd-cm installationID is "prod"`,
		},
		{
			name:        "v3.6.1 configured ID mismatch",
			settings:    NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(3, 6, 1)),
			annotations: map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "staging"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonInstallationIDMismatch,
		},
		{
			name:        "v3.6.1 configured ID, object has none",
			settings:    NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(3, 6, 1)),
			annotations: map[string]string{AnnotationTrackingID: uiID},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonInstallationIDMismatch,
		},
		{
			name:          "v3.6.1 configured ID matches",
			settings:      NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(3, 6, 1)),
			annotations:   map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "prod"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID, installationID},
		},
		{
			name:          "unknown version: installation-id makes tracking uncertain",
			settings:      NewSettings(map[string]string{SettingTrackingMethod: "annotation"}, nil),
			annotations:   map[string]string{AnnotationTrackingID: uiID, AnnotationInstallationID: "other"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantReason:    ReasonTracked,
			wantDetail:    "depends on its version, which is unknown",
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID, installationID},
		},
		{
			name:          "ambiguous: label and annotation agree",
			settings:      ambiguous,
			labels:        map[string]string{DefaultInstanceLabelKey: "guestbook"},
			annotations:   map[string]string{AnnotationTrackingID: uiID},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantCertain:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{instanceLabel, trackingID},
		},
		{
			name:          "ambiguous: label only",
			settings:      ambiguous,
			labels:        map[string]string{DefaultInstanceLabelKey: "guestbook"},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantReason:    ReasonTracked,
			wantDetail:    "Argo CD reads only one of these",
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{instanceLabel},
		},
		{
			name:          "ambiguous: annotation only",
			settings:      ambiguous,
			annotations:   map[string]string{AnnotationTrackingID: uiID},
			object:        ui,
			wantInstance:  "guestbook",
			wantTracked:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook"},
			wantFieldsFor: []string{trackingID},
		},
		{
			name:          "ambiguous: label and annotation disagree",
			settings:      ambiguous,
			labels:        map[string]string{DefaultInstanceLabelKey: "guestbook"},
			annotations:   map[string]string{AnnotationTrackingID: "other:apps/Deployment:guestbook/ui"},
			object:        ui,
			wantTracked:   true,
			wantReason:    ReasonTracked,
			trackedBy:     []string{"guestbook", "other"},
			wantFieldsFor: []string{instanceLabel},
		},
		{
			name:        "ambiguous: nothing",
			settings:    ambiguous,
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonNoTrackingMetadata,
			wantDetail:  "no label app.kubernetes.io/instance; no annotation argocd.argoproj.io/tracking-id",
		},
		{
			name:        "ambiguous: copied annotation, no label",
			settings:    ambiguous,
			annotations: map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/api"},
			object:      ui,
			wantCertain: true,
			wantReason:  ReasonTrackingIDNamesOtherObject,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			own := tt.settings.Owner(tt.labels, tt.annotations, tt.object)
			if own.Instance != tt.wantInstance || own.Tracked != tt.wantTracked || own.Certain != tt.wantCertain || own.Reason != tt.wantReason {
				t.Fatalf("Owner() = instance %q tracked %v certain %v reason %s; want %q %v %v %s\ndetail: %s",
					own.Instance, own.Tracked, own.Certain, own.Reason,
					tt.wantInstance, tt.wantTracked, tt.wantCertain, tt.wantReason, own.Detail)
			}
			if !strings.Contains(own.Detail, tt.wantDetail) {
				t.Fatalf("Detail = %q, want it to contain %q", own.Detail, tt.wantDetail)
			}
			for _, instance := range tt.trackedBy {
				if !own.TrackedBy(instance) {
					t.Fatalf("TrackedBy(%q) = false, want true", instance)
				}
				if refusal := own.Refusal(instance); refusal != "" {
					t.Fatalf("Refusal(%q) = %q, want none", instance, refusal)
				}
			}
			for _, instance := range []string{"guestbook", "feas", "other", ""} {
				if !slices.Contains(tt.trackedBy, instance) && own.TrackedBy(instance) {
					t.Fatalf("TrackedBy(%q) = true, want false", instance)
				}
			}
			forInstance := "guestbook"
			if len(tt.trackedBy) > 0 {
				forInstance = tt.trackedBy[0]
			}
			if got := fieldKeys(own.FieldsFor(forInstance)); !slices.Equal(got, tt.wantFieldsFor) {
				t.Fatalf("FieldsFor(%q) = %q, want %q", forInstance, got, tt.wantFieldsFor)
			}
			if got := fieldKeys(own.Informational); !slices.Equal(got, tt.wantInformational) {
				t.Fatalf("Informational = %q, want %q", got, tt.wantInformational)
			}
		})
	}
}

func TestOwnerFieldValues(t *testing.T) {
	s := NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(3, 6, 1))
	annotations := map[string]string{
		AnnotationTrackingID:     "guestbook:/Service:guestbook/ui",
		AnnotationInstallationID: "prod",
		"unrelated":              "x",
	}
	own := s.Owner(nil, annotations, ObjectRef{Kind: "Service", Namespace: "guestbook", Name: "ui"})
	want := []Field{
		{Kind: FieldAnnotation, Key: AnnotationTrackingID, Value: "guestbook:/Service:guestbook/ui"},
		{Kind: FieldAnnotation, Key: AnnotationInstallationID, Value: "prod"},
	}
	if got := own.FieldsFor("guestbook"); !slices.Equal(got, want) {
		t.Fatalf("FieldsFor() = %v, want %v", got, want)
	}
	if own.Claims[0].ID == nil || own.Claims[0].ID.Name != "ui" {
		t.Fatalf("Claims[0].ID = %v, want the parsed tracking-id", own.Claims[0].ID)
	}
}

func TestOwnershipRefusal(t *testing.T) {
	ui := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "ui"}
	annotationMode := NewSettings(nil, versionPtr(3, 6, 1))
	tests := []struct {
		name        string
		settings    Settings
		labels      map[string]string
		annotations map[string]string
		want        string
	}{
		{
			name:        "tracked by another instance",
			settings:    annotationMode,
			annotations: map[string]string{AnnotationTrackingID: "team_other:apps/Deployment:guestbook/ui"},
			want:        `tracked by app instance "team_other" (annotation argocd.argoproj.io/tracking-id="team_other:apps/Deployment:guestbook/ui"), not by "guestbook"`,
		},
		{
			name:        "copied object",
			settings:    annotationMode,
			annotations: map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/api"},
			want:        `not tracked by Argo CD: annotation argocd.argoproj.io/tracking-id="guestbook:apps/Deployment:guestbook/api" names Deployment.apps/api in namespace guestbook, not this object (copied metadata?), so Argo CD ignores it`,
		},
		{
			name:     "untracked",
			settings: annotationMode,
			labels:   map[string]string{DefaultInstanceLabelKey: "guestbook"},
			want:     "not tracked by Argo CD: no annotation argocd.argoproj.io/tracking-id",
		},
		{
			name:        "installation-id mismatch",
			settings:    NewSettings(map[string]string{SettingInstallationID: "prod"}, versionPtr(3, 6, 1)),
			annotations: map[string]string{AnnotationTrackingID: "guestbook:apps/Deployment:guestbook/ui", AnnotationInstallationID: "staging"},
			want:        `not tracked by Argo CD: annotation argocd.argoproj.io/installation-id="staging" but argocd-cm installationID is "prod"; Argo CD v3.6.1 ignores objects of other installations`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			own := tt.settings.Owner(tt.labels, tt.annotations, ui)
			if got := own.Refusal("guestbook"); got != tt.want {
				t.Fatalf("Refusal() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
