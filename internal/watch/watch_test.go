package watch

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
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

func TestLRUBoundAndTTL(t *testing.T) {
	now := time.Unix(0, 0)
	c := newLRU[int](2, time.Minute, func() time.Time { return now })
	c.put("a", 1)
	c.put("b", 2)
	c.get("a") // a is now the most recently used
	c.put("c", 3)
	if _, ok := c.get("b"); ok || c.len() != 2 {
		t.Fatalf("b should have been evicted (len %d)", c.len())
	}
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatal("a should be kept")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get("a"); ok {
		t.Fatal("a should have expired")
	}
}

// TestLRUBoundByBytes: entries are evicted least recently used first once their bytes exceed the
// bound, whatever their count; a replaced or removed entry gives its bytes back; one entry larger
// than the bound is kept alone rather than refused.
func TestLRUBoundByBytes(t *testing.T) {
	var evicted []string
	c := newLRU[string](100, time.Minute, nil)
	c.evicted = func(k string) { evicted = append(evicted, k) }
	c.limitBytes(10, func(_ string, v string) int64 { return int64(len(v)) })
	c.put("a", "xxxx")
	c.put("b", "xxxx")
	c.get("a")
	c.put("c", "xxxx") // 12 bytes: b, the least recently used, goes
	if fmt.Sprint(evicted) != "[b]" || c.size() != 8 || c.len() != 2 {
		t.Fatalf("evicted %v, %d bytes in %d entries", evicted, c.size(), c.len())
	}
	c.put("a", "x") // replaced: 5 bytes
	c.remove("c")
	if c.size() != 1 || c.len() != 1 {
		t.Fatalf("%d bytes in %d entries after a replacement and a removal", c.size(), c.len())
	}
	c.put("big", "xxxxxxxxxxxxxxxx")
	if _, ok := c.get("big"); !ok || c.len() != 1 || c.size() != 16 {
		t.Fatalf("an entry above the bound: kept %v, %d entries, %d bytes", ok, c.len(), c.size())
	}
}

// TestCompactCachedObjects: a live object is cached without its managedFields and kubectl's
// last-applied copy, which no judgement reads; it is answered with its labels, other annotations,
// owners and state as read, under the ref asked for, and the object read is not changed.
func TestCompactCachedObjects(t *testing.T) {
	read := cluster.Ref{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "web", Name: "x", Namespaced: true}
	o := &cluster.Object{Ref: read, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:        map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations:   map[string]string{argocd.AnnotationLastAppliedConfiguration: strings.Repeat("x", 4096), "argocd.argoproj.io/sync-options": "Prune=false"},
		ManagedFields: []cluster.ManagedFieldsEntry{{Manager: "argocd-controller", FieldsV1: []byte(strings.Repeat("f", 2048))}}}
	m := compactRead(cluster.ReadResult{Object: o})
	asked := read
	asked.Version = "v1beta1"
	got := m.object(asked)
	want := &cluster.Object{Ref: asked, UID: "u-1", ResourceVersion: "7", Owners: []string{"Deployment/web"}, Deleting: true,
		Labels:      map[string]string{"app.kubernetes.io/instance": "web", "team": "a"},
		Annotations: map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cached as %+v, want %+v", got, want)
	}
	got.Labels["team"] = "b"
	if again := m.object(asked); again.Labels["team"] != "a" {
		t.Fatalf("a caller's change reached the cache: %v", again.Labels)
	}
	if o.ManagedFields == nil || len(o.Annotations) != 2 {
		t.Fatalf("the object read was changed: %+v", o)
	}
	for _, o := range []*cluster.Object{
		{Ref: read, UID: "not-a-uuid", ResourceVersion: "1"},
		// Only the annotation is kubectl's copy: a label of that key is kept.
		{Ref: read, UID: "u-3", Labels: map[string]string{argocd.AnnotationLastAppliedConfiguration: "label"}},
		{Ref: read, UID: "0B6E2C1A-3F4D-4E5A-9B8C-7D6E5F4A3B2C", ResourceVersion: "12345678901234567890"},
		{Ref: read, UID: "0b6e2c1a-3f4d-4e5a-9b8c-7d6e5f4a3b2c", Labels: map[string]string{"empty": ""},
			Annotations: map[string]string{"long": strings.Repeat("v", 300), "é/ключ": "ü"}, Content: map[string]any{"kind": "ConfigMap"}},
	} {
		if got := compactRead(cluster.ReadResult{Object: o}).object(read); !reflect.DeepEqual(got, o) {
			t.Errorf("cached %+v as %+v", o, got)
		}
	}
	if absent := compactRead(cluster.ReadResult{Err: errors.New("not found")}).object(asked); absent != nil {
		t.Fatalf("an object that is not there is answered as %+v", absent)
	}
	if bare := compactRead(cluster.ReadResult{Object: &cluster.Object{Ref: read, UID: "u-2"}}).object(read); bare.Labels != nil || bare.Annotations != nil {
		t.Fatalf("an object with no labels nor annotations is answered with %v and %v", bare.Labels, bare.Annotations)
	}
	before, after := readBytes("k", answer[cluster.ReadResult]{value: cluster.ReadResult{Object: o}}), metaBytes("k", answer[liveMeta]{value: m})
	if after*5 > before {
		t.Errorf("estimated %d bytes before, %d after", before, after)
	}
}

func (t *internTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.all)
}

func (t *internTable) has(s string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.index[s]
	return ok
}

// TestCompactKeysPastTheTable: once the interned keys are as many as the table holds, a new key is
// kept with its object and still answered.
func TestCompactKeysPastTheTable(t *testing.T) {
	read := cluster.Ref{Version: "v1", Kind: "ConfigMap", Name: "x"}
	for i := 0; metaKeys.len() < metaKeys.max; i++ {
		metaKeys.append(nil, fmt.Sprintf("filler/%d", i))
	}
	o := &cluster.Object{Ref: read, UID: "u", Labels: map[string]string{"past/the-table": "yes", "filler/0": "interned"}}
	if got := compactRead(cluster.ReadResult{Object: o}).object(read); !reflect.DeepEqual(got, o) {
		t.Fatalf("cached %+v as %+v", o, got)
	}
	if metaKeys.has("past/the-table") || metaKeys.len() != metaKeys.max {
		t.Fatalf("the table grew past its bound: %d keys", metaKeys.len())
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
	w := &watcher{cfg: Config{ArgoCDNamespace: "argocd", Version: &v}, log: &logger{out: &out}}
	w.settingsChanged(&unstructured.Unstructured{Object: map[string]any{"data": map[string]any{argocd.SettingTrackingMethod: "annotation"}}})
	if got := out.String(); !strings.Contains(got, "Argo CD v3.6.1, release line v3.6: rules ") || !strings.Contains(got, "installation-id-when-configured") {
		t.Fatalf("log %q: want the release line and its rules", got)
	}
}
