package argocd

import "strings"

// CmdParamsConfigMap holds the command-line parameters of Argo CD's components, which their
// Deployments and StatefulSets map to environment variables (manifests/base/*); ParamAppNamespaces
// is the application controller's --application-namespaces: the namespaces, besides its own, it
// reconciles Applications in (manifests/base/application-controller).
const (
	CmdParamsConfigMap = "argocd-cmd-params-cm"
	ParamAppNamespaces = "application.namespaces"
)

// AppNamespaces are the namespaces Argo CD's controller reconciles Applications in: its own, and
// those Patterns match (util/security/application_namespaces.go, IsNamespaceEnabled).
type AppNamespaces struct {
	ArgoCD   string
	Patterns []string
}

// SplitList reads a list parameter as Argo CD's components do: comma separated, spaces trimmed,
// empty entries dropped.
func SplitList(value string) []string {
	var out []string
	for _, p := range strings.Split(value, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Enabled reports whether the controller reconciles Applications in namespace. known is false when a
// regular expression among the patterns decides nothing for sure (MatchStringInList).
func (a AppNamespaces) Enabled(namespace string) (enabled, known bool) {
	if namespace == a.ArgoCD {
		return true, true
	}
	return MatchStringInList(a.Patterns, namespace)
}
