package deploytest

import (
	"fmt"
	"strings"
	"testing"
)

// TestDeletionBudgetComponent: the component turns the webhook on in the watch's Deployment, serves
// it from the Secret cert-manager writes, asks the API server only about Argo CD's controllers'
// DELETEs (the ApplicationSet controller's of Applications), may record on ApplicationSets, fails
// closed, and — listed after the networkpolicy component — opens the
// webhook's port in its NetworkPolicy; without that component it needs none.
func TestDeletionBudgetComponent(t *testing.T) {
	objs := Build(t, "base", "components:", "  - DEPLOYcomponents/networkpolicy", "  - DEPLOYcomponents/deletion-budget")
	dep := Kind(objs, "Deployment")[0]
	pod := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := asSlice(pod["containers"])[0].(map[string]any)
	args := fmt.Sprint(c["args"])
	for _, want := range []string{"--deletion-budget=", "--admission-bind-address=:9443", "--tls-cert-file=/etc/unprune/webhook/tls.crt", "--tls-private-key-file=/etc/unprune/webhook/tls.key"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s: no %s", args, want)
		}
	}
	if v := fmt.Sprint(pod["volumes"]); !strings.Contains(v, "unprune-watch-webhook-tls") {
		t.Errorf("volumes %s: not the Certificate's Secret", v)
	}
	hooks := Kind(objs, "ValidatingWebhookConfiguration")
	if len(hooks) != 1 {
		t.Fatalf("%d ValidatingWebhookConfigurations", len(hooks))
	}
	wh := asSlice(hooks[0]["webhooks"])[0].(map[string]any)
	if wh["failurePolicy"] != "Fail" || wh["sideEffects"] != "NoneOnDryRun" {
		t.Errorf("failurePolicy %v, sideEffects %v: want Fail, NoneOnDryRun", wh["failurePolicy"], wh["sideEffects"])
	}
	cond := fmt.Sprint(wh["matchConditions"])
	for _, want := range []string{"'system:serviceaccount:argocd:argocd-application-controller' ||",
		"'system:serviceaccount:argocd:argocd-applicationset-controller' &&", "request.resource.resource == 'applications'"} {
		if !strings.Contains(cond, want) {
			t.Errorf("matchConditions %s: no %s", cond, want)
		}
	}
	var bound bool
	for _, b := range Kind(objs, "ClusterRoleBinding") {
		if fmt.Sprint(b["roleRef"]) == "map[apiGroup:rbac.authorization.k8s.io kind:ClusterRole name:unprune-watch-deletion-budget]" &&
			strings.Contains(fmt.Sprint(b["subjects"]), "name:unprune-watch namespace:argocd") {
			bound = true
		}
	}
	for _, r := range Kind(objs, "ClusterRole") {
		if r["metadata"].(map[string]any)["name"] == "unprune-watch-deletion-budget" && fmt.Sprint(r["rules"]) != "[map[apiGroups:[argoproj.io] resources:[applicationsets] verbs:[get patch]]]" {
			t.Errorf("the budget's ClusterRole grants %v", r["rules"])
		}
	}
	if !bound {
		t.Error("the watch's ServiceAccount is not bound to unprune-watch-deletion-budget")
	}
	svc := wh["clientConfig"].(map[string]any)["service"].(map[string]any)
	if svc["name"] != "unprune-watch-webhook" || svc["namespace"] != "argocd" || svc["path"] != "/validate-deletion" {
		t.Errorf("clientConfig.service %v", svc)
	}
	if Kind(objs, "Service") == nil || Kind(objs, "Certificate") == nil {
		t.Error("no Service or Certificate")
	}
	np := Kind(objs, "NetworkPolicy")[0]
	if in := fmt.Sprint(np["spec"].(map[string]any)["ingress"]); !strings.Contains(in, "webhook") {
		t.Errorf("NetworkPolicy ingress %s: the webhook's port is closed to the API server", in)
	}
	if np := Kind(Build(t, "base", "components:", "  - DEPLOYcomponents/deletion-budget"), "NetworkPolicy"); len(np) != 0 {
		t.Errorf("without the networkpolicy component: %d NetworkPolicies", len(np))
	}
}
