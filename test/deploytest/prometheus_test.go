package deploytest

import (
	"fmt"
	"regexp"
	"testing"
)

// scrapeJob is the job label the Prometheus Operator gives the targets of a ServiceMonitor's Service:
// the value of the Service's label named by spec.jobLabel when it has one, else the Service's name
// (the operator's generated relabelings). It also checks what makes the Service a target at all: the
// selector matches its labels, it is in the ServiceMonitor's namespace, and it has the endpoint's port.
func scrapeJob(t *testing.T, sm, svc map[string]any) string {
	t.Helper()
	spec := sm["spec"].(map[string]any)
	meta := svc["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
	for k, v := range sel {
		if labels[k] != v {
			t.Fatalf("the ServiceMonitor selects %s=%v; the Service has %v", k, v, labels)
		}
	}
	if spec["namespaceSelector"] == nil && sm["metadata"].(map[string]any)["namespace"] != meta["namespace"] {
		t.Fatalf("the ServiceMonitor (namespace %v) looks only in its own namespace; the Service is in %v", sm["metadata"].(map[string]any)["namespace"], meta["namespace"])
	}
	ports := map[any]bool{}
	for _, p := range asSlice(svc["spec"].(map[string]any)["ports"]) {
		ports[p.(map[string]any)["name"]] = true
	}
	for _, e := range asSlice(spec["endpoints"]) {
		if !ports[e.(map[string]any)["port"]] {
			t.Fatalf("endpoint port %v: the Service has no such port", e.(map[string]any)["port"])
		}
	}
	if key, ok := spec["jobLabel"].(string); ok {
		if v, ok := labels[key].(string); ok && v != "" {
			return v
		}
	}
	return meta["name"].(string)
}

// upJobRE finds the job an expression's up{…} selector matches.
var upJobRE = regexp.MustCompile(`\bup\{[^}]*\bjob="([^"]+)"`)

// alertExpr returns a PrometheusRule's alert's expression.
func alertExpr(t *testing.T, rule map[string]any, alert string) string {
	t.Helper()
	for _, g := range asSlice(rule["spec"].(map[string]any)["groups"]) {
		for _, r := range asSlice(g.(map[string]any)["rules"]) {
			if r := r.(map[string]any); r["alert"] == alert {
				return fmt.Sprint(r["expr"])
			}
		}
	}
	t.Fatalf("no alert %s", alert)
	return ""
}

// TestServiceMonitorHonorsLabels: every endpoint keeps the exposed `namespace` label (the
// Application's), which Prometheus would otherwise rename exported_namespace and replace with the
// pod's, folding team-a/web and team-b/web into one series.
func TestServiceMonitorHonorsLabels(t *testing.T) {
	sms := Kind(Build(t, "base", "components:", "  - DEPLOYcomponents/servicemonitor"), "ServiceMonitor")
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors", len(sms))
	}
	eps := asSlice(sms[0]["spec"].(map[string]any)["endpoints"])
	if len(eps) == 0 {
		t.Fatal("no endpoints")
	}
	for _, e := range eps {
		if e.(map[string]any)["honorLabels"] != true {
			t.Errorf("endpoint %v: honorLabels is not true", e)
		}
	}
}

// TestWatchDownSurvivesNamePrefix: in an overlay with a namePrefix (and another namespace), the job
// the Prometheus Operator gives the watch's targets is still the one UnpruneWatchDown's up{…}
// matches — with the job taken from the Service's name, it would read x-unprune-watch-metrics and
// the alert would fire for ever.
func TestWatchDownSurvivesNamePrefix(t *testing.T) {
	for _, overlay := range [][]string{
		nil,
		{"namespace: team-argocd", "namePrefix: x-", "nameSuffix: -prod"},
	} {
		objs := Build(t, "base", append(append([]string{}, overlay...), "components:", "  - DEPLOYcomponents/servicemonitor")...)
		sms, svcs := Kind(objs, "ServiceMonitor"), Kind(objs, "Service")
		if len(sms) != 1 || len(svcs) != 1 {
			t.Fatalf("%v: %d ServiceMonitors, %d Services", overlay, len(sms), len(svcs))
		}
		job := scrapeJob(t, sms[0], svcs[0])
		rules := Kind(Build(t, "prometheus", overlay...), "PrometheusRule")
		if len(rules) != 1 {
			t.Fatalf("%d PrometheusRules", len(rules))
		}
		expr := alertExpr(t, rules[0], "UnpruneWatchDown")
		m := upJobRE.FindStringSubmatch(expr)
		if m == nil {
			t.Fatalf("UnpruneWatchDown %q: no up{job=…} to match the targets by", expr)
		}
		if m[1] != job {
			t.Errorf("overlay %v: the targets' job is %q, UnpruneWatchDown matches up{job=%q}: it would fire with the watch up", overlay, job, m[1])
		}
	}
}

// TestRuleSelectorLabels: the PrometheusRule and the ServiceMonitor carry the `release` label that
// kube-prometheus-stack's default ruleSelector and serviceMonitorSelector match, and an overlay's
// `labels:` sets it to the user's Helm release.
func TestRuleSelectorLabels(t *testing.T) {
	release := func(objs []map[string]any, kind string) any {
		o := Kind(objs, kind)
		if len(o) != 1 {
			t.Fatalf("%d %ss", len(o), kind)
		}
		labels, _ := o[0]["metadata"].(map[string]any)["labels"].(map[string]any)
		return labels["release"]
	}
	sm := []string{"components:", "  - DEPLOYcomponents/servicemonitor"}
	if got := release(Build(t, "prometheus"), "PrometheusRule"); got != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule: release=%v, want kube-prometheus-stack (the chart's usual release name)", got)
	}
	if got := release(Build(t, "base", sm...), "ServiceMonitor"); got != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor: release=%v, want kube-prometheus-stack", got)
	}
	mine := []string{"labels:", "  - pairs:", "      release: monitoring"}
	if got := release(Build(t, "prometheus", mine...), "PrometheusRule"); got != "monitoring" {
		t.Errorf("PrometheusRule in an overlay with labels release: monitoring: release=%v", got)
	}
	if got := release(Build(t, "base", append(mine, sm...)...), "ServiceMonitor"); got != "monitoring" {
		t.Errorf("ServiceMonitor in an overlay with labels release: monitoring: release=%v", got)
	}
}
