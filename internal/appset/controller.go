package appset

import (
	"fmt"
	"strings"
)

// Keys of argocd-cmd-params-cm that the ApplicationSet controller's and the repo-server's manifests
// map to their environment (manifests/base/applicationset-controller/
// argocd-applicationset-controller-deployment.yaml, manifests/base/repo-server/
// argocd-repo-server-deployment.yaml), read the way cmd/argocd-applicationset-controller reads the
// variables (util/env ParseBoolFromEnv: "true" or "false" in any case, anything else the default).
const (
	ParamPolicy                   = "applicationsetcontroller.policy"
	ParamPolicyOverride           = "applicationsetcontroller.enable.policy.override"
	ParamNewGitFileGlobbing       = "applicationsetcontroller.enable.new.git.file.globbing"
	ParamIncludeHiddenDirectories = "reposerver.include.hidden.directories"
)

// Controller is how the ApplicationSet controller (and the repo-server that lists git for it) was
// configured: what decides a set's effective policy and how git generators list files.
type Controller struct {
	// Known is false when argocd-cmd-params-cm could not be read; Why says why.
	Known bool
	Why   string
	// Policy is the controller's --policy ("" when unset: sets default to sync and may override it).
	Policy string
	// Override is --enable-policy-override: whether a set's applicationsSync counts.
	Override bool
	// NewGitFileGlobbing: the files generator globs the checkout with doublestar instead of
	// `git ls-files` pathspecs.
	NewGitFileGlobbing bool
	// IncludeHiddenDirectories: the directories generator lists hidden directories too.
	IncludeHiddenDirectories bool
}

// DefaultController is a controller started without any of these parameters.
var DefaultController = Controller{Known: true, Override: true}

// ControllerFrom reads the parameters. An unknown policy stops the controller at start
// (applicationset_controller.go: "Policy value can be …", exit 1).
func ControllerFrom(params map[string]string) (Controller, error) {
	c := Controller{Known: true, Policy: params[ParamPolicy]}
	switch c.Policy {
	case "", PolicySync, PolicyCreateOnly, PolicyCreateUpdate, PolicyCreateDelete:
	default:
		return c, fmt.Errorf("%s is %q, which the ApplicationSet controller refuses to start with (it takes sync, create-only, create-update or create-delete)", ParamPolicy, c.Policy)
	}
	// The override's default is read from the policy's environment variable, not the flag: unset
	// policy, override on (the flag's default is computed before flags are parsed).
	c.Override = parseBool(params[ParamPolicyOverride], c.Policy == "")
	c.NewGitFileGlobbing = parseBool(params[ParamNewGitFileGlobbing], false)
	c.IncludeHiddenDirectories = parseBool(params[ParamIncludeHiddenDirectories], false)
	return c, nil
}

func parseBool(v string, def bool) bool {
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	}
	return def
}

// EffectivePolicy is the policy the controller applies to the set (applicationset/utils/policy.go
// DefaultPolicy): the set's applicationsSync when it has one and the controller allows overriding,
// else the controller's (sync when it has none). known is false when the controller's
// configuration could not be read and the two could differ.
func (s ApplicationSet) EffectivePolicy(c Controller) (policy string, known bool) {
	if !c.Known {
		return s.Policy(), false
	}
	controller := c.Policy
	if controller == "" {
		controller = PolicySync
	}
	if s.ApplicationsSync == "" || !c.Override {
		return controller, true
	}
	return s.ApplicationsSync, true
}

// PolicyDeletes reports whether a policy deletes the apps the generators no longer produce
// (ApplicationsSyncPolicy.AllowDelete).
func PolicyDeletes(p string) bool { return p == PolicySync || p == PolicyCreateDelete }

// PolicyUpdates reports whether a policy updates existing apps, finalizers included
// (ApplicationsSyncPolicy.AllowUpdate).
func PolicyUpdates(p string) bool { return p == PolicySync || p == PolicyCreateUpdate }
