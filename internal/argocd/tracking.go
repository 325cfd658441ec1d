package argocd

import "strings"

// Annotations Argo CD reads and writes on live objects.
const (
	// AnnotationTrackingID holds a TrackingID in the annotation tracking methods.
	AnnotationTrackingID = "argocd.argoproj.io/tracking-id"
	// AnnotationInstallationID names the Argo CD installation that applied the object.
	AnnotationInstallationID = "argocd.argoproj.io/installation-id"
	// AnnotationSyncOptions holds comma-separated sync options such as Prune=false.
	AnnotationSyncOptions = "argocd.argoproj.io/sync-options"
	// AnnotationCompareOptions holds comma-separated compare options such as IgnoreExtraneous.
	AnnotationCompareOptions = "argocd.argoproj.io/compare-options"
	// AnnotationRefresh on an Application asks the controller to refresh it.
	AnnotationRefresh = "argocd.argoproj.io/refresh"
	// AnnotationDeletionApproved approves deletions that Prune=confirm held back.
	AnnotationDeletionApproved = "argocd.argoproj.io/deletion-approved"
	// AnnotationLastAppliedConfiguration is kubectl's client-side apply record, which Argo CD
	// uses for diffs and which therefore still carries the tracking metadata after a detach.
	AnnotationLastAppliedConfiguration = "kubectl.kubernetes.io/last-applied-configuration"
)

// TrackingID is the value of the tracking-id annotation:
// <instance>:<group>/<Kind>:<namespace>/<name>.
type TrackingID struct {
	// Instance is the app instance name (see InstanceName).
	Instance string
	// Group is the API group; empty for the core group.
	Group string
	Kind  string
	// Namespace is the object's namespace; for cluster-scoped objects it holds the app's
	// destination namespace, or is empty.
	Namespace string
	Name      string
}

// ParseTrackingID parses a tracking-id the way Argo CD does, reporting false for anything
// Argo CD would reject; Argo CD then treats the object as untracked, so malformed ids are not
// errors. Only the first two colons separate fields, so the name may contain colons, as in
// "x:rbac.authorization.k8s.io/ClusterRole:/system:aggregate-to-admin".
func ParseTrackingID(s string) (TrackingID, bool) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return TrackingID{}, false
	}
	groupKind := strings.Split(parts[1], "/")
	if len(groupKind) != 2 {
		return TrackingID{}, false
	}
	namespaceName := strings.Split(parts[2], "/")
	if len(namespaceName) != 2 {
		return TrackingID{}, false
	}
	return TrackingID{
		Instance:  parts[0],
		Group:     groupKind[0],
		Kind:      groupKind[1],
		Namespace: namespaceName[0],
		Name:      namespaceName[1],
	}, true
}

// String formats the id as Argo CD writes it.
func (t TrackingID) String() string {
	return t.Instance + ":" + t.Group + "/" + t.Kind + ":" + t.Namespace + "/" + t.Name
}

// RefersTo reports whether the id names the object itself. Argo CD ignores a tracking-id
// naming another object, which is how copies of tracked objects (made with kubectl get -o yaml,
// say) escape pruning. The namespace slot is not compared for cluster-scoped objects because
// it holds the app's destination namespace there.
func (t TrackingID) RefersTo(o ObjectRef) bool {
	return t.Group == o.Group &&
		t.Kind == o.Kind &&
		t.Name == o.Name &&
		(o.isClusterScoped() || t.Namespace == o.Namespace)
}

// InstanceName is the app instance name Argo CD writes in tracking metadata: the app name
// for Applications in Argo CD's own namespace (controllerNamespace), else
// "<app-namespace>_<app-name>" so that same-named apps in different namespaces stay apart.
func InstanceName(appNamespace, appName, controllerNamespace string) string {
	if appNamespace == "" || appNamespace == controllerNamespace {
		return appName
	}
	return appNamespace + "_" + appName
}

// ObjectRef identifies a live object. Group is empty for the core group.
type ObjectRef struct {
	Group, Kind, Namespace, Name string
	// ClusterScoped marks cluster-scoped objects. An empty Namespace counts as cluster-scoped
	// too, as in Argo CD, which only looks at the live object's namespace.
	ClusterScoped bool
}

func (o ObjectRef) isClusterScoped() bool {
	return o.ClusterScoped || o.Namespace == ""
}

// String formats the object like kubectl's resource/name notation, with its namespace.
func (o ObjectRef) String() string {
	namespace := o.Namespace
	if o.ClusterScoped {
		namespace = ""
	}
	return describeObject(o.Group, o.Kind, namespace, o.Name)
}

func describeObject(group, kind, namespace, name string) string {
	resource := kind
	if group != "" {
		resource += "." + group
	}
	resource += "/" + name
	if namespace != "" {
		resource += " in namespace " + namespace
	}
	return resource
}

// installationIDRule is how a range of Argo CD releases treats the installation-id annotation.
type installationIDRule int

const (
	// installationIDIgnored: the annotation plays no part in tracking.
	installationIDIgnored installationIDRule = iota
	// installationIDMustEqual: an operator-precedence bug in getAppInstanceValue
	// (`installationID != "" && annotations == nil || annotations[id] != installationID`) makes the
	// object's annotation always have to equal the configured ID, both possibly empty: with no ID
	// configured, an object carrying any installation-id is ignored.
	installationIDMustEqual
	// installationIDMustEqualWhenConfigured: the fixed check, only when an ID is configured.
	installationIDMustEqualWhenConfigured
)

func (r installationIDRule) String() string {
	switch r {
	case installationIDMustEqual:
		return "must equal the configured ID, even when none is configured"
	case installationIDMustEqualWhenConfigured:
		return "must equal the configured ID when one is configured"
	}
	return "ignored"
}

// installationIDRuleOf is the rule release v follows: RuleInstallationIDWhenConfigured (v3.6 on),
// RuleInstallationIDMustEqual (from v2.11.12, v2.12.12 and v2.13.0 through v3.5.x; v2.12.7–v2.12.11
// write the annotation but never read it), else the annotation is ignored.
func installationIDRuleOf(v Version) installationIDRule {
	switch {
	case RuleInstallationIDWhenConfigured.Applies(v):
		return installationIDMustEqualWhenConfigured
	case RuleInstallationIDMustEqual.Applies(v):
		return installationIDMustEqual
	}
	return installationIDIgnored
}

func (r installationIDRule) matches(configured, onObject string) bool {
	switch r {
	case installationIDMustEqual:
		return onObject == configured
	case installationIDMustEqualWhenConfigured:
		return configured == "" || onObject == configured
	default:
		return true
	}
}

// InstallationIDMatches reports whether Argo CD lets the object's tracking-id count, given the
// installationID configured in argocd-cm and the object's installation-id annotation (empty
// when absent: Argo CD does not tell the two apart). version is nil when unknown.
//
// certain is false when the answer depends on the unknown version; matches is then true,
// meaning "might be tracked", because for unprune wrongly believing an object untracked is
// the costly mistake: Argo CD would go on to prune it.
func InstallationIDMatches(version *Version, configured, onObject string) (matches, certain bool) {
	if version != nil {
		return installationIDRuleOf(*version).matches(configured, onObject), true
	}
	rules := []installationIDRule{installationIDIgnored, installationIDMustEqual, installationIDMustEqualWhenConfigured}
	first := rules[0].matches(configured, onObject)
	for _, rule := range rules[1:] {
		if rule.matches(configured, onObject) != first {
			return true, false
		}
	}
	return first, true
}
