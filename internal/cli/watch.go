package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/session"
	"github.com/unprune/unprune/internal/watch"
)

// WatchOptions are `unprune watch`'s inputs: flags straight into watch.Config.
type WatchOptions struct {
	completed
	genericiooptions.IOStreams

	Config        watch.Config
	appNamespaces []string
	// budget is --deletion-budget; -1 when not given.
	budget int
}

// NewWatchCommand builds `unprune watch`.
func NewWatchCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WatchOptions{IOStreams: streams}
	c := &o.Config
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Serve Prometheus metrics and emit Events about resources a prune would delete (read-only, long-running)",
		Long: `Watch every Argo CD Application and keep, as Prometheus metrics on --metrics-bind-address, how
many of its resources require pruning and how risky their deletion is, how many of those prunes
nothing guards (audit's answer), and how many high-risk resources deleting the app would delete with
it. When a high-risk resource starts requiring pruning, or such a prune loses its last guard, an Event
on the Application says what a prune would delete and the unprune command that releases or guards it.

Read-only: it writes nothing but Events and its Lease. As a daemon sharing the API server with Argo
CD, its requests default to --qps 50 --burst 100 (Argo CD's own controller's client defaults), where
the one-off commands set no client-side limit (--qps -1). Run several replicas with leader election
(--leader-elect, a Lease in -n NAMESPACE): every replica serves metrics, only the leader emits Events.
Out of the cluster it uses your kubeconfig; in a pod, its ServiceAccount. See docs/watch.md and deploy/.

Applications deploying to other clusters are judged there too when the watch can reach them: by
--cluster-context (out of the cluster), or with --cluster-credentials=argocd, the credentials of Argo
CD's cluster Secrets (in a pod: add deploy/components/remote-clusters, which lets the ServiceAccount
read Secrets in Argo CD's namespace). The watch only reads there. Without either, their rows'
guards are unknown (unprune_unknown_guard_prune_candidates), never counted as unguarded. Argo CD's
cluster Secrets are watched: a cluster added, a token rotated or a cluster removed takes effect
without a restart. Each destination's apps are evaluated in a queue of their own, and every request
but the informers' times out after --request-timeout (10s here): a destination that stops answering
leaves its rows as last read (or unknown), and never delays the other apps.`,
		Example: `  # Out of the cluster, one replica, metrics on 127.0.0.1:8080
  unprune watch --argocd-namespace argocd --leader-elect=false

  # As the Deployment in deploy/ runs it
  unprune watch --argocd-namespace argocd --metrics-bind-address :8080 -n unprune

  # Also judge remote destinations, with Argo CD's own cluster credentials
  unprune watch --argocd-namespace argocd --cluster-credentials=argocd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(f, cmd); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&c.MetricsAddr, "metrics-bind-address", watch.DefaultMetricsAddr, "address serving /metrics, /healthz and /readyz (:8080 in a pod)")
	flags.StringVar(&c.PprofAddr, "pprof-bind-address", "", "address serving Go's profiles (/debug/pprof/), apart from the metrics; empty: none (e.g. 127.0.0.1:6060, then kubectl port-forward)")
	flags.StringSliceVar(&o.appNamespaces, "app-namespaces", nil, "namespaces (Argo CD's patterns) of Applications besides Argo CD's own (default: application.namespaces of argocd-cmd-params-cm)")
	flags.BoolVar(&c.LeaderElect, "leader-elect", true, "elect one leader among replicas on a Lease; only the leader emits Events")
	flags.StringVar(&c.LeaseName, "lease-name", watch.DefaultLeaseName, "name of the Lease, in -n NAMESPACE")
	flags.StringVar(&c.Identity, "identity", "", "this replica's name in the Lease (default: $POD_NAME, else the host name)")
	flags.DurationVar(&c.LeaseDuration, "lease-duration", watch.DefaultLeaseDuration, "how long followers wait before taking over a lease that is not renewed")
	flags.DurationVar(&c.RenewDeadline, "renew-deadline", watch.DefaultRenewDeadline, "how long the leader retries renewing before giving up leadership")
	flags.DurationVar(&c.RetryPeriod, "retry-period", watch.DefaultRetryPeriod, "how often to try to acquire or renew the lease")
	flags.DurationVar(&c.Resync, "resync-period", watch.DefaultResync, "re-evaluate every Application about this often (each at its own time, ±20%) even when it did not change")
	flags.DurationVar(&c.WatchTimeout, "watch-timeout", watch.DefaultWatchTimeout, "end each informer's watch within this and watch again, so that a revoked permission shows in unprune_informer_healthy (0: client-go's 5–10m)")
	flags.IntVar(&c.Workers, "workers", watch.DefaultWorkers, "Applications evaluated in parallel")
	flags.IntVar(&c.CacheSize, "live-cache-size", watch.DefaultCacheSize, "live objects' metadata kept in memory at most")
	flags.Int64Var(&c.CacheBytes, "live-cache-bytes", watch.DefaultCacheBytes, "estimated bytes of live objects' metadata kept in memory at most, per destination cluster")
	flags.DurationVar(&c.CacheTTL, "live-cache-ttl", watch.DefaultCacheTTL, "how long a live object read is trusted (a guard added to it shows after at most this)")
	flags.IntVar(&o.budget, "deletion-budget", -1, "serve the deletion budget's admission webhook: the most objects one sync or cascade of Argo CD may delete without approval, and the most Applications an ApplicationSet may delete within "+budget.AppSetWindowText+" (apps, projects and sets may set their own with the annotation "+budget.AnnotationBudget+"); high-risk objects always wait for approval (docs/budget.md). Unset: no webhook")
	flags.StringVar(&c.AdmissionAddr, "admission-bind-address", watch.DefaultAdmissionAddr, "address serving the deletion budget's webhook over TLS (with --deletion-budget)")
	flags.StringVar(&c.TLSCertFile, "tls-cert-file", "", "the webhook's serving certificate (PEM), read again when it changes (with --deletion-budget)")
	flags.StringVar(&c.TLSKeyFile, "tls-private-key-file", "", "the webhook's private key (PEM) (with --deletion-budget)")
	flags.StringSliceVar(&c.BudgetUsers, "deletion-budget-users", nil, "users whose DELETEs the budget judges (default: the ServiceAccounts argocd-application-controller and argocd-applicationset-controller of Argo CD's namespace)")
	flags.BoolVar(&c.CountAllKinds, "count-all-kinds", false, "count Pods, ConfigMaps and Secrets too in a Namespace's contents (needs a cluster-wide list of them: deploy/components/exact-counts); without it an Event's count leaves them out and says so")
	return cmd
}

// complete fills the Config from the global flags and the environment.
func (o *WatchOptions) complete(f Factory, cmd *cobra.Command) error {
	if !f.Capabilities().KubernetesAPI {
		return usageError("unprune watch reads Applications through the Kubernetes API: --via argocd is not supported")
	}
	// The one-off commands set no client-side limit, so that an audit of 2,000 apps finishes in
	// seconds; a process that runs for ever next to Argo CD must not be able to take that share of
	// the API server when its caches are cold or a resync comes round. 50/100 are Argo CD's own
	// application controller's client defaults (ARGOCD_K8S_CLIENT_QPS/BURST).
	err := o.completeWith(f, func(cfg *session.Config) {
		if !flagChanged(cmd.Flags(), "qps") {
			cfg.QPS = watch.DefaultQPS
		}
		if !flagChanged(cmd.Flags(), "burst") {
			cfg.Burst = watch.DefaultBurst
		}
	})
	if err != nil {
		return err
	}
	c := &o.Config
	if flagChanged(cmd.Flags(), "app-namespaces") {
		c.AppNamespaces = append([]string{}, o.appNamespaces...)
	}
	c.Version = o.cfg.ArgoCDVersion
	if flagChanged(cmd.Flags(), "deletion-budget") {
		if o.budget < 0 {
			return usageError("--deletion-budget %d: give the most objects one operation may delete without approval, 0 or more", o.budget)
		}
		n := o.budget
		c.DeletionBudget = &n
	}
	if c.Identity == "" {
		c.Identity = o.session.Getenv("POD_NAME")
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	// With no kubeconfig, client-go falls back to the pod's ServiceAccount, and the namespace to the
	// pod's.
	rest, err := f.ToRESTConfig()
	if err != nil {
		return usageError("cannot build a client from your kubeconfig or the pod's ServiceAccount: %v (set --kubeconfig)", err)
	}
	rest.QPS, rest.Burst = o.cfg.QPS, o.cfg.Burst
	c.REST = rest
	// Every request but the informers' times out: a destination that stops answering must fail its
	// reads, not hold the workers. kubectl's default (none) is the one-off commands'.
	c.RequestTimeout = watch.DefaultRequestTimeout
	if flagChanged(cmd.Flags(), "request-timeout") {
		c.RequestTimeout = o.cfg.RequestTimeout
	}
	c.ClusterContexts, c.ArgoCDCredentials = o.cfg.ClusterContexts, o.cfg.ArgoCDCredentials
	c.FromContext = session.FromContext(o.cfg)
	if c.LeaseNamespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return usageError("the Lease's namespace: %v (set -n)", err)
	}
	c.Log = o.ErrOut
	if c.MemoryLimit, err = watch.MemoryLimitFrom(o.session.Getenv); err != nil {
		return usageError("%v", err)
	}
	c.GCPercent = watch.GCPercentFrom(o.session.Getenv)
	return nil
}

// Run finds Argo CD's namespace when not given and watches until interrupted.
func (o *WatchOptions) Run(ctx context.Context) error {
	o.Config.ArgoCDNamespace = o.cfg.ArgoCDNamespace
	if o.Config.ArgoCDNamespace == "" {
		argo, err := o.session.ArgoCD(ctx)
		if err != nil {
			return failure(err)
		}
		o.Config.ArgoCDNamespace = argo.Namespace()
	}
	if err := watch.Run(ctx, o.Config); err != nil {
		return failure(err)
	}
	return nil
}
