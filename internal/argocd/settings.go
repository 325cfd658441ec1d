package argocd

import (
	"fmt"
	"strings"
)

// Names of Argo CD's settings, all in the argocd-cm ConfigMap in Argo CD's own namespace.
const (
	ConfigMapName = "argocd-cm"

	SettingTrackingMethod   = "application.resourceTrackingMethod"
	SettingInstanceLabelKey = "application.instanceLabelKey"
	SettingInstallationID   = "installationID"
	// SettingResourceSelectors narrows the objects Argo CD watches by labels (v3.6+).
	SettingResourceSelectors = "resource.selectors"
)

// DefaultInstanceLabelKey is the label Argo CD tracks by when argocd-cm does not name another.
const DefaultInstanceLabelKey = "app.kubernetes.io/instance"

// LabelVersion is the label Argo CD's manifests and Helm chart put on the application
// controller, a fallback source for the version when the image tag does not carry one.
const LabelVersion = "app.kubernetes.io/version"

// Method is a resource tracking method, as spelled in argocd-cm.
type Method string

const (
	// MethodLabel tracks by the instance label alone.
	MethodLabel Method = "label"
	// MethodAnnotation tracks by the tracking-id annotation alone.
	MethodAnnotation Method = "annotation"
	// MethodAnnotationAndLabel tracks by the tracking-id annotation; Argo CD also writes the
	// instance label, but only for other tools to read.
	MethodAnnotationAndLabel Method = "annotation+label"
)

// ParseMethod accepts exactly the values Argo CD recognises. Argo CD does not trim or fold
// case, so neither does ParseMethod: " annotation" configures nothing in Argo CD either.
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case MethodLabel, MethodAnnotation, MethodAnnotationAndLabel:
		return m, nil
	default:
		return "", fmt.Errorf("unknown tracking method %q: want %s, %s or %s", s, MethodLabel, MethodAnnotation, MethodAnnotationAndLabel)
	}
}

// DefaultMethod is the method Argo CD uses when argocd-cm sets none: v3.0.0 switched from
// label to annotation tracking (RuleAnnotationDefault).
func DefaultMethod(v Version) Method {
	if RuleAnnotationDefault.Applies(v) {
		return MethodAnnotation
	}
	return MethodLabel
}

// Settings are the argocd-cm values, resolved against the Argo CD version, that decide how
// Argo CD tracks resources.
type Settings struct {
	// Method is the effective tracking method. It is empty when Ambiguous.
	Method Method
	// MethodConfigured is true when argocd-cm sets a valid method, so the version is irrelevant.
	MethodConfigured bool
	// Ambiguous is true when argocd-cm sets no valid method and the version is unknown: the
	// default could be either label (v2) or annotation (v3), so both are candidate tracking
	// metadata.
	Ambiguous bool
	// MethodSource explains, for humans, where Method came from.
	MethodSource string
	// InstanceLabelKey is the label key holding the app instance name.
	InstanceLabelKey string
	// InstallationID is argocd-cm's installationID; empty when unset.
	InstallationID string
	// Version is the Argo CD version; nil when unknown.
	Version *Version

	// skipsSelfReferenceCheck mirrors Argo CD v3 given an unrecognised method: it falls back to
	// reading the annotation, but its self-reference check sees no tracking-id and passes.
	skipsSelfReferenceCheck bool
}

// NewSettings resolves argocd-cm's data against the Argo CD version (nil when unknown).
// cmData may be nil, as when argocd-cm has no data.
func NewSettings(cmData map[string]string, version *Version) Settings {
	s := Settings{
		InstanceLabelKey: DefaultInstanceLabelKey,
		InstallationID:   cmData[SettingInstallationID],
	}
	// Argo CD treats an empty key the same as a missing one.
	if key := cmData[SettingInstanceLabelKey]; key != "" {
		s.InstanceLabelKey = key
	}
	if version != nil {
		// Copied so that later changes to the caller's Version cannot alter these settings.
		v := *version
		s.Version = &v
	}

	raw := cmData[SettingTrackingMethod]
	configured, err := ParseMethod(raw)
	switch {
	case err == nil:
		s.Method = configured
		s.MethodConfigured = true
		s.MethodSource = fmt.Sprintf("%s %s", ConfigMapName, SettingTrackingMethod)
	case version != nil:
		s.Method = DefaultMethod(*version)
		s.MethodSource = "default of Argo CD " + version.String()
		if raw != "" {
			s.MethodSource += fmt.Sprintf(" (%s %s %q is not a tracking method)", ConfigMapName, SettingTrackingMethod, raw)
			s.skipsSelfReferenceCheck = s.Method == MethodAnnotation
			if s.skipsSelfReferenceCheck {
				s.MethodSource += "; Argo CD then also skips its check that a tracking-id names the object itself"
			}
		}
	default:
		s.Ambiguous = true
		s.skipsSelfReferenceCheck = raw != ""
		unset := "tracking method unset in " + ConfigMapName
		if raw != "" {
			unset = fmt.Sprintf("%s %s %q is not a tracking method", ConfigMapName, SettingTrackingMethod, raw)
		}
		s.MethodSource = "unknown: " + unset + " and Argo CD version unknown; treating label and annotation as tracking"
	}
	return s
}

// ReadsLabel reports whether the instance label can make Argo CD track an object.
func (s Settings) ReadsLabel() bool {
	return s.Ambiguous || s.Method == MethodLabel
}

// ReadsAnnotation reports whether the tracking-id annotation can make Argo CD track an object.
func (s Settings) ReadsAnnotation() bool {
	return s.Ambiguous || s.Method == MethodAnnotation || s.Method == MethodAnnotationAndLabel
}

// WritesLabel reports whether Argo CD may have put the instance label on objects it applied,
// even where it does not read it back.
func (s Settings) WritesLabel() bool {
	return s.Ambiguous || s.Method == MethodLabel || s.Method == MethodAnnotationAndLabel
}

// WritesAnnotation reports whether Argo CD may have put the tracking-id annotation on objects
// it applied.
func (s Settings) WritesAnnotation() bool {
	return s.ReadsAnnotation()
}

// RulesLine says which release line the settings were resolved for and which of its
// version-dependent rules (Rules) unprune applied; empty when the version is unknown, which the
// backend already warns about.
func (s Settings) RulesLine() string {
	if s.Version == nil {
		return ""
	}
	rules := RulesOf(*s.Version)
	applied := "none of the version-dependent rules"
	if len(rules) > 0 {
		applied = "rules " + strings.Join(rules, ", ")
	}
	return fmt.Sprintf("Argo CD %s, release line v%d.%d: %s", s.Version, s.Version.Major, s.Version.Minor, applied)
}

// String summarises the settings for logs and --verbose output.
func (s Settings) String() string {
	method := string(s.Method)
	if s.Ambiguous {
		method = string(MethodLabel) + " or " + string(MethodAnnotation)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tracking method %s (%s), instance label key %s", method, s.MethodSource, s.InstanceLabelKey)
	if s.InstallationID != "" {
		fmt.Fprintf(&b, ", installation ID %q", s.InstallationID)
	}
	return b.String()
}
