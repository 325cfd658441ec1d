// Command lab starts, stops and reports the local control plane (see package lab).
//
//	lab up       start (or find running) the lab; the last stdout line is KUBECONFIG=<path>
//	lab down     stop exactly the processes lab up started, by PID
//	lab status   list the lab's processes and whether each is alive
//
// Configuration comes from the environment, as `make lab-up VAR=…` passes it: ARGOCD_VERSION
// (one of lab.ArgoCDVersions, v3.6.1 … v2.14.11, or none), TRACKING, INSTANCE_LABEL_KEY, INSTALLATION_ID, APP_NAMESPACES,
// KCM, REMOTE (a second cluster, registered with the installation), SERVER (argocd-server), UI
// (unprune's UI extension, with SERVER; in Argo CD's own UI for the releases lab.OwnUI names),
// UI_REMOTE_CLUSTERS (its backend with deploy/ui-extension/remote-clusters), APPSET_POLICY and
// APPSET_POLICY_OVERRIDE (the ApplicationSet controller's policy), NOTIFICATIONS (Argo CD's notifications
// controller), HYDRATOR (Argo CD's commit-server, with the source hydrator enabled), DELETION_BUDGET=N
// (unprune's watch with the deletion budget's admission webhook, budget N), LAB_DIR.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/unprune/unprune/lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: lab up|down|status")
	}
	root, err := lab.RepoRoot()
	if err != nil {
		return err
	}
	dir := getenv("LAB_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".lab")
	}
	switch args[0] {
	case "up":
		cfg, err := configFromEnv(dir, getenv)
		if err != nil {
			return err
		}
		start := time.Now()
		st, err := lab.Up(ctx, root, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "lab: up in %.1fs; API server %s; state in %s\n", time.Since(start).Seconds(), st.Server, st.Dir)
		fmt.Fprintf(stderr, "lab: kubeconfig of a user with no RBAC rights: %s\n", st.NoAccessKubeconfig)
		fmt.Fprintf(stderr, "lab: kubectl of the same release: %s\n", st.Kubectl)
		if r := st.Remote; r != nil {
			fmt.Fprintf(stderr, "lab: remote cluster %s; admin kubeconfig %s, no RBAC rights %s\n", r.Server, r.Kubeconfig, r.NoAccessKubeconfig)
			for _, reg := range r.Registrations {
				fmt.Fprintf(stderr, "lab: registered with the Argo CD in %s as cluster %q (Secret %s): destination name %q or server %s\n",
					reg.Namespace, reg.Name, reg.Secret, reg.Name, r.Server)
			}
		}
		for _, a := range st.ArgoCD {
			if a.NotificationsMetricsURL != "" {
				fmt.Fprintf(stderr, "lab: Argo CD's notifications controller of %s (metrics %s) reads argocd-notifications-cm there; unprune's trigger and template: deploy/components/argocd-notifications (docs/watch.md)\n",
					a.Config.Namespace, a.NotificationsMetricsURL)
			}
		}
		for _, a := range st.ArgoCD {
			if b := a.Budget; b != nil {
				fmt.Fprintf(stderr, "lab: deletion budget %d for Argo CD's controller in %s: unprune watch (metrics %s) answers the API server's webhook %s at %s, "+
					"as deploy/components/deletion-budget runs it (failurePolicy Fail); approve with: unprune guard approve APP -n %s --yes\n",
					*a.Config.DeletionBudget, a.Config.Namespace, b.MetricsURL, b.Webhook, b.URL, a.Config.Namespace)
			}
		}
		for _, a := range st.ArgoCD {
			if a.Config.Hydrator {
				fmt.Fprintf(stderr, "lab: Argo CD's commit-server of %s runs, and the source hydrator is on (hydrator.enabled in argocd-cmd-params-cm): an app with "+
					"spec.sourceHydrator gets its dry source rendered and pushed to its syncSource branch (file:// repositories need no write credentials)\n", a.Config.Namespace)
			}
		}
		for _, a := range st.ArgoCD {
			if a.ServerURL == "" {
				continue
			}
			fmt.Fprintf(stderr, "lab: argocd-server of %s: %s (plain HTTP)\n", a.Config.Namespace, a.ServerURL)
			for _, u := range lab.ServerUsers {
				fmt.Fprintf(stderr, "lab:   %-8s %s\n", u.Name, u.Role)
				fmt.Fprintf(stderr, "lab:            argocd login 127.0.0.1:%d --plaintext --username %s --password %s\n", a.ServerPort, u.Name, u.Password)
			}
			if ui := a.UI; ui != nil && ui.ArgoCDURL != "" {
				fmt.Fprintf(stderr, "lab: Argo CD %s's own UI with unprune's extension: open %s and sign in as one of the users above; the status panel item is on every app's page, UNPRUNE in the top bar of an app with a resource requiring pruning\n", a.Config.Version, ui.ArgoCDURL)
				fmt.Fprintf(stderr, "lab:   the host page of the fast tests: %s\n", ui.URL)
			} else if ui != nil {
				fmt.Fprintf(stderr, "lab: unprune's UI extension in Argo CD's API: open %s and sign in as one of the users above (the host page stands in for Argo CD's UI, which the lab builds only for %s; see docs/ui.md)\n", ui.URL, strings.Join(lab.OwnUIVersions(root), ", "))
			}
			if ui := a.UI; ui != nil {
				fmt.Fprintf(stderr, "lab:   backend %s (unprune extension); journals of UI releases: unprune undo --journal-dir configmaps:%s --list\n", ui.BackendURL, ui.JournalNamespace)
			}
			fmt.Fprintf(stderr, "lab:   or: curl -s %s/api/v1/session -H 'Content-Type: application/json' -d '{\"username\":\"admin\",\"password\":\"%s\"}'  (a JWT for Authorization: Bearer)\n",
				a.ServerURL, lab.ServerAdmin.Password)
		}
		fmt.Fprintf(stdout, "KUBECONFIG=%s\n", st.Kubeconfig)
		return nil
	case "down":
		if err := lab.Down(dir); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "lab: stopped (state kept in %s)\n", dir)
		return nil
	case "status":
		st, err := lab.Load(dir)
		if err != nil {
			fmt.Fprintf(stdout, "no lab in %s\n", dir)
			return nil
		}
		running := st.Running()
		names := make([]string, 0, len(running))
		for n := range running {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stdout, "lab in %s, API server %s\n", st.Dir, st.Server)
		if st.Remote != nil {
			fmt.Fprintf(stdout, "remote cluster %s, KUBECONFIG=%s\n", st.Remote.Server, st.Remote.Kubeconfig)
		}
		for _, a := range st.ArgoCD {
			if a.ServerURL != "" {
				fmt.Fprintf(stdout, "argocd-server of %s: %s\n", a.Config.Namespace, a.ServerURL)
			}
		}
		for _, n := range names {
			state := "stopped"
			if running[n] {
				state = "running"
			}
			fmt.Fprintf(stdout, "  %-40s %s\n", n, state)
		}
		fmt.Fprintf(stdout, "KUBECONFIG=%s\n", st.Kubeconfig)
		return nil
	}
	return fmt.Errorf("unknown command %q; use up, down or status", args[0])
}

