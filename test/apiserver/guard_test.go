//go:build lab

package apiserver

import (
	"strings"
	"testing"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
)

// TestGuardPolicyCompiles: the API server compiles the policy's CEL (a server-side dry run persists
// nothing), whatever characters the break-glass group name holds.
func TestGuardPolicyCompiles(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, group := range []string{"", "platform-admins", `O'Neil "ops" \ admins`, "cn=Smith\\, John"} {
		r := unprune(t, env.State.Kubeconfig, labtest.TempDir(t), "guard", "policy", "--kinds=namespaces,crds,pvs",
			"--name=namespaces/team-a", "--break-glass-group="+group, "--apply", "--dry-run=server")
		if r.Code != cli.ExitFindings || strings.Count(r.Stdout, "accepted by a server-side dry run") != 2 {
			t.Errorf("group %q: exit %d; want both objects accepted by the dry run", group, r.Code)
		}
	}
}
