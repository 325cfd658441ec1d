package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
)

// The watch's metrics its tests read, by name: spelled out, as the dashboards and alerts that read
// them spell them.
const (
	metricPruning    = "unprune_resources_requiring_pruning"
	metricUnguarded  = "unprune_unguarded_prune_candidates"
	metricUnknown    = "unprune_unknown_guard_prune_candidates"
	metricCascade    = "unprune_cascade_high_risk_resources"
	metricLeader     = "unprune_leader"
	metricEventsSent = "unprune_events_total"
	metricInfErrors  = "unprune_informer_errors_total"
	metricInfHealthy = "unprune_informer_healthy"
	metricStale      = "unprune_live_answer_stale_seconds"
)

func ns(name string) argocd.Resource {
	return argocd.Resource{Version: "v1", Kind: "Namespace", Name: name, RequiresPruning: true}
}

func cm(name string) argocd.Resource {
	return argocd.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: name, RequiresPruning: true}
}

func testApp(resources ...argocd.Resource) argocd.Application {
	return argocd.Application{Namespace: "argocd", Name: "app", UID: "uid-1", Project: "default",
		Destination: argocd.Destination{Server: argocd.InClusterServer, Namespace: "team"}, Resources: resources}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/argocd/events":                                     "events",
		"/api/v1/namespaces/argocd/events/x.123":                               "events",
		"/apis/coordination.k8s.io/v1/namespaces/unprune/leases/unprune-watch": "leases.coordination.k8s.io",
		"/api/v1/namespaces/team-a":                                            "namespaces",
		"/api/v1/namespaces":                                                   "namespaces",
		"/apis/argoproj.io/v1alpha1/applications":                              "applications.argoproj.io",
		"/apis/apps/v1/namespaces/a/deployments/d/status":                      "deployments/status.apps",
		"/version": "discovery",
		"/apis":    "discovery",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestAppNamespaces(t *testing.T) {
	// "//" is a glob in Argo CD (util/glob.MatchStringInList: a regular expression needs more than the
	// two slashes), which no namespace matches.
	a := appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd", Patterns: argocd.SplitList(" team-a, team-* ,/^ops-[0-9]+$/, //")}}
	for ns, want := range map[string]bool{"argocd": true, "team-a": true, "team-b": true, "ops-12": true, "ops-x": false, "other": false} {
		if got := a.enabled(ns); got != want {
			t.Errorf("enabled(%s) = %t", ns, got)
		}
	}
	if got := a.informerNamespaces(); fmt.Sprint(got) != "[]" {
		t.Errorf("patterns need a cluster-wide informer, got %q", got)
	}
	literal := appNamespaces{argocd.AppNamespaces{ArgoCD: "argocd", Patterns: []string{"team-a", "team-b"}}}
	if got := literal.informerNamespaces(); fmt.Sprint(got) != "[argocd team-a team-b]" {
		t.Errorf("informer namespaces %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{REST: &rest.Config{}, ArgoCDNamespace: "argocd", LeaderElect: true, LeaseNamespace: "argocd",
			LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod,
			Workers: 1, CacheSize: 1, CacheBytes: 1, CacheTTL: time.Second, Resync: time.Minute}
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("valid config refused: %v", c.Validate())
	}
	for name, edit := range map[string]func(*Config){
		"no cluster":               func(c *Config) { c.REST = nil },
		"no Argo CD namespace":     func(c *Config) { c.ArgoCDNamespace = "" },
		"no lease namespace":       func(c *Config) { c.LeaseNamespace = "" },
		"renew deadline too long":  func(c *Config) { c.RenewDeadline = c.LeaseDuration },
		"retry period not shorter": func(c *Config) { c.RetryPeriod = c.RenewDeadline },
		"no workers":               func(c *Config) { c.Workers = 0 },
		"no cache bytes":           func(c *Config) { c.CacheBytes = 0 },
	} {
		c := good()
		edit(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := good()
	c.LeaderElect, c.LeaseNamespace = false, ""
	if err := c.Validate(); err != nil {
		t.Errorf("without leader election a lease namespace is not needed: %v", err)
	}
}

// TestMemoryLimitFrom: 90% of the container's limit passed by the downward API, unless GOMEMLIMIT
// says otherwise (the runtime has read it); nothing without either; a value that is not bytes is
// refused rather than ignored.
func TestMemoryLimitFrom(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    int64
		wantErr bool
	}{
		{env: map[string]string{MemoryLimitEnv: "1073741824"}, want: 966367641},
		{env: map[string]string{MemoryLimitEnv: "1073741824", "GOMEMLIMIT": "500MiB"}, want: 0},
		{env: map[string]string{}, want: 0},
		{env: map[string]string{MemoryLimitEnv: "1Gi"}, wantErr: true},
		{env: map[string]string{MemoryLimitEnv: "0"}, wantErr: true},
	} {
		got, err := MemoryLimitFrom(func(k string) string { return c.env[k] })
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%v: %d, %v; want %d (error %t)", c.env, got, err, c.want, c.wantErr)
		}
	}
}

// TestGCPercentFrom: the watch collects at DefaultGCPercent unless GOGC says otherwise (the runtime
// has read it, "off" included).
func TestGCPercentFrom(t *testing.T) {
	for env, want := range map[string]int{"": DefaultGCPercent, "200": 0, "off": 0} {
		if got := GCPercentFrom(func(k string) string {
			if k == "GOGC" {
				return env
			}
			return ""
		}); got != want {
			t.Errorf("GOGC=%q: %d, want %d", env, got, want)
		}
	}
}

// TestSettingsLogTheReleaseLine: when argocd-cm is read, the watch logs the settings and, with the
// Argo CD version known, the release line and the version rules it judges with.
func TestSettingsLogTheReleaseLine(t *testing.T) {
	var out strings.Builder
	v := argocd.Version{Major: 3, Minor: 6, Patch: 1}
	mgr := &manager{cfg: Config{ArgoCDNamespace: "argocd", Version: &v}, log: &logger{out: &out}}
	mgr.settingsChanged(&unstructured.Unstructured{Object: map[string]any{"data": map[string]any{argocd.SettingTrackingMethod: "annotation"}}})
	if got := out.String(); !strings.Contains(got, "Argo CD v3.6.1, release line v3.6: rules ") || !strings.Contains(got, "installation-id-when-configured") {
		t.Fatalf("log %q: want the release line and its rules", got)
	}
}
