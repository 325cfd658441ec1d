package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// unitTests are the alerts' `promtool test rules` unit tests.
const unitTests = "testdata/unprune-watch.test.yaml"

// unitTestFile is what of a promtool unit-test file the coverage check reads.
type unitTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name  string `yaml:"name"`
		Cases []struct {
			EvalTime  model.Duration `yaml:"eval_time"`
			AlertName string         `yaml:"alertname"`
			ExpAlerts []struct {
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestPromtoolRules runs Prometheus's own rule unit tests (`promtool test rules`) on
// deploy/prometheus's rules: each alert's expression over series as the ServiceMonitor scrapes
// them, its `for:` (nothing a minute before it has passed, the alert when it has) and its labels
// and annotations as Alertmanager receives them, templates rendered. promtool is Debian's
// prometheus package (hack/deps.sh, `make deps`); without it this test fails rather than pass
// untested.
func TestPromtoolRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool: %v: run `make deps` (hack/deps.sh installs Debian's prometheus package)", err)
	}
	raw, err := os.ReadFile(unitTests)
	if err != nil {
		t.Fatal(err)
	}
	var tf unitTestFile
	if err := yaml.Unmarshal(raw, &tf); err != nil {
		t.Fatalf("%s: %v", unitTests, err)
	}
	if len(tf.RuleFiles) != 1 {
		t.Fatalf("%s: rule_files %v: want the one file this test writes", unitTests, tf.RuleFiles)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tf.RuleFiles[0]), ruleGroups(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(unitTests)), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, filepath.Base(unitTests))).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", unitTests, err, out)
	}
	t.Logf("promtool test rules:\n%s", out)

	// Every alert is tested at its `for:` and a minute before, its annotations asserted.
	for name, r := range rules(t) {
		forDur := time.Duration(r.For)
		var before, at, annotated bool
		for _, test := range tf.Tests {
			for _, c := range test.Cases {
				if c.AlertName != name {
					continue
				}
				switch d := time.Duration(c.EvalTime); {
				case len(c.ExpAlerts) == 0 && d == forDur-time.Minute:
					before = true
				case len(c.ExpAlerts) > 0 && d == forDur:
					at = true
				}
				for _, a := range c.ExpAlerts {
					annotated = annotated || len(a.ExpAnnotations) == len(r.Annotations)
				}
			}
		}
		if !before || !at || !annotated {
			t.Errorf("%s (for: %s): %s needs a case at %s expecting nothing, one at %s expecting the alert, and its annotations asserted (before %v, at %v, annotated %v)",
				name, forDur, unitTests, forDur-time.Minute, forDur, before, at, annotated)
		}
	}
}
