package lab

import (
	"context"
	"fmt"
	"time"
)

// startApplicationSetController runs Argo CD's ApplicationSet controller — the same argocd binary,
// named by ARGOCD_BINARY_NAME — out of the cluster beside the application controller, as
// install.yaml runs it beside it: the installation's namespace, the lab's admin kubeconfig (the
// release's ServiceAccount may create, update and delete Applications, which admin covers), and
// the installation's repo-server for git generators. Its metrics, probe and webhook servers bind to
// 127.0.0.1 (cmd/argocd-applicationset-controller/commands/applicationset_controller.go: they
// default to every interface). No --policy flag: the default, sync, which a set may override with
// syncPolicy.applicationsSync.
func startApplicationSetController(ctx context.Context, st *State, cfg ArgoCDConfig, bin, home string, env []string, repoServerPort int) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	p := process{
		Name: cfg.component("applicationset-controller"),
		Path: bin,
		Args: []string{
			"--namespace=" + cfg.Namespace,
			"--kubeconfig=" + st.Kubeconfig,
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--probe-addr=127.0.0.1:%d", ports[1]),
			fmt.Sprintf("--webhook-addr=127.0.0.1:%d", ports[2]),
			fmt.Sprintf("--argocd-repo-server=127.0.0.1:%d", repoServerPort),
			"--repo-server-plaintext",
			"--loglevel=info",
		},
		Env: append([]string{"ARGOCD_BINARY_NAME=argocd-applicationset-controller"}, env...),
		Dir: home,
	}
	if _, err := p.start(st.Dir); err != nil {
		return err
	}
	// Its probe server registers no check (HealthProbeBindAddress alone, no AddHealthzCheck), so
	// /healthz answers 404 for ever; the metrics server answers once the manager runs.
	return waitHTTP(ctx, st, p.Name, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0]), 60*time.Second)
}
