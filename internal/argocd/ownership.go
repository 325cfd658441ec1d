package argocd

import (
	"fmt"
	"strings"
)

// FieldKind tells labels from annotations, which callers patch differently.
type FieldKind string

const (
	FieldLabel      FieldKind = "label"
	FieldAnnotation FieldKind = "annotation"
)

// Field is one label or annotation of a live object. Its value is kept so that callers can
// show it and make their patch conditional on it still being there.
type Field struct {
	Kind  FieldKind
	Key   string
	Value string
}

func (f Field) String() string {
	return fmt.Sprintf("%s %s=%q", f.Kind, f.Key, f.Value)
}

// Reason classifies why Argo CD does or does not track an object through some metadata.
type Reason string

const (
	// ReasonTracked: Argo CD tracks the object (or may, when not certain).
	ReasonTracked Reason = "Tracked"
	// ReasonNoTrackingMetadata: the label or annotation Argo CD reads is absent or empty.
	ReasonNoTrackingMetadata Reason = "NoTrackingMetadata"
	// ReasonMalformedTrackingID: the tracking-id does not parse, so Argo CD ignores it.
	ReasonMalformedTrackingID Reason = "MalformedTrackingID"
	// ReasonTrackingIDNamesOtherObject: the tracking-id names another object, as happens when
	// a tracked object is copied; Argo CD neither prunes nor counts such an object.
	ReasonTrackingIDNamesOtherObject Reason = "TrackingIDNamesOtherObject"
	// ReasonInstallationIDMismatch: the installation-id annotation does not satisfy the rule
	// of this Argo CD version, so Argo CD ignores the tracking-id.
	ReasonInstallationIDMismatch Reason = "InstallationIDMismatch"
	// ReasonEmptyInstance: the tracking-id names no app (":apps/Deployment:ns/x"); Argo CD's
	// GetAppName then returns "" and the object belongs to no app.
	ReasonEmptyInstance Reason = "EmptyInstance"
)

// Claim is what one kind of tracking metadata (the instance label, or the tracking-id
// annotation) says about an object, and whether Argo CD honours it.
type Claim struct {
	// Via is the kind of metadata: FieldLabel for the instance label, FieldAnnotation for the
	// tracking-id.
	Via FieldKind
	// Instance is the app instance the metadata names, even when Argo CD ignores it; empty
	// when there is none or the tracking-id is malformed.
	Instance string
	// ID is the parsed tracking-id; nil for label claims and malformed or absent ids.
	ID *TrackingID
	// Fields are the object's labels or annotations that make up the claim: removing them all
	// withdraws it. For the annotation this includes the installation-id annotation, which
	// Argo CD removes together with the tracking-id.
	Fields []Field
	// Tracks is true when Argo CD tracks the object through this claim, or might (Certain
	// false), provided it reads this kind of metadata at all.
	Tracks bool
	// Certain is false when Tracks depends on the unknown Argo CD version.
	Certain bool
	Reason  Reason
	// Detail explains the claim for humans.
	Detail string
}

// Ownership is Argo CD's view of which app instance owns an object.
type Ownership struct {
	// Instance is the owning app instance; empty when untracked or when candidate claims name
	// different instances.
	Instance string
	// Tracked is true when some claim Argo CD reads (or may read) tracks the object.
	Tracked bool
	// Certain is false when the answer depends on facts the settings lack: which method an
	// ambiguous configuration means, or how an unknown version treats the installation-id.
	Certain bool
	// Reason is ReasonTracked when Tracked, else the most specific reason a claim gives.
	Reason Reason
	// Detail explains the outcome for humans.
	Detail string
	// Claims are the claims Argo CD reads under the settings: one, or two when the method is
	// ambiguous (label first).
	Claims []Claim
	// Informational are tracking fields present on the object that Argo CD does not read under
	// the settings, such as the label it writes in annotation+label mode. Removing them does
	// not change tracking; leaving them does not either.
	Informational []Field
}

