package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoArgoCDOrKubernetesModule keeps the tool light and its tracking logic honest: Argo CD's Go
// module (and k8s.io/kubernetes, which it drags in) must never become a dependency of the tool. The
// lab builds them in modules of its own.
func TestNoArgoCDOrKubernetesModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}",
		"github.com/unprune/unprune/cmd/unprune", "github.com/unprune/unprune/cmd/kubectl-unprune", "github.com/unprune/unprune/cmd/argocd-unprune").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	modules := strings.Fields(string(out))
	if len(modules) < 10 {
		t.Fatalf("go list found only %d dependency modules; the check would prove nothing", len(modules))
	}
	for _, m := range modules {
		if strings.HasPrefix(m, "github.com/argoproj/") || m == "k8s.io/kubernetes" {
			t.Errorf("the tool depends on %s", m)
		}
	}
}
