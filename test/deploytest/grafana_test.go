package deploytest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGrafanaDashboardConfigMap: deploy/grafana is one ConfigMap, with the label kube-prometheus-stack's
// Grafana sidecar loads dashboards from and the dashboard file as it is, under a stable name (a
// hashed one would leave the old copy behind) and in the namespace the user applies it to (Grafana's).
func TestGrafanaDashboardConfigMap(t *testing.T) {
	for _, overlay := range [][]string{nil, {"namespace: monitoring"}} {
		objs := Build(t, "grafana", overlay...)
		if len(objs) != 1 || objs[0]["kind"] != "ConfigMap" {
			t.Fatalf("%v: deploy/grafana builds %d objects; want one ConfigMap", overlay, len(objs))
		}
		meta := objs[0]["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels["grafana_dashboard"] != "1" || meta["name"] != "unprune-watch-dashboard" {
			t.Errorf("%v: ConfigMap %v with labels %v: want unprune-watch-dashboard, grafana_dashboard: \"1\"", overlay, meta["name"], labels)
		}
		var want any // none of its own
		if len(overlay) > 0 {
			want = "monitoring"
		}
		if meta["namespace"] != want {
			t.Errorf("%v: namespace %v, want %v", overlay, meta["namespace"], want)
		}
		raw, err := os.ReadFile(filepath.Join(Dir(), "grafana", "unprune-watch.json"))
		if err != nil {
			t.Fatal(err)
		}
		if data, _ := objs[0]["data"].(map[string]any); data["unprune-watch.json"] != string(raw) {
			t.Errorf("%v: the ConfigMap does not hold unprune-watch.json as it is", overlay)
		}
	}
}
