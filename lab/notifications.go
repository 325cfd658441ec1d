package lab

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// notificationsObjects are what install.yaml ships for the notifications controller in the
// installation's namespace: an empty argocd-notifications-cm (triggers, templates and services are
// the operator's to add) and an empty argocd-notifications-secret.
func notificationsObjects(ctx context.Context, dyn dynamic.Interface, cfg ArgoCDConfig) error {
	if err := apply(ctx, dyn, gvrConfigMap, configMap(cfg.Namespace, "argocd-notifications-cm", nil)); err != nil {
		return err
	}
	return apply(ctx, dyn, gvrSecret, map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "argocd-notifications-secret", "namespace": cfg.Namespace,
			"labels": partOfArgoCD("argocd-notifications-secret")},
	})
}

// startNotificationsController runs Argo CD's notifications controller — the same argocd binary,
// named by ARGOCD_BINARY_NAME=argocd-notifications (cmd/main.go) — out of the cluster, as
// install.yaml runs it beside the application controller: it watches the installation's
// Applications and AppProjects and its argocd-notifications-cm and -secret, evaluates the triggers
// apps subscribe to, sends, and records what it sent in each app's
// notified.notifications.argoproj.io annotation. Flags (cmd/argocd-notification/commands, v3.6.1
// and v2.14.11 alike): the repo-server (for the repo helpers of its expressions and templates), in
// plain text as the lab runs it; --application-namespaces like the controller's.
//
// Its namespace comes from the kubeconfig: the command reads clientConfig.Namespace(), kubectl's
// --namespace in v3.6.1, but v2.14.11 declares a --namespace flag of its own that shadows kubectl's
// and is never read. So it gets the admin's kubeconfig (its ServiceAccount only reads apps,
// projects, its ConfigMap and Secret and patches apps, which admin covers) with the installation's
// namespace in the context, and --namespace as well.
//
// Its metrics server listens on every interface (0.0.0.0 is hard-coded, like the application
// controller's); the lab only ever connects to it on 127.0.0.1.
func startNotificationsController(ctx context.Context, st *State, a *ArgoCD, bin, home string, env []string) error {
	cfg := a.Config
	kubeconfig, err := namespacedKubeconfig(st.Kubeconfig, filepath.Join(home, "notifications.kubeconfig"), cfg.Namespace)
	if err != nil {
		return fmt.Errorf("notifications controller of %s: %w", cfg.Namespace, err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + cfg.Namespace,
		"--argocd-repo-server=" + fmt.Sprintf("127.0.0.1:%d", a.RepoServerPort),
		"--argocd-repo-server-plaintext",
		"--metrics-port=" + strconv.Itoa(ports[0]),
		"--loglevel=info",
	}
	if len(cfg.AppNamespaces) > 0 {
		args = append(args, "--application-namespaces="+strings.Join(cfg.AppNamespaces, ","))
	}
	p := process{
		Name: cfg.component("notifications-controller"),
		Path: bin,
		Args: args,
		Env:  append([]string{"ARGOCD_BINARY_NAME=argocd-notifications"}, withEnv(env, "KUBECONFIG", kubeconfig)...),
		Dir:  home,
	}
	if _, err := p.start(st.Dir); err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	if err := waitHTTP(ctx, st, p.Name, url, 60*time.Second); err != nil {
		return err
	}
	a.NotificationsMetricsURL = url
	return nil
}

// namespacedKubeconfig writes a copy of the kubeconfig at from whose current context names namespace.
func namespacedKubeconfig(from, to, namespace string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return "", err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("%s has no current context", from)
	}
	ctx.Namespace = namespace
	if err := clientcmd.WriteToFile(*cfg, to); err != nil {
		return "", err
	}
	return to, nil
}