func configFromEnv(dir string, getenv func(string) string) (lab.Config, error) {
	cfg := lab.Config{Dir: dir}
	var err error
	if cfg.KCM, err = onOff(getenv, "KCM", true); err != nil {
		return cfg, err
	}
	if cfg.Remote, err = onOff(getenv, "REMOTE", false); err != nil {
		return cfg, err
	}
	server, err := onOff(getenv, "SERVER", false)
	if err != nil {
		return cfg, err
	}
	ui, err := onOff(getenv, "UI", false)
	if err != nil {
		return cfg, err
	}
	uiRemote, err := onOff(getenv, "UI_REMOTE_CLUSTERS", false)
	if err != nil {
		return cfg, err
	}
	notifications, err := onOff(getenv, "NOTIFICATIONS", false)
	if err != nil {
		return cfg, err
	}
	hydrator, err := onOff(getenv, "HYDRATOR", false)
	if err != nil {
		return cfg, err
	}
	repoServerTools, err := onOff(getenv, "REPO_SERVER_TOOLS", true)
	if err != nil {
		return cfg, err
	}
	var budget *int
	if v := getenv("DELETION_BUDGET"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("DELETION_BUDGET=%q: give the most objects one operation of Argo CD may delete without approval, 0 or more", v)
		}
		budget = &n
	}
	version := getenv("ARGOCD_VERSION")
	if version == "" {
		version = "v3.6.1"
	}
	if version == "none" {
		if server {
			return cfg, fmt.Errorf("SERVER=1 needs an Argo CD: set ARGOCD_VERSION to one of %s", strings.Join(lab.ArgoCDVersions, ", "))
		}
		if notifications {
			return cfg, fmt.Errorf("NOTIFICATIONS=1 needs an Argo CD: set ARGOCD_VERSION to one of %s", strings.Join(lab.ArgoCDVersions, ", "))
		}
		if budget != nil {
			return cfg, fmt.Errorf("DELETION_BUDGET needs an Argo CD: set ARGOCD_VERSION to one of %s", strings.Join(lab.ArgoCDVersions, ", "))
		}
		if hydrator {
			return cfg, fmt.Errorf("HYDRATOR=1 needs an Argo CD: set ARGOCD_VERSION to one of %s", strings.Join(lab.ArgoCDVersions, ", "))
		}
		if !repoServerTools {
			return cfg, fmt.Errorf("REPO_SERVER_TOOLS=0 is for an Argo CD's repo-server: set ARGOCD_VERSION to one of %s, or leave REPO_SERVER_TOOLS unset", strings.Join(lab.ArgoCDVersions, ", "))
		}
		return cfg, nil
	}
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	var appNamespaces []string
	for _, ns := range strings.FieldsFunc(getenv("APP_NAMESPACES"), func(r rune) bool { return r == ',' || r == ' ' }) {
		appNamespaces = append(appNamespaces, ns)
	}
	cfg.ArgoCD = &lab.ArgoCDConfig{
		Namespace:        "argocd",
		Version:          version,
		Tracking:         getenv("TRACKING"),
		InstanceLabelKey: getenv("INSTANCE_LABEL_KEY"),
		InstallationID:   getenv("INSTALLATION_ID"),
		AppNamespaces:    appNamespaces,
		Server:           server,
		UI:               ui,
		UIRemoteClusters: uiRemote,
		// The ApplicationSet controller's policy, through argocd-cmd-params-cm (lab/appset.go).
		AppSetPolicy:         getenv("APPSET_POLICY"),
		AppSetPolicyOverride: getenv("APPSET_POLICY_OVERRIDE"),
		Notifications:        notifications,
		Hydrator:             hydrator,
		DeletionBudget:       budget,
		NoRepoServerTools:    !repoServerTools,
	}
	return cfg, cfg.ArgoCD.Validate()
}

// onOff reads a switch from the environment; empty means def.
func onOff(getenv func(string) string, name string, def bool) (bool, error) {
	switch strings.ToLower(getenv(name)) {
	case "":
		return def, nil
	case "1", "true", "on", "yes":
		return true, nil
	case "0", "false", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: use on or off (1 or 0)", name, getenv(name))
}
