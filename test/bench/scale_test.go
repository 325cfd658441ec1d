//go:build lab

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab/labtest"
)

const runs = 3

var gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// unpruneBinary builds the tool once: the benchmarks time it as users run it, from process start to
// exit.
var unpruneBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "unprune-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "unprune")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/unprune/unprune/cmd/unprune").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// measurement is one timed process (or loop) run.
type measurement struct {
	took   time.Duration
	maxRSS int64 // KiB, for processes
	stdout []byte
}

// process runs a command and returns its wall time and peak RSS.
func process(b *testing.B, name string, args ...string) measurement {
	b.Helper()
	cmd := exec.Command(name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	m := measurement{took: time.Since(start), stdout: out.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.maxRSS = ru.Maxrss
	}
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, errOut.String())
	}
	return m
}

// unlimited is a client with no client-side rate limit: the plain patch loop measures what the API
// server can take, not what a token bucket allows.
func unlimited(b *testing.B, env *labtest.Env) dynamic.Interface {
	b.Helper()
	cfg := rest.CopyConfig(env.REST)
	cfg.QPS, cfg.Burst = -1, 0
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// forEach runs fn for 0..n-1 with 32 workers and fails on the first error.
func forEach(b *testing.B, n int, fn func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// set is a namespace of ConfigMaps tracked by one seeded app, in one tracking mode.
type set struct {
	app, namespace, argocdNamespace, mode string
	names                                 []string
}

func (s set) trackingID(name string) string {
	return fmt.Sprintf("%s:/ConfigMap:%s/%s", s.app, s.namespace, name)
}

// track is the merge patch that puts (or, with remove, takes away) the tracking metadata of name.
func (s set) track(name string, remove bool) []byte {
	var value any = s.app
	id := any(s.trackingID(name))
	if remove {
		value, id = nil, nil
	}
	meta := map[string]any{}
	if s.mode == "label" {
		meta["labels"] = map[string]any{"app.kubernetes.io/instance": value}
	} else {
		meta["annotations"] = map[string]any{"argocd.argoproj.io/tracking-id": id}
	}
	body, _ := json.Marshal(map[string]any{"metadata": meta})
	return body
}

// seedSet creates n tracked ConfigMaps and an app whose status lists them as requiring pruning.
func seedSet(b *testing.B, env *labtest.Env, dyn dynamic.Interface, mode string, n int) set {
	b.Helper()
	s := set{app: labtest.UniqueName("bench"), namespace: labtest.UniqueName("objects"), mode: mode, argocdNamespace: argocdNamespace}
	if mode == "label" {
		s.argocdNamespace = argocdLabelNamespace
	}
	env.CreateNamespace(b, s.namespace)
	s.names = make([]string, n)
	rows := make([]any, n)
	for i := range n {
		s.names[i] = fmt.Sprintf("cm-%05d", i)
		rows[i] = map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": s.namespace, "name": s.names[i], "status": "OutOfSync", "requiresPruning": true}
	}
	forEach(b, n, func(i int) error {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": s.names[i], "namespace": s.namespace}, "data": map[string]any{"k": "v"}}}
		if _, err := dyn.Resource(gvrConfigMap).Namespace(s.namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := dyn.Resource(gvrConfigMap).Namespace(s.namespace).Patch(context.Background(), s.names[i], types.MergePatchType, s.track(s.names[i], false), metav1.PatchOptions{})
		return err
	})
	env.SeedApplication(b, s.argocdNamespace, s.app, map[string]any{}, rows)
	return s
}

// patchLoop is the API server's limit for this work: a plain client-go loop of conditional-free merge
// patches, 32 at a time, no client-side rate limit.
func patchLoop(b *testing.B, dyn dynamic.Interface, s set, remove bool) time.Duration {
	b.Helper()
	start := time.Now()
	forEach(b, len(s.names), func(i int) error {
		_, err := dyn.Resource(gvrConfigMap).Namespace(s.namespace).Patch(context.Background(), s.names[i], types.MergePatchType, s.track(s.names[i], remove), metav1.PatchOptions{})
		return err
	})
	return time.Since(start)
}

// stats is min/median/max of runs.
type stats []float64

func (s stats) String() string {
	c := append(stats(nil), s...)
	sort.Float64s(c)
	return fmt.Sprintf("%.2f / %.2f / %.2f", c[0], c[len(c)/2], c[len(c)-1])
}

func (s stats) median() float64 {
	c := append(stats(nil), s...)
	sort.Float64s(c)
	return c[len(c)/2]
}

// BenchmarkDetachAtScale releases N ConfigMaps of one app (annotation and label tracking) and
// compares, in the same iteration on the same machine:
//
//   - unprune detach --all --yes --wait=false, the built binary, start to exit;
//   - the API server's limit: a plain client-go merge-patch loop, 32 workers, no rate limit;
//   - kubectl annotate|label --all (one process, not selective: it touches every object);
//   - unprune undo of the detach's journal, against the same loop putting the metadata back.
//
// It prints min / median / max of the ratios over its runs, and unprune's peak RSS.
func BenchmarkDetachAtScale(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	dyn := unlimited(b, env)
	for _, n := range []int{1000, 5000} {
		for _, mode := range []string{"annotation", "label"} {
			b.Run(fmt.Sprintf("objects=%d/tracking=%s", n, mode), func(b *testing.B) {
				var detachVsLoop, detachVsKubectl, undoVsLoop, detachSecs, loopSecs, undoSecs stats
				var rss int64
				sets := [3]set{seedSet(b, env, dyn, mode, n), seedSet(b, env, dyn, mode, n), seedSet(b, env, dyn, mode, n)}
				b.ResetTimer()
				// The machine is noisy and a run can pay for the work just before it: each run
				// alternates which of unprune and its baseline goes first, and the cheaper 1,000-object
				// cases run 5 times.
				repeat := runs
				if n <= 1000 {
					repeat = 5
				}
				for run := range repeat {
					journals := b.TempDir()
					detach := func() measurement {
						return process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--argocd-namespace", sets[0].argocdNamespace,
							"detach", sets[0].app, "--all", "--yes", "--wait=false")
					}
					d, loop := pair(run, detach, func() time.Duration { return patchLoop(b, dyn, sets[1], true) })
					k := kubectlAll(b, env, sets[2])
					paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
					if len(paths) != 1 {
						b.Fatalf("journals %v", paths)
					}
					undo := func() measurement {
						return process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "undo", paths[0], "--yes")
					}
					u, restore := pair(run, undo, func() time.Duration { return patchLoop(b, dyn, sets[1], false) })
					patchLoop(b, dyn, sets[2], false)
					detachVsLoop = append(detachVsLoop, d.took.Seconds()/loop.Seconds())
					detachVsKubectl = append(detachVsKubectl, d.took.Seconds()/k.Seconds())
					undoVsLoop = append(undoVsLoop, u.took.Seconds()/restore.Seconds())
					detachSecs, loopSecs, undoSecs = append(detachSecs, d.took.Seconds()), append(loopSecs, loop.Seconds()), append(undoSecs, u.took.Seconds())
					rss = max(rss, d.maxRSS, u.maxRSS)
				}
				b.ReportMetric(detachVsLoop.median(), "detach/loop")
				b.ReportMetric(undoVsLoop.median(), "undo/loop")
				b.ReportMetric(detachVsKubectl.median(), "detach/kubectl")
				b.ReportMetric(float64(rss)/1024, "MiB-peak-rss")
				fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs\n", b.Name(), len(detachSecs))
				fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune detach --wait=false", detachSecs)
				fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "plain patch loop (32 workers)", loopSecs)
				fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune undo", undoSecs)
				fmt.Fprintf(os.Stdout, "  %-32s %s  (goal ≤ 1.5)\n", "detach ÷ loop", detachVsLoop)
				fmt.Fprintf(os.Stdout, "  %-32s %s  (goal ≤ 1.5)\n", "undo ÷ loop", undoVsLoop)
				fmt.Fprintf(os.Stdout, "  %-32s %s\n", "detach ÷ kubectl --all", detachVsKubectl)
				fmt.Fprintf(os.Stdout, "  %-32s %.0f MiB\n", "unprune peak RSS", float64(rss)/1024)
			})
		}
	}
}

