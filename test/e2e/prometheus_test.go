//go:build lab

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/deploytest"
)

// prometheusJob is the scrape job of the watch as deploy/'s ServiceMonitor names it (the Service's
// app.kubernetes.io/name), which the shipped alerts match.
const prometheusJob = "unprune-watch"

// promServer is a real Prometheus (Debian's package, hack/deps.sh) on loopback, scraping replicas
// every second with deploy/prometheus's rules loaded, evaluated every second.
type promServer struct {
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
}

// startPrometheus runs Prometheus scraping the replicas' metrics as the shipped ServiceMonitor does
// (job unprune-watch, honorLabels), with the rules of the shipped PrometheusRule, and waits until it
// has loaded them and scraped every replica once.
func startPrometheus(t *testing.T, replicas ...*watchProc) *promServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not installed (hack/deps.sh installs Debian's): %v", err)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, shippedRuleGroups(t), 0o644); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, r := range replicas {
		targets = append(targets, r.addr)
	}
	config := map[string]any{
		"global":     map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files": []string{rules},
		"scrape_configs": []any{map[string]any{
			"job_name": prometheusJob, "honor_labels": true, "scrape_timeout": "1s",
			"static_configs": []any{map[string]any{"targets": targets}},
		}},
	}
	raw, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &promServer{addr: freeLoopback(t), log: &syncBuffer{}}
	p.cmd = exec.Command(bin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("--- log of prometheus\n%s", p.log.String())
		}
	})
	labtest.Eventually(t, 60*time.Second, "Prometheus to load the shipped rules and scrape every replica", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", p.log.String())
		default:
		}
		var groups struct {
			Groups []struct {
				Rules []struct{ Name string } `json:"rules"`
			} `json:"groups"`
		}
		if err := p.api("rules", nil, &groups); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, g := range groups.Groups {
			n += len(g.Rules)
		}
		up := p.query(t, `sum(up{job="`+prometheusJob+`"})`)
		return n > 0 && up == fmt.Sprint(len(replicas)), fmt.Sprintf("%d rules, %s targets up", n, up)
	})
	return p
}

// shippedRuleGroups is the spec of deploy/prometheus's PrometheusRule as a Prometheus rule file: what
// the Prometheus Operator hands its Prometheus.
func shippedRuleGroups(t *testing.T) []byte {
	t.Helper()
	rules := deploytest.Kind(deploytest.Build(t, "prometheus"), "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("deploy/prometheus has %d PrometheusRules; want 1", len(rules))
	}
	raw, err := yaml.Marshal(rules[0]["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// freeLoopback is a loopback address with a port nothing listens on now.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// api GETs /api/v1/PATH and decodes its data.
func (p *promServer) api(path string, params url.Values, data any) error {
	u := "http://" + p.addr + "/api/v1/" + path
	if params != nil {
		u += "?" + params.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", path, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

// query is an instant query's single value ("" when it returns nothing).
func (p *promServer) query(t *testing.T, expr string) string {
	t.Helper()
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := p.api("query", url.Values{"query": {expr}}, &data); err != nil {
		return ""
	}
	if len(data.Result) != 1 {
		return ""
	}
	return fmt.Sprint(data.Result[0].Value[1])
}

// promAlert is one of Prometheus's active alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts are the active alerts (pending or firing) named name whose labels include match.
func (p *promServer) alerts(t *testing.T, name string, match map[string]string) ([]promAlert, error) {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	if err := p.api("alerts", nil, &data); err != nil {
		return nil, err
	}
	var out []promAlert
next:
	for _, a := range data.Alerts {
		if a.Labels["alertname"] != name {
			continue
		}
		for k, v := range match {
			if a.Labels[k] != v {
				continue next
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// waitAlert waits until the alert for match is in state ("pending", "firing"), or gone when state
// is "".
func (p *promServer) waitAlert(t *testing.T, timeout time.Duration, name string, match map[string]string, state string) {
	t.Helper()
	what := fmt.Sprintf("%s%v %s", name, match, state)
	if state == "" {
		what = fmt.Sprintf("%s%v gone", name, match)
	}
	labtest.Eventually(t, timeout, what, func() (bool, string) {
		got, err := p.alerts(t, name, match)
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, a := range got {
			states = append(states, a.State)
		}
		if state == "" {
			return len(got) == 0, strings.Join(states, ",")
		}
		return len(got) == 1 && got[0].State == state, strings.Join(states, ",")
	})
}
