package deploytest

import (
	"fmt"
	"strconv"
	"testing"
)

// selects reports whether a label selector's matchLabels select the labels (the manifests use no
// matchExpressions; one would fail the test rather than be ignored).
func selects(t *testing.T, selector, labels map[string]any) bool {
	t.Helper()
	if selector["matchExpressions"] != nil {
		t.Fatalf("selector %v: matchExpressions are not read here", selector)
	}
	ml, _ := selector["matchLabels"].(map[string]any)
	if len(ml) == 0 {
		return false
	}
	for k, v := range ml {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// podTemplate returns the one Deployment's pod template labels, its namespace and its replicas.
func podTemplate(t *testing.T, objs []map[string]any) (labels map[string]any, namespace any, replicas int) {
	t.Helper()
	deps := Kind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments", len(deps))
	}
	spec := deps[0]["spec"].(map[string]any)
	labels = spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	replicas, err := strconv.Atoi(fmt.Sprint(spec["replicas"]))
	if err != nil {
		t.Fatal(err)
	}
	return labels, deps[0]["metadata"].(map[string]any)["namespace"], replicas
}

// TestPodDisruptionBudget: the base's PDB covers the watch's pods (in their namespace, whatever the
// overlay's prefix) and lets a drain evict one of them at a time — never both, never blocked.
func TestPodDisruptionBudget(t *testing.T) {
	for _, overlay := range [][]string{nil, {"namespace: team-argocd", "namePrefix: x-"}} {
		objs := Build(t, "base", overlay...)
		labels, namespace, replicas := podTemplate(t, objs)
		pdbs := Kind(objs, "PodDisruptionBudget")
		if len(pdbs) != 1 {
			t.Fatalf("%v: %d PodDisruptionBudgets, want 1", overlay, len(pdbs))
		}
		pdb := pdbs[0]
		spec := pdb["spec"].(map[string]any)
		if pdb["metadata"].(map[string]any)["namespace"] != namespace || !selects(t, spec["selector"].(map[string]any), labels) {
			t.Errorf("%v: the PDB (namespace %v, selector %v) does not cover the pods (namespace %v, labels %v)",
				overlay, pdb["metadata"].(map[string]any)["namespace"], spec["selector"], namespace, labels)
		}
		min, err := strconv.Atoi(fmt.Sprint(spec["minAvailable"]))
		if err != nil || spec["maxUnavailable"] != nil {
			t.Fatalf("%v: minAvailable %v, maxUnavailable %v: want minAvailable, a number", overlay, spec["minAvailable"], spec["maxUnavailable"])
		}
		if min < 1 || min >= replicas {
			t.Errorf("%v: minAvailable %d with %d replicas: a drain must keep one and be able to evict one", overlay, min, replicas)
		}
	}
}