// pair measures unprune and its baseline one after the other, unprune first in even runs.
func pair(run int, unprune func() measurement, baseline func() time.Duration) (measurement, time.Duration) {
	if run%2 == 0 {
		m := unprune()
		return m, baseline()
	}
	d := baseline()
	return unprune(), d
}

// kubectlAll removes the tracking metadata from every ConfigMap of the namespace with one kubectl.
func kubectlAll(b *testing.B, env *labtest.Env, s set) time.Duration {
	b.Helper()
	args := []string{"--kubeconfig", env.State.Kubeconfig, "-n", s.namespace}
	if s.mode == "label" {
		args = append(args, "label", "configmaps", "--all", "app.kubernetes.io/instance-")
	} else {
		args = append(args, "annotate", "configmaps", "--all", "argocd.argoproj.io/tracking-id-")
	}
	return process(b, env.State.Kubectl, args...).took
}

// BenchmarkScanAtScale scans 500, 1000 and 2000 Applications of 50 status rows each, 5 of them
// requiring pruning (live ConfigMaps), against kubectl get applications -A -o json.
func BenchmarkScanAtScale(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	dyn := unlimited(b, env)
	seeded := 0
	namespaces := make([]string, 40)
	for i := range namespaces {
		namespaces[i] = labtest.UniqueName("scan")
		env.CreateNamespace(b, namespaces[i])
	}
	for _, apps := range []int{500, 1000, 2000} {
		seedScanApps(b, env, dyn, namespaces, seeded, apps)
		seeded = apps
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			var ratio, rssRatio, scanSecs, kubectlSecs stats
			var scanRSS, kubectlRSS int64
			b.ResetTimer()
			for range runs {
				s := process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(), "--argocd-namespace", argocdScanNamespace, "scan", "-A", "-o", "json")
				k := process(b, env.State.Kubectl, "--kubeconfig", env.State.Kubeconfig, "get", "applications.argoproj.io", "-A", "-o", "json")
				var doc printer.ScanReport
				if err := json.Unmarshal(s.stdout, &doc); err != nil || doc.Summary.ApplicationsScanned < apps || doc.Summary.Resources < apps*5 {
					b.Fatalf("scan found %d apps, %d resources (%v)", doc.Summary.ApplicationsScanned, doc.Summary.Resources, err)
				}
				ratio = append(ratio, s.took.Seconds()/k.took.Seconds())
				rssRatio = append(rssRatio, float64(s.maxRSS)/float64(k.maxRSS))
				scanSecs, kubectlSecs = append(scanSecs, s.took.Seconds()), append(kubectlSecs, k.took.Seconds())
				scanRSS, kubectlRSS = max(scanRSS, s.maxRSS), max(kubectlRSS, k.maxRSS)
			}
			b.ReportMetric(ratio.median(), "scan/kubectl")
			b.ReportMetric(rssRatio.median(), "rss-scan/kubectl")
			fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs\n", b.Name(), runs)
			fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune scan -A -o json", scanSecs)
			fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "kubectl get applications -A -o json", kubectlSecs)
			fmt.Fprintf(os.Stdout, "  %-32s %s  (goal ≤ 1.5)\n", "scan ÷ kubectl", ratio)
			fmt.Fprintf(os.Stdout, "  %-32s %s  (goal ≤ 1)\n", "peak RSS scan ÷ kubectl", rssRatio)
			fmt.Fprintf(os.Stdout, "  %-32s %.0f / %.0f MiB\n", "peak RSS unprune / kubectl", float64(scanRSS)/1024, float64(kubectlRSS)/1024)
		})
	}
}

