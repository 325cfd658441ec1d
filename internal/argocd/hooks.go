package argocd

import "slices"

// Annotations that make an object a hook.
const (
	AnnotationHook     = "argocd.argoproj.io/hook"
	AnnotationHelmHook = "helm.sh/hook"
)

// hookTypes are the values of argocd.argoproj.io/hook gitops-engine recognises
// (pkg/sync/common.NewHookType) plus the controller's own PreDelete and PostDelete.
var hookTypes = map[string]bool{
	"PreSync": true, "Sync": true, "PostSync": true, "SyncFail": true, "Skip": true,
	"PreDelete": true, "PostDelete": true,
}

// IsHook reports whether Argo CD treats an object with these annotations as a hook, mirroring
// gitops-engine's pkg/sync/hook.IsHook: an argocd.argoproj.io/hook annotation makes it a hook unless
// Skip is its only recognised type (Skip only tells Argo CD not to apply the manifest); without that
// annotation, helm.sh/hook does, except crd-install (Helm marks CRDs that way, and they are not hooks).
//
// The app's status row (Resource.Hook) is the authority; this reads the live object when there is
// no row, as for objects named with --force.
func IsHook(annotations map[string]string) bool {
	if value, ok := annotations[AnnotationHook]; ok {
		var types []string
		for _, t := range ParseOptions(value) {
			if hookTypes[t] {
				types = append(types, t)
			}
		}
		return !(len(types) == 1 && types[0] == "Skip")
	}
	if value, ok := annotations[AnnotationHelmHook]; ok {
		return value != "crd-install"
	}
	return false
}

// TruncatedLabelValue is the instance label value Argo CD writes in annotation+label mode: labels
// hold at most 63 characters, so a longer instance is cut there and then trailing characters that
// are not letters or digits are stripped (util/argo/resource_tracking.go, SetAppInstance). ok is
// false when nothing valid remains, in which case Argo CD fails to apply.
func TruncatedLabelValue(instance string) (value string, ok bool) {
	const max = 63
	if len(instance) <= max {
		return instance, true
	}
	value = instance[:max]
	for value != "" && !isAlphanumeric(value[len(value)-1]) {
		if len(value) <= 1 {
			return "", false
		}
		value = value[:len(value)-1]
	}
	return value, value != ""
}

func isAlphanumeric(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// LabelValueFits reports whether an instance can be written as a label value as is, which label
// tracking needs: Argo CD writes it untruncated there, and the API server refuses values over 63
// characters.
func LabelValueFits(instance string) bool { return len(instance) <= 63 }

// Delete hook types: the controller runs PreDelete hooks before it deletes an app's resources
// (v3.3+) and PostDelete hooks after.
const (
	HookPreDelete  = "PreDelete"
	HookPostDelete = "PostDelete"
)

// DeleteHookType is PreDelete or PostDelete for an object Argo CD runs when its app is deleted, ""
// for any other: an argocd.argoproj.io/hook or helm.sh/hook value that lists the type (PreDelete,
// pre-delete; PostDelete, post-delete) among its comma-separated entries (controller/hook.go,
// isHookOfType).
func DeleteHookType(annotations map[string]string) string {
	for _, t := range []struct{ hook, argo, helm string }{{HookPreDelete, HookPreDelete, "pre-delete"}, {HookPostDelete, HookPostDelete, "post-delete"}} {
		if slices.Contains(ParseOptions(annotations[AnnotationHook]), t.argo) || slices.Contains(ParseOptions(annotations[AnnotationHelmHook]), t.helm) {
			return t.hook
		}
	}
	return ""
}