// Owner tells which app instance Argo CD, under these settings, considers the owner of an
// object with these labels and annotations, and why none when it considers none. It does not
// look at ownerReferences: objects with owners are never top-level managed objects, which
// callers check first.
func (s Settings) Owner(labels, annotations map[string]string, o ObjectRef) Ownership {
	var own Ownership
	if s.ReadsLabel() {
		own.Claims = append(own.Claims, s.labelClaim(labels))
	} else if value, ok := labels[s.InstanceLabelKey]; ok {
		own.Informational = append(own.Informational, Field{Kind: FieldLabel, Key: s.InstanceLabelKey, Value: value})
	}
	if s.ReadsAnnotation() {
		own.Claims = append(own.Claims, s.annotationClaim(annotations, o))
	} else {
		for _, key := range []string{AnnotationTrackingID, AnnotationInstallationID} {
			if value, ok := annotations[key]; ok {
				own.Informational = append(own.Informational, Field{Kind: FieldAnnotation, Key: key, Value: value})
			}
		}
	}
	own.summarise()
	return own
}

// CascadeOwner is the ownership Argo CD's cluster cache gives an object (util/argo
// resource_tracking.go GetAppName, read by controller/cache/cache.go GetManagedLiveObjs): the
// instance its tracking names, without the self-reference check that only sync status applies.
// An app's cascade deletes every top-level object it names, copies whose tracking-id names another
// object included.
func (s Settings) CascadeOwner(labels, annotations map[string]string) Ownership {
	s.skipsSelfReferenceCheck = true
	return s.Owner(labels, annotations, ObjectRef{})
}

func (s Settings) labelClaim(labels map[string]string) Claim {
	claim := Claim{Via: FieldLabel, Certain: true}
	value := labels[s.InstanceLabelKey]
	if value == "" {
		claim.Reason = ReasonNoTrackingMetadata
		claim.Detail = fmt.Sprintf("no label %s", s.InstanceLabelKey)
		return claim
	}
	field := Field{Kind: FieldLabel, Key: s.InstanceLabelKey, Value: value}
	claim.Instance = value
	claim.Fields = []Field{field}
	claim.Tracks = true
	claim.Reason = ReasonTracked
	claim.Detail = field.String()
	return claim
}

func (s Settings) annotationClaim(annotations map[string]string, o ObjectRef) Claim {
	claim := Claim{Via: FieldAnnotation, Certain: true}
	value := annotations[AnnotationTrackingID]
	if value == "" {
		claim.Reason = ReasonNoTrackingMetadata
		claim.Detail = fmt.Sprintf("no annotation %s", AnnotationTrackingID)
		return claim
	}
	trackingField := Field{Kind: FieldAnnotation, Key: AnnotationTrackingID, Value: value}
	claim.Fields = []Field{trackingField}
	installationID, hasInstallationID := annotations[AnnotationInstallationID]
	if hasInstallationID {
		claim.Fields = append(claim.Fields, Field{Kind: FieldAnnotation, Key: AnnotationInstallationID, Value: installationID})
	}

	// Parsed before the installation-id check, although Argo CD checks that first, so that a
	// refusal can still name the instance the object belongs to.
	id, wellFormed := ParseTrackingID(value)
	if wellFormed {
		claim.ID = &id
		claim.Instance = id.Instance
	}

	matches, certain := InstallationIDMatches(s.Version, s.InstallationID, installationID)
	if !matches {
		claim.Reason = ReasonInstallationIDMismatch
		claim.Detail = s.installationIDMismatchDetail(installationID)
		return claim
	}
	claim.Certain = certain
	if wellFormed && id.Instance == "" {
		claim.Reason = ReasonEmptyInstance
		claim.Detail = fmt.Sprintf("%s names no app, so Argo CD ignores it", trackingField)
		return claim
	}
	if !wellFormed {
		claim.Reason = ReasonMalformedTrackingID
		claim.Detail = fmt.Sprintf("%s is malformed (want <instance>:<group>/<kind>:<namespace>/<name>), so Argo CD ignores it", trackingField)
		return claim
	}
	if !s.skipsSelfReferenceCheck && !id.RefersTo(o) {
		claim.Reason = ReasonTrackingIDNamesOtherObject
		claim.Detail = fmt.Sprintf("%s names %s, not this object (copied metadata?), so Argo CD ignores it",
			trackingField, describeObject(id.Group, id.Kind, id.Namespace, id.Name))
		return claim
	}
	claim.Tracks = true
	claim.Reason = ReasonTracked
	claim.Detail = trackingField.String()
	if !certain {
		claim.Detail += fmt.Sprintf("; whether Argo CD honours it despite annotation %s=%q depends on its version, which is unknown",
			AnnotationInstallationID, installationID)
	}
	return claim
}