// seedScanApps adds Applications [from, to): 50 rows each, the first 5 requiring pruning of live
// ConfigMaps spread over the namespaces, the others Synced.
func seedScanApps(b *testing.B, env *labtest.Env, dyn dynamic.Interface, namespaces []string, from, to int) {
	b.Helper()
	forEach(b, to-from, func(k int) error {
		i := from + k
		app := fmt.Sprintf("scan-%05d", i)
		ns := namespaces[i%len(namespaces)]
		var rows []any
		for r := range 50 {
			name := fmt.Sprintf("%s-%02d", app, r)
			row := map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": name, "status": "Synced"}
			if r < 5 {
				row["status"], row["requiresPruning"] = "OutOfSync", true
				cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": name, "namespace": ns,
						"annotations": map[string]any{"argocd.argoproj.io/tracking-id": fmt.Sprintf("%s:/ConfigMap:%s/%s", app, ns, name)}}}}
				if _, err := dyn.Resource(gvrConfigMap).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			rows = append(rows, row)
		}
		application := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": app, "namespace": argocdScanNamespace},
			"spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}},
			"status": map[string]any{"sync": map[string]any{"status": "OutOfSync"}, "resources": rows},
		}}
		_, err := dyn.Resource(labtest.GVRApplication).Namespace(argocdScanNamespace).Create(context.Background(), application, metav1.CreateOptions{})
		return err
	})
}
