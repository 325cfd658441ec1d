package deploytest

import (
	"fmt"
	"slices"
	"sort"
	"testing"
)

// TestNetworkPolicyComponent: components/networkpolicy selects the watch's pods in a prefixed overlay
// and restricts both directions: ingress only to the container's metrics port, egress only to DNS
// and to the API server's ports — every rule names its ports (a rule without ports allows them all).
func TestNetworkPolicyComponent(t *testing.T) {
	if n := len(Kind(Build(t, "base"), "NetworkPolicy")); n != 0 {
		t.Errorf("the base has %d NetworkPolicies; the policy is opt-in (components/networkpolicy)", n)
	}
	objs := Build(t, "base", "namespace: team-argocd", "namePrefix: x-", "components:", "  - DEPLOYcomponents/networkpolicy")
	labels, namespace, _ := podTemplate(t, objs)
	nps := Kind(objs, "NetworkPolicy")
	if len(nps) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(nps))
	}
	np := nps[0]
	spec := np["spec"].(map[string]any)
	if np["metadata"].(map[string]any)["namespace"] != namespace || !selects(t, spec["podSelector"].(map[string]any), labels) {
		t.Errorf("the policy (namespace %v, podSelector %v) does not select the pods (namespace %v, labels %v)",
			np["metadata"].(map[string]any)["namespace"], spec["podSelector"], namespace, labels)
	}
	if types := fmt.Sprint(spec["policyTypes"]); types != "[Ingress Egress]" {
		t.Errorf("policyTypes %s: want both directions restricted", types)
	}

	// The container's metrics port, by name and number.
	dep := Kind(objs, "Deployment")[0]
	c := asSlice(podSpec(dep)["containers"])[0].(map[string]any)
	metrics := map[string]bool{}
	for _, p := range asSlice(c["ports"]) {
		if p := p.(map[string]any); p["name"] == "metrics" {
			metrics[fmt.Sprint(p["name"])], metrics[fmt.Sprint(p["containerPort"])] = true, true
		}
	}
	if len(metrics) == 0 {
		t.Fatal("the container has no port named metrics")
	}

	ports := func(direction string) []string {
		var out []string
		for _, r := range asSlice(spec[direction]) {
			ps := asSlice(r.(map[string]any)["ports"])
			if len(ps) == 0 {
				t.Errorf("%s rule %v names no port: it allows every port", direction, r)
			}
			for _, p := range ps {
				p := p.(map[string]any)
				out = append(out, fmt.Sprintf("%v/%v", p["protocol"], p["port"]))
				if p["endPort"] != nil {
					t.Errorf("%s port %v: a range", direction, p)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	in := ports("ingress")
	if len(in) != 1 || !metrics[in[0][len("TCP/"):]] || in[0][:4] != "TCP/" {
		t.Errorf("ingress to %v: want only TCP to the metrics port %v", in, metrics)
	}
	if out, want := ports("egress"), []string{"TCP/443", "TCP/53", "TCP/6443", "UDP/53"}; !slices.Equal(out, want) {
		t.Errorf("egress to %v: want DNS and the API server only, %v", out, want)
	}
}
