package watch

import (
	"regexp"
	"strings"

	"github.com/gobwas/glob"
)

// ParamsConfigMap holds Argo CD's command parameters; ParamAppNamespaces the namespaces, besides its
// own, that Argo CD reconciles Applications in (comma separated patterns).
const (
	ParamsConfigMap    = "argocd-cmd-params-cm"
	ParamAppNamespaces = "application.namespaces"
)

// appNamespaces decides which Applications are Argo CD's: those in its own namespace and those whose
// namespace matches one of patterns as Argo CD matches them — util/security/application_namespaces.go
// IsNamespaceEnabled → util/glob.MatchStringInList(…, glob.REGEXP): a pattern wrapped in "/" is a
// regular expression, any other a gobwas glob without separators.
type appNamespaces struct {
	argocd   string
	patterns []string
}

// splitPatterns reads application.namespaces as Argo CD does: comma separated, spaces trimmed.
func splitPatterns(value string) []string {
	var out []string
	for _, p := range strings.Split(value, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (a appNamespaces) enabled(namespace string) bool {
	if namespace == a.argocd {
		return true
	}
	for _, p := range a.patterns {
		if strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") && len(p) > 1 {
			if re, err := regexp.Compile(p[1 : len(p)-1]); err == nil && re.MatchString(namespace) {
				return true
			}
			continue
		}
		if g, err := glob.Compile(p); err == nil && g.Match(namespace) {
			return true
		}
	}
	return false
}

// informerNamespaces are the namespaces to watch: each one named when every pattern is a plain name
// (a watch per namespace, the least it can read), else every namespace ("") filtered by enabled.
func (a appNamespaces) informerNamespaces() []string {
	out := []string{a.argocd}
	for _, p := range a.patterns {
		if strings.ContainsAny(p, "*?[]{}/\\!") {
			return []string{""}
		}
		if p != a.argocd {
			out = append(out, p)
		}
	}
	return out
}
