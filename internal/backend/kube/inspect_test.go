package kube

import (
	"errors"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/cluster"
)

// TestImpersonatingDoesNotChain: acting as another user while the clients already act as someone
// (--as) must not send the request with the credentials' own rights.
func TestImpersonatingDoesNotChain(t *testing.T) {
	const controller = "system:serviceaccount:argocd:argocd-application-controller"
	tests := []struct {
		name        string
		acting      rest.ImpersonationConfig
		as          string
		wantOwn     bool // the clients' own dynamic client
		wantChained bool
	}{
		{name: "no impersonation asked", as: "", wantOwn: true},
		{name: "as the controller", as: controller},
		{name: "already acting as the controller", acting: rest.ImpersonationConfig{UserName: controller}, as: controller, wantOwn: true},
		{name: "acting as a viewer", acting: rest.ImpersonationConfig{UserName: "viewer"}, as: controller, wantChained: true},
		{name: "acting as a group", acting: rest.ImpersonationConfig{Groups: []string{"readers"}}, as: controller, wantChained: true},
		{name: "acting as the controller with groups", acting: rest.ImpersonationConfig{UserName: controller, Groups: []string{"x"}}, as: controller, wantChained: true},
		{name: "acting as a viewer, no impersonation asked", acting: rest.ImpersonationConfig{UserName: "viewer"}, as: "", wantOwn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &rest.Config{Host: "https://127.0.0.1:6443", Impersonate: tt.acting}
			own, err := dynamic.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := &Objects{Clients: &Clients{Config: cfg, Dynamic: own}}
			dyn, err := o.impersonating(tt.as)
			var chained *cluster.ChainedImpersonationError
			if got := errors.As(err, &chained); got != tt.wantChained {
				t.Fatalf("impersonating(%q) error = %v; want a ChainedImpersonationError: %t", tt.as, err, tt.wantChained)
			}
			if tt.wantChained {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if isOwn := dyn == own; isOwn != tt.wantOwn {
				t.Errorf("impersonating(%q) returned the clients' own: %t, want %t", tt.as, isOwn, tt.wantOwn)
			}
		})
	}
}
