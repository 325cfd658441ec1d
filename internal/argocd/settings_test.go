package argocd

import (
	"strings"
	"testing"
)

func versionPtr(major, minor, patch int) *Version {
	return &Version{Major: major, Minor: minor, Patch: patch}
}

func TestNewSettingsMethod(t *testing.T) {
	tests := []struct {
		name           string
		cm             map[string]string
		version        *Version
		wantMethod     Method
		wantConfigured bool
		wantAmbiguous  bool
		wantSource     string
		wantSkipSelf   bool
	}{
		{
			name:           "configured label on v3",
			cm:             map[string]string{SettingTrackingMethod: "label"},
			version:        versionPtr(3, 6, 1),
			wantMethod:     MethodLabel,
			wantConfigured: true,
			wantSource:     "argocd-cm application.resourceTrackingMethod",
		},
		{
			name:           "configured annotation+label with unknown version",
			cm:             map[string]string{SettingTrackingMethod: "annotation+label"},
			wantMethod:     MethodAnnotationAndLabel,
			wantConfigured: true,
			wantSource:     "argocd-cm application.resourceTrackingMethod",
		},
		{
			name:       "unset on v2 defaults to label",
			version:    versionPtr(2, 14, 11),
			wantMethod: MethodLabel,
			wantSource: "default of Argo CD v2.14.11",
		},
		{
			name:       "empty on v3 defaults to annotation",
			cm:         map[string]string{SettingTrackingMethod: ""},
			version:    versionPtr(3, 6, 1),
			wantMethod: MethodAnnotation,
			wantSource: "default of Argo CD v3.6.1",
		},
		{
			name:       "v3.0.0 is the first annotation default",
			version:    versionPtr(3, 0, 0),
			wantMethod: MethodAnnotation,
			wantSource: "default of Argo CD v3.0.0",
		},
		{
			name:       "unknown value on v2 falls back to label",
			cm:         map[string]string{SettingTrackingMethod: "Annotation"},
			version:    versionPtr(2, 14, 11),
			wantMethod: MethodLabel,
			wantSource: `default of Argo CD v2.14.11 (argocd-cm application.resourceTrackingMethod "Annotation" is not a tracking method)`,
		},
		{
			name:         "unknown value on v3 falls back to annotation without self-reference check",
			cm:           map[string]string{SettingTrackingMethod: "foo"},
			version:      versionPtr(3, 6, 1),
			wantMethod:   MethodAnnotation,
			wantSource:   `default of Argo CD v3.6.1 (argocd-cm application.resourceTrackingMethod "foo" is not a tracking method); Argo CD then also skips`,
			wantSkipSelf: true,
		},
		{
			name:          "unset with unknown version is ambiguous",
			cm:            map[string]string{},
			wantAmbiguous: true,
			wantSource:    "unknown: tracking method unset in argocd-cm and Argo CD version unknown; treating label and annotation as tracking",
		},
		{
			name:          "nil data with unknown version is ambiguous",
			wantAmbiguous: true,
			wantSource:    "unknown: tracking method unset in argocd-cm",
		},
		{
			name:          "unknown value with unknown version is ambiguous",
			cm:            map[string]string{SettingTrackingMethod: " annotation"},
			wantAmbiguous: true,
			wantSource:    `unknown: argocd-cm application.resourceTrackingMethod " annotation" is not a tracking method and Argo CD version unknown`,
			wantSkipSelf:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSettings(tt.cm, tt.version)
			if s.Method != tt.wantMethod || s.MethodConfigured != tt.wantConfigured || s.Ambiguous != tt.wantAmbiguous {
				t.Fatalf("got method %q configured %v ambiguous %v; want %q %v %v",
					s.Method, s.MethodConfigured, s.Ambiguous, tt.wantMethod, tt.wantConfigured, tt.wantAmbiguous)
			}
			if !strings.HasPrefix(s.MethodSource, tt.wantSource) {
				t.Fatalf("MethodSource = %q, want prefix %q", s.MethodSource, tt.wantSource)
			}
			if s.skipsSelfReferenceCheck != tt.wantSkipSelf {
				t.Fatalf("skipsSelfReferenceCheck = %v, want %v", s.skipsSelfReferenceCheck, tt.wantSkipSelf)
			}
		})
	}
}

