// Package podsecurity checks the pods deploy/ ships against the Pod Security Standards with
// Kubernetes' own implementation (k8s.io/pod-security-admission/policy), as the API server's
// admission plugin evaluates them. A module of its own, as test/krew and test/prometheus are:
// pod-security-admission and what it requires (component-base …) stay out of the tool's go.mod.
package podsecurity
