package deploytest

import (
	"bytes"
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// typed are the Kubernetes kinds deploy/ ships for the watch, as the API server decodes them.
var typed = map[string]func() any{
	"Deployment":                     func() any { return &appsv1.Deployment{} },
	"Service":                        func() any { return &corev1.Service{} },
	"ServiceAccount":                 func() any { return &corev1.ServiceAccount{} },
	"ConfigMap":                      func() any { return &corev1.ConfigMap{} },
	"PodDisruptionBudget":            func() any { return &policyv1.PodDisruptionBudget{} },
	"NetworkPolicy":                  func() any { return &networkingv1.NetworkPolicy{} },
	"ClusterRole":                    func() any { return &rbacv1.ClusterRole{} },
	"ClusterRoleBinding":             func() any { return &rbacv1.ClusterRoleBinding{} },
	"Role":                           func() any { return &rbacv1.Role{} },
	"ValidatingWebhookConfiguration": func() any { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
	"RoleBinding":                    func() any { return &rbacv1.RoleBinding{} },
}

// TestManifestsDecodeStrictly: every Kubernetes object of the watch's base, each component and the
// dashboard decodes into its API type with no unknown field — a misspelt field (minAvailabe,
// policyType) would otherwise be dropped by the API server without a word. The Prometheus
// Operator's kinds are left to test/prometheus and the lab, cert-manager's to cert-manager.
func TestManifestsDecodeStrictly(t *testing.T) {
	var objs []map[string]any
	for _, c := range []string{"servicemonitor", "networkpolicy", "exact-counts", "remote-clusters", "deletion-budget"} {
		objs = append(objs, Build(t, "base", "components:", "  - DEPLOYcomponents/"+c)...)
	}
	objs = append(objs, Build(t, "ui-extension/backend", "components:", "  - DEPLOYui-extension/remote-clusters")...)
	objs = append(objs, Build(t, "grafana")...)
	seen := map[string]bool{}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		newObj, ok := typed[kind]
		if !ok {
			if kind != "ServiceMonitor" && kind != "Issuer" && kind != "Certificate" {
				t.Errorf("%s: no API type to check it against; add it to typed", kind)
			}
			continue
		}
		seen[kind] = true
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(newObj()); err != nil {
			t.Errorf("%s %v: %v", kind, o["metadata"].(map[string]any)["name"], err)
		}
	}
	for _, k := range []string{"PodDisruptionBudget", "NetworkPolicy", "Deployment"} {
		if !seen[k] {
			t.Errorf("no %s checked", k)
		}
	}
}