func TestNewSettingsKeys(t *testing.T) {
	tests := []struct {
		name               string
		cm                 map[string]string
		wantLabelKey       string
		wantInstallationID string
	}{
		{name: "defaults", wantLabelKey: DefaultInstanceLabelKey},
		{name: "empty label key means default", cm: map[string]string{SettingInstanceLabelKey: ""}, wantLabelKey: DefaultInstanceLabelKey},
		{name: "label key override", cm: map[string]string{SettingInstanceLabelKey: "argocd.argoproj.io/instance"}, wantLabelKey: "argocd.argoproj.io/instance"},
		{name: "installation ID", cm: map[string]string{SettingInstallationID: "prod"}, wantLabelKey: DefaultInstanceLabelKey, wantInstallationID: "prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSettings(tt.cm, nil)
			if s.InstanceLabelKey != tt.wantLabelKey || s.InstallationID != tt.wantInstallationID {
				t.Fatalf("got label key %q installation ID %q; want %q %q", s.InstanceLabelKey, s.InstallationID, tt.wantLabelKey, tt.wantInstallationID)
			}
		})
	}
}

func TestNewSettingsCopiesVersion(t *testing.T) {
	v := Version{3, 6, 1}
	s := NewSettings(nil, &v)
	v.Major = 2
	if s.Version == nil || *s.Version != (Version{3, 6, 1}) {
		t.Fatalf("Version = %v, want v3.6.1 unaffected by the caller", s.Version)
	}
}

func TestSettingsReadsWrites(t *testing.T) {
	tests := []struct {
		name                                                       string
		settings                                                   Settings
		readsLabel, readsAnnotation, writesLabel, writesAnnotation bool
	}{
		{name: "label", settings: Settings{Method: MethodLabel}, readsLabel: true, writesLabel: true},
		{name: "annotation", settings: Settings{Method: MethodAnnotation}, readsAnnotation: true, writesAnnotation: true},
		{name: "annotation+label", settings: Settings{Method: MethodAnnotationAndLabel}, readsAnnotation: true, writesLabel: true, writesAnnotation: true},
		{name: "ambiguous", settings: Settings{Ambiguous: true}, readsLabel: true, readsAnnotation: true, writesLabel: true, writesAnnotation: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.settings
			got := [4]bool{s.ReadsLabel(), s.ReadsAnnotation(), s.WritesLabel(), s.WritesAnnotation()}
			want := [4]bool{tt.readsLabel, tt.readsAnnotation, tt.writesLabel, tt.writesAnnotation}
			if got != want {
				t.Fatalf("ReadsLabel, ReadsAnnotation, WritesLabel, WritesAnnotation = %v, want %v", got, want)
			}
		})
	}
}

func TestParseMethod(t *testing.T) {
	for _, valid := range []string{"label", "annotation", "annotation+label"} {
		if m, err := ParseMethod(valid); err != nil || string(m) != valid {
			t.Errorf("ParseMethod(%q) = %q, %v", valid, m, err)
		}
	}
	for _, invalid := range []string{"", "Label", "annotation ", "label+annotation"} {
		if _, err := ParseMethod(invalid); err == nil {
			t.Errorf("ParseMethod(%q) succeeded, want error", invalid)
		}
	}
}

func TestSettingsString(t *testing.T) {
	s := NewSettings(map[string]string{SettingInstallationID: "prod"}, nil)
	want := `tracking method label or annotation (unknown: tracking method unset in argocd-cm and Argo CD version unknown; treating label and annotation as tracking), instance label key app.kubernetes.io/instance, installation ID "prod"`
	if got := s.String(); got != want {
		t.Fatalf("String() =\n%s\nwant\n%s", got, want)
	}
}
