// Package argocd holds the rules Argo CD applies when it decides which Application tracks a
// live Kubernetes object, as read from Argo CD's source for v2.14 through v3.6.1.
//
// unprune detaches objects that an Application says "require pruning". Detaching is only safe
// when unprune sees an object exactly the way Argo CD's application controller does: the same
// tracking method, the same label key, the same tracking-id parsing, the same self-reference
// and installation-id checks. Those rules moved between releases (the default tracking method
// changed in v3.0.0; the installation-id check was buggy from v2.12.7 to v3.5.x), so every
// decision here is a function of the argocd-cm settings and, when known, the Argo CD version.
//
// When a rule depends on a version unprune could not determine, the package never guesses:
// Settings.Ambiguous and the Certain fields of Ownership and Claim say so, and the answer is
// widened to "might be tracked" so that callers can both explain the doubt and stay
// conservative.
//
// The package deliberately imports neither Argo CD nor Kubernetes modules: callers pass plain
// label and annotation maps, which keeps these rules testable in isolation and keeps the CLI
// free of Argo CD's large dependency tree.
package argocd
