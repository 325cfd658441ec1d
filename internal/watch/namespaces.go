package watch

import (
	"strings"

	"github.com/unprune/unprune/internal/argocd"
)

// appNamespaces decides which Applications are Argo CD's (argocd.AppNamespaces), and which
// namespaces the watch's informers read.
type appNamespaces struct {
	argocd.AppNamespaces
}

// enabled reports whether Argo CD reconciles Applications in namespace. A pattern that decides
// nothing for sure (a regular expression Go reads otherwise than Argo CD's regexp2) enables none.
func (a appNamespaces) enabled(namespace string) bool {
	enabled, _ := a.Enabled(namespace)
	return enabled
}

// informerNamespaces are the namespaces to watch: each one named when every pattern is a plain name
// (a watch per namespace, the least it can read), else every namespace ("") filtered by enabled.
func (a appNamespaces) informerNamespaces() []string {
	out := []string{a.ArgoCD}
	for _, p := range a.Patterns {
		if strings.ContainsAny(p, "*?[]{}/\\!") {
			return []string{""}
		}
		if p != a.ArgoCD {
			out = append(out, p)
		}
	}
	return out
}