func (s Settings) installationIDMismatchDetail(onObject string) string {
	version := "this Argo CD version"
	if s.Version != nil {
		version = "Argo CD " + s.Version.String()
	}
	if s.InstallationID == "" {
		return fmt.Sprintf("annotation %s=%q while %s sets no %s; %s (installation-id %s) then ignores the object",
			AnnotationInstallationID, onObject, ConfigMapName, SettingInstallationID, version, s.installationIDRule())
	}
	return fmt.Sprintf("annotation %s=%q but %s %s is %q; %s ignores objects of other installations",
		AnnotationInstallationID, onObject, ConfigMapName, SettingInstallationID, s.InstallationID, version)
}

func (s Settings) installationIDRule() installationIDRule {
	if s.Version == nil {
		return installationIDMustEqual
	}
	return installationIDRuleOf(*s.Version)
}

func (own *Ownership) summarise() {
	own.Certain = true
	own.Reason = ReasonNoTrackingMetadata
	instances := map[string]bool{}
	for _, claim := range own.Claims {
		if !claim.Certain {
			own.Certain = false
		}
		if claim.Tracks {
			own.Tracked = true
			instances[claim.Instance] = true
			own.Instance = claim.Instance
		} else if own.Reason == ReasonNoTrackingMetadata {
			own.Reason = claim.Reason
		}
	}
	if len(instances) > 1 {
		own.Instance = ""
	}
	if own.Tracked {
		own.Reason = ReasonTracked
	}

	details := make([]string, 0, len(own.Claims)+1)
	for _, claim := range own.Claims {
		details = append(details, claim.Detail)
	}
	if len(own.Claims) > 1 && !claimsAgree(own.Claims) {
		// Only one of the claims is real, and the settings cannot say which.
		own.Certain = false
		details = append(details, "Argo CD reads only one of these, depending on its version, which is unknown")
	}
	own.Detail = strings.Join(details, "; ")
}

func claimsAgree(claims []Claim) bool {
	for _, claim := range claims[1:] {
		if claim.Tracks != claims[0].Tracks || (claim.Tracks && claim.Instance != claims[0].Instance) {
			return false
		}
	}
	return true
}

// TrackedBy reports whether Argo CD tracks, or might track, the object as part of the app
// instance. "Might" covers the ambiguous cases; check Certain to tell them apart.
func (own Ownership) TrackedBy(instance string) bool {
	for _, claim := range own.Claims {
		if claim.Tracks && claim.Instance == instance {
			return true
		}
	}
	return false
}

// FieldsFor lists the fields that make Argo CD track the object for the app instance:
// removing all of them detaches the object from it. Claims for other instances are left out,
// so that detaching never takes an object away from another app.
func (own Ownership) FieldsFor(instance string) []Field {
	var fields []Field
	for _, claim := range own.Claims {
		if claim.Tracks && claim.Instance == instance {
			fields = append(fields, claim.Fields...)
		}
	}
	return fields
}

// Refusal explains why the object cannot be treated as tracked by the app instance; it is
// empty when TrackedBy(instance).
func (own Ownership) Refusal(instance string) string {
	if own.TrackedBy(instance) {
		return ""
	}
	var others []string
	for _, claim := range own.Claims {
		if claim.Tracks {
			others = append(others, fmt.Sprintf("app instance %q (%s)", claim.Instance, claim.Detail))
		}
	}
	if len(others) > 0 {
		return fmt.Sprintf("tracked by %s, not by %q", strings.Join(others, " or "), instance)
	}
	return fmt.Sprintf("not tracked by Argo CD: %s", own.Detail)
}
