package lab

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// hydratorSince is the first release line with the source hydrator: the controller's
// controller/hydrator package, the argocd-commit-server role of cmd/main.go and
// spec.sourceHydrator are in v2.14.11's source and in none of v2.13.9's.
const hydratorSince = "v2.14.0"

// hydratorParams are argocd-cmd-params-cm's keys for the source hydrator and the environment
// variables Argo CD's manifests map them to (configMapKeyRef, optional): hydrator.enabled for the
// application controller (manifests/base/application-controller/
// argocd-application-controller-statefulset.yaml) and argocd-server (manifests/base/server/
// argocd-server-deployment.yaml), commit.server for the controller only. install-with-hydrator.yaml
// sets hydrator.enabled: "true" (manifests/cluster-install-with-hydrator/kustomization.yaml) and
// leaves commit.server to the default, the argocd-commit-server Service (common.DefaultCommitServerAddr,
// argocd-commit-server:8086); the lab's commit-server is a local process on 127.0.0.1, so the lab
// names it there. Read in v3.6.1, v3.0.23 and v2.14.11 alike: the controller's --hydrator-enabled
// (ARGOCD_HYDRATOR_ENABLED) and --commit-server (ARGOCD_APPLICATION_CONTROLLER_COMMIT_SERVER),
// argocd-server's --hydrator-enabled (cmd/argocd-application-controller, cmd/argocd-server).
var hydratorParams = []cmdParam{
	{"hydrator.enabled", "ARGOCD_HYDRATOR_ENABLED"},
	{"commit.server", "ARGOCD_APPLICATION_CONTROLLER_COMMIT_SERVER"},
}

// hydratorFieldManager owns the hydrator's keys of argocd-cmd-params-cm, apart from the keys the
// installation's own apply owns.
const hydratorFieldManager = "unprune-lab-hydrator"

func (c ArgoCDConfig) validateHydrator() error {
	if c.Hydrator && newerVersion(hydratorSince, c.Version) {
		return fmt.Errorf("HYDRATOR=1 needs Argo CD %s or later: Argo CD %s has no source hydrator and no commit-server (they arrived in the v2.14 line)", hydratorSince, c.Version)
	}
	return nil
}

// startCommitServer runs Argo CD's commit-server — the same argocd binary, named by
// ARGOCD_BINARY_NAME=argocd-commit-server (cmd/main.go dispatches on it) — out of the cluster, as
// install-with-hydrator.yaml runs it beside the controller: it clones the repository the controller
// names, writes the hydrated manifests, commits and pushes them with the write credentials the
// controller sends (a repository-write Secret of the installation; a file:// repository needs
// none), and records the dry commit in a git note. Flags (cmd/argocd-commit-server/commands, v2.14.11
// through v3.6.1): --address and --metrics-address bind to 127.0.0.1 (they default to every
// interface), --port and --metrics-port are free ports; its /metrics and /healthz share the metrics
// port.
//
// Two paths of it are fixed, whatever the environment: the clones go under /tmp/_commit-service
// (a fresh directory per request, commitserver/commit/commit.go initGitClient), and the askpass
// socket it serves HTTPS credentials through is /tmp/commit-server-ask-pass.sock
// (util/askpass/common.go CommitServerSocketPath), which a second commit-server on the machine takes
// over. The lab's repositories are file:// URLs, for which git asks for no credentials.
//
// It returns the environment the controller and argocd-server get from argocd-cmd-params-cm.
func startCommitServer(ctx context.Context, st *State, cfg ArgoCDConfig, bin, home string, env []string) ([]string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	p := process{
		Name: cfg.component("commit-server"),
		Path: bin,
		Args: []string{
			"--address=127.0.0.1",
			"--port=" + strconv.Itoa(ports[0]),
			"--metrics-address=127.0.0.1",
			"--metrics-port=" + strconv.Itoa(ports[1]),
			"--loglevel=info",
		},
		Env: append([]string{"ARGOCD_BINARY_NAME=argocd-commit-server"}, env...),
		Dir: home,
	}
	if _, err := p.start(st.Dir); err != nil {
		return nil, err
	}
	// ?full=true has it call its own gRPC health service, as the liveness probe of
	// argocd-commit-server-deployment.yaml does; plain /healthz answers before gRPC serves.
	if err := waitHTTP(ctx, st, p.Name, fmt.Sprintf("http://127.0.0.1:%d/healthz?full=true", ports[1]), 60*time.Second); err != nil {
		return nil, err
	}
	return hydratorEnvironment(ctx, st, cfg, fmt.Sprintf("127.0.0.1:%d", ports[0]))
}

// hydratorEnvironment writes hydrator.enabled and commit.server into argocd-cmd-params-cm and
// returns the environment Argo CD's manifests give the controller from the ConfigMap as it now is
// (argocd-server reads hydrator.enabled alone).
func hydratorEnvironment(ctx context.Context, st *State, cfg ArgoCDConfig, commitServer string) ([]string, error) {
	dyn, err := st.Dynamic()
	if err != nil {
		return nil, err
	}
	data := map[string]any{hydratorParams[0].key: "true", hydratorParams[1].key: commitServer}
	return applyParams(ctx, dyn, cfg.Namespace, data, hydratorFieldManager, hydratorParams)
}

// serverHydratorEnv is the part of the hydrator's environment argocd-server gets: hydrator.enabled.
func serverHydratorEnv(controllerEnv []string) []string {
	var out []string
	for _, e := range controllerEnv {
		if strings.HasPrefix(e, hydratorParams[0].env+"=") {
			out = append(out, e)
		}
	}
	return out
}
