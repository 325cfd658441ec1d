//go:build lab

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/bench/loop"
)

const runs = 3

var gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// unpruneBinary builds the tool once: the benchmarks time it as users run it, from process start to
// exit, installed (see installed). UNPRUNE_BENCH_BIN names a binary to time instead, such as an
// earlier commit's build, to measure a change against it.
var unpruneBinary = sync.OnceValues(func() (string, error) {
	bin := os.Getenv("UNPRUNE_BENCH_BIN")
	if bin == "" {
		var err error
		if bin, err = build("github.com/unprune/unprune/cmd/unprune"); err != nil {
			return "", err
		}
	}
	return installed(bin)
})

// kubectlBinary is the lab's kubectl, installed as unprune is, so that both contestants' binaries
// are in the same state.
func kubectlBinary(b *testing.B, env *labtest.Env) string {
	b.Helper()
	installedKubectl.Do(func() { installedKubectl.path, installedKubectl.err = installed(env.State.Kubectl) })
	if installedKubectl.err != nil {
		b.Fatal(installedKubectl.err)
	}
	return installedKubectl.path
}

var installedKubectl struct {
	sync.Once
	path string
	err  error
}

// installed copies a binary to a new file with plain writes, as an installation writes it (a
// release archive unpacked, an image layer extracted), and returns the copy's path. The Go linker
// writes its output through a memory mapping, and the page cache then holds that file in larger
// pieces: a process mapping it faults in more of it at a time. Measured here, unprune version took
// 56 MiB of peak RSS from the linker's file and 39 MiB from a copy of it (kubectl, 50 MiB from
// either). Peak RSS is a figure the benchmarks compare, so each binary they run is such a copy.
func installed(bin string) (string, error) {
	in, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dir, err := os.MkdirTemp("", "unprune-bench-installed-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.Base(bin))
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return path, out.Close()
}

// rusageBinary builds test/bench/rusage, through which every timed process is started: see there
// why a child started by the benchmark itself would report the benchmark's peak RSS as its own.
var rusageBinary = sync.OnceValues(func() (string, error) {
	return build("github.com/unprune/unprune/test/bench/rusage")
})

func build(pkg string) (string, error) {
	dir, err := os.MkdirTemp("", "unprune-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// measurement is one timed process (or loop) run.
type measurement struct {
	// start is when the benchmark started the process, exited when it saw it exit.
	start, exited time.Time
	// took is the process's wall time, from its start to its exit.
	took time.Duration
	// For processes: peak RSS (KiB), CPU time in the kernel and in user space, and the exit code.
	maxRSS    int64
	sys, user time.Duration
	code      int
	stdout    []byte
}

// process runs a command through test/bench/rusage and returns its wall time, peak RSS and CPU
// times. Exit codes 0 and 1 (findings) are outcomes; any other fails the benchmark.
func process(b *testing.B, name string, args ...string) measurement {
	b.Helper()
	wrapper, err := rusageBinary()
	if err != nil {
		b.Fatal(err)
	}
	usageFile := filepath.Join(b.TempDir(), "usage.json")
	cmd := exec.Command(wrapper, append([]string{"-o", usageFile, "--", name}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	m := measurement{start: start, exited: time.Now(), stdout: out.Bytes()}
	data, rerr := os.ReadFile(usageFile)
	var u struct {
		WallNanos, UserNanos, SysNanos, MaxRSSKiB int64
		ExitCode                                  int
	}
	if rerr != nil || json.Unmarshal(data, &u) != nil {
		b.Fatalf("%s %s: %v (no usage recorded)\n%s", filepath.Base(name), strings.Join(args, " "), err, errOut.String())
	}
	m.took, m.user, m.sys = time.Duration(u.WallNanos), time.Duration(u.UserNanos), time.Duration(u.SysNanos)
	m.maxRSS, m.code = u.MaxRSSKiB, u.ExitCode
	if m.code != 0 && m.code != 1 {
		b.Fatalf("%s %s: exit %d\n%s", filepath.Base(name), strings.Join(args, " "), m.code, errOut.String())
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
	return loop.TrackingPatch(s.app, s.namespace, name, s.mode, remove)
}

// seedSet creates n tracked ConfigMaps and an app whose status lists them as requiring pruning.
func seedSet(b *testing.B, env *labtest.Env, dyn dynamic.Interface, mode string, n int) set {
	b.Helper()
	s := set{app: labtest.UniqueName("bench"), namespace: labtest.UniqueName("objects"), mode: mode, argocdNamespace: argocdNamespace}
	if mode == "label" {
		s.argocdNamespace = argocdLabelNamespace
	}
	env.CreateNamespace(b, s.namespace)
	s.names = loop.Names(n)
	rows := make([]any, n)
	for i := range n {
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

// patchLoop is the API server's limit for this work: package loop in the benchmark's own process, its
// client and connection warm from earlier runs.
func patchLoop(b *testing.B, dyn dynamic.Interface, s set, remove bool) time.Duration {
	b.Helper()
	start := time.Now()
	if err := loop.Patch(context.Background(), dyn, s.namespace, s.names, func(name string) []byte { return s.track(name, remove) }); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// patchLoopProcess is the same loop as a process of its own (command patchloop), timed from its
// start to its exit as unprune is: what a user's script costs.
func patchLoopProcess(b *testing.B, env *labtest.Env, s set, remove bool) measurement {
	b.Helper()
	bin, err := patchLoopBinary()
	if err != nil {
		b.Fatal(err)
	}
	return process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--namespace", s.namespace, "--app", s.app, "--mode", s.mode,
		"--count", fmt.Sprint(len(s.names)), fmt.Sprintf("--remove=%t", remove))
}

var patchLoopBinary = sync.OnceValues(func() (string, error) {
	bin, err := build("github.com/unprune/unprune/test/bench/patchloop")
	if err != nil {
		return "", err
	}
	return installed(bin)
})

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
//   - a plain client-go merge-patch loop, 32 workers, no rate limit (package loop), as a process of
//     its own timed from start to exit as unprune is (command patchloop): the goal's baseline, what a
//     script doing only the patches costs;
//   - the same loop inside the benchmark's process, its connection warm: the API server's limit;
//   - kubectl annotate|label --all (one process, not selective: it touches every object);
//   - unprune undo of the detach's journal, against both loops putting the metadata back.
//
// It prints min / median / max of the ratios over its runs, and unprune's peak RSS.
func BenchmarkDetachAtScale(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	dyn := unlimited(b, env)
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"annotation", "label"} {
			b.Run(fmt.Sprintf("objects=%d/tracking=%s", n, mode), func(b *testing.B) {
				var detachVsLoop, detachVsLimit, detachVsKubectl, undoVsLoop, undoVsLimit stats
				var detachSecs, loopSecs, limitSecs, undoSecs stats
				var rss int64
				// unprune's, the in-process loop's, kubectl's and the loop process's.
				var sets [4]set
				for i := range sets {
					sets[i] = seedSet(b, env, dyn, mode, n)
				}
				b.ResetTimer()
				// The machine is noisy and a run can pay for the work just before it: each run turns
				// the order of unprune and its baselines, and the cheaper 1,000-object cases run 5
				// times.
				repeat := runs
				if n <= 1000 {
					repeat = 5
				}
				for run := range repeat {
					journals := b.TempDir()
					var d, u, script, restoreScript measurement
					var limit, restoreLimit time.Duration
					alternate(run,
						func() {
							d = process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "--argocd-namespace", sets[0].argocdNamespace,
								"detach", sets[0].app, "--all", "--yes", "--wait=false")
						},
						func() { script = patchLoopProcess(b, env, sets[3], true) },
						func() { limit = patchLoop(b, dyn, sets[1], true) })
					k := kubectlAll(b, env, sets[2])
					paths, _ := filepath.Glob(filepath.Join(journals, "*.json"))
					if len(paths) != 1 {
						b.Fatalf("journals %v", paths)
					}
					alternate(run,
						func() {
							u = process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", journals, "undo", paths[0], "--yes")
						},
						func() { restoreScript = patchLoopProcess(b, env, sets[3], false) },
						func() { restoreLimit = patchLoop(b, dyn, sets[1], false) })
					patchLoop(b, dyn, sets[2], false)
					detachVsLoop = append(detachVsLoop, d.took.Seconds()/script.took.Seconds())
					detachVsLimit = append(detachVsLimit, d.took.Seconds()/limit.Seconds())
					detachVsKubectl = append(detachVsKubectl, d.took.Seconds()/k.Seconds())
					undoVsLoop = append(undoVsLoop, u.took.Seconds()/restoreScript.took.Seconds())
					undoVsLimit = append(undoVsLimit, u.took.Seconds()/restoreLimit.Seconds())
					detachSecs, undoSecs = append(detachSecs, d.took.Seconds()), append(undoSecs, u.took.Seconds())
					loopSecs, limitSecs = append(loopSecs, script.took.Seconds()), append(limitSecs, limit.Seconds())
					rss = max(rss, d.maxRSS, u.maxRSS)
				}
				b.ReportMetric(detachVsLoop.median(), "detach/loop")
				b.ReportMetric(undoVsLoop.median(), "undo/loop")
				b.ReportMetric(detachVsLimit.median(), "detach/in-process-loop")
				b.ReportMetric(detachVsKubectl.median(), "detach/kubectl")
				b.ReportMetric(float64(rss)/1024, "MiB-peak-rss")
				fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs\n", b.Name(), len(detachSecs))
				fmt.Fprintf(os.Stdout, "  %-36s %s s\n", "unprune detach --wait=false", detachSecs)
				fmt.Fprintf(os.Stdout, "  %-36s %s s\n", "patch loop, its own process", loopSecs)
				fmt.Fprintf(os.Stdout, "  %-36s %s s\n", "patch loop in the benchmark", limitSecs)
				fmt.Fprintf(os.Stdout, "  %-36s %s s\n", "unprune undo", undoSecs)
				fmt.Fprintf(os.Stdout, "  %-36s %s  (goal ≤ 1.1)\n", "detach ÷ loop process", detachVsLoop)
				fmt.Fprintf(os.Stdout, "  %-36s %s  (goal ≤ 1.1)\n", "undo ÷ loop process", undoVsLoop)
				fmt.Fprintf(os.Stdout, "  %-36s %s\n", "detach ÷ loop in the benchmark", detachVsLimit)
				fmt.Fprintf(os.Stdout, "  %-36s %s\n", "undo ÷ loop in the benchmark", undoVsLimit)
				fmt.Fprintf(os.Stdout, "  %-36s %s\n", "detach ÷ kubectl --all", detachVsKubectl)
				fmt.Fprintf(os.Stdout, "  %-36s %.0f MiB\n", "unprune peak RSS", float64(rss)/1024)
			})
		}
	}
}

// alternate runs steps one after the other, in an order that turns with run: run 0 as given, run 1
// from the second step on, and so on. The machine is noisy and a step can pay for the work just
// before it (the API server's garbage collection, etcd's compaction): no contestant always goes
// first.
func alternate(run int, steps ...func()) {
	for k := range steps {
		steps[(run+k)%len(steps)]()
	}
}

// pair measures unprune and its baseline one after the other, unprune first in even runs.
func pair[U, B any](run int, unprune func() U, baseline func() B) (u U, base B) {
	alternate(run, func() { u = unprune() }, func() { base = baseline() })
	return u, base
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
	return process(b, kubectlBinary(b, env), args...).took
}

// BenchmarkScanAtScale scans 2,000 and 5,000 Applications of 50 status rows each, every row
// requiring pruning of a ConfigMap that exists and carries the app's tracking-id (100,000 and
// 250,000 rows), with the built binary, against kubectl get applications -A -o json: both list the
// same Applications (a label only the benchmark's apps carry) and both print every row, in an order
// that turns with the run. Each output is parsed and counted against what was seeded.
// UNPRUNE_BENCH_BEFORE names an earlier build of unprune to time in the same rotation.
//
// It prints min / median / max of the wall-time and peak-RSS ratios, and the CPU times.
func BenchmarkScanAtScale(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	kube := unlimitedKube(b, env)
	selector := "unprune.dev/bench=" + labtest.UniqueName("scan")
	namespaces := make([]string, 40)
	for i := range namespaces {
		namespaces[i] = labtest.UniqueName("scan")
		env.CreateNamespace(b, namespaces[i])
	}
	const repeat = 5
	seeded := 0
	for _, apps := range []int{2000, 5000} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			// Seeded here, so that -bench 'ScanAtScale/apps=2000' seeds no more than it measures.
			start := time.Now()
			seedScanApps(b, env, kube, selector, namespaces, seeded, apps)
			seeded = apps
			fmt.Fprintf(os.Stdout, "\nseeded %d Applications × %d rows in %.0fs\n", apps, scanRows, time.Since(start).Seconds())
			cs := scanContestants(b, env, bin, selector, apps)
			b.ResetTimer()
			for run := range repeat {
				steps := make([]func(), len(cs))
				for i, c := range cs {
					steps[i] = func() { c.last = c.measure() }
				}
				alternate(run, steps...)
				for _, c := range cs {
					c.compare(cs[0].last)
				}
			}
			profileScan(b, env, selector)
			b.ReportMetric(cs[1].wallRatio.median(), "scan/kubectl")
			b.ReportMetric(cs[1].rssRatio.median(), "rss-scan/kubectl")
			fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs, %d rows\n", b.Name(), repeat, apps*scanRows)
			for _, c := range cs {
				c.print(os.Stdout, cs[0].name)
			}
		})
	}
}

// scanContestants are kubectl (first: the baseline), the built unprune, and the earlier build
// UNPRUNE_BENCH_BEFORE names, if any.
func scanContestants(b *testing.B, env *labtest.Env, bin, selector string, apps int) []*contestant {
	b.Helper()
	scan := func(bin string) func() measurement {
		return func() measurement {
			return process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(), "--argocd-namespace", argocdScanNamespace,
				"scan", "-A", "-l", selector, "-o", "json")
		}
	}
	cs := []*contestant{
		{name: "kubectl get applications -A -o json", run: func() measurement {
			return process(b, kubectlBinary(b, env), "--kubeconfig", env.State.Kubeconfig, "get", "applications.argoproj.io", "-A", "-l", selector, "-o", "json")
		}, check: func(out []byte) { checkKubectlApps(b, out, apps) }},
		{name: "unprune scan -A -o json", run: scan(bin), check: func(out []byte) { checkScan(b, out, apps) }},
	}
	if before := os.Getenv("UNPRUNE_BENCH_BEFORE"); before != "" {
		cs = append(cs, &contestant{name: "unprune scan, " + before, run: scan(before), check: func(out []byte) { checkScan(b, out, apps) }})
	}
	return cs
}

// contestant is one command a benchmark times, and what its runs measured.
type contestant struct {
	name  string
	run   func() measurement
	check func(stdout []byte)
	last  measurement
	// Over the runs: wall time, CPU times and peak RSS, and wall time and peak RSS divided by the
	// baseline's in the same run.
	secs, user, sys, rssMiB stats
	wallRatio, rssRatio     stats
}

func (c *contestant) measure() measurement {
	m := c.run()
	c.check(m.stdout)
	m.stdout = nil // checked: the next runs need not hold it
	c.secs, c.user, c.sys = append(c.secs, m.took.Seconds()), append(c.user, m.user.Seconds()), append(c.sys, m.sys.Seconds())
	c.rssMiB = append(c.rssMiB, float64(m.maxRSS)/1024)
	return m
}

func (c *contestant) compare(base measurement) {
	c.wallRatio = append(c.wallRatio, c.last.took.Seconds()/base.took.Seconds())
	c.rssRatio = append(c.rssRatio, float64(c.last.maxRSS)/float64(base.maxRSS))
}

func (c *contestant) print(w io.Writer, base string) {
	fmt.Fprintf(w, "  %s\n", c.name)
	fmt.Fprintf(w, "    %-30s %s s\n", "wall time", c.secs)
	fmt.Fprintf(w, "    %-30s %s s\n", "user CPU", c.user)
	fmt.Fprintf(w, "    %-30s %s s\n", "system CPU", c.sys)
	fmt.Fprintf(w, "    %-30s %s MiB\n", "peak RSS", c.rssMiB)
	if c.name != base {
		fmt.Fprintf(w, "    %-30s %s  (goal ≤ 1)\n", "wall time ÷ "+strings.Fields(base)[0]+"'s", c.wallRatio)
		fmt.Fprintf(w, "    %-30s %s  (goal ≤ 1)\n", "peak RSS ÷ "+strings.Fields(base)[0]+"'s", c.rssRatio)
	}
}

// scanRows is the number of status rows of each scanned Application, all requiring pruning.
const scanRows = 50

// checkScan fails unless unprune's report lists every seeded app and row, each with its live
// object read and tracked.
func checkScan(b *testing.B, out []byte, apps int) {
	b.Helper()
	var doc printer.ScanReport
	if err := json.Unmarshal(out, &doc); err != nil {
		b.Fatalf("unprune scan output: %v", err)
	}
	sum := doc.Summary
	if sum.ApplicationsScanned != apps || sum.StuckApplications != apps || sum.Resources != apps*scanRows || len(doc.Items) != apps*scanRows {
		b.Fatalf("unprune scan: %d apps scanned, %d stuck, %d resources, %d items; seeded %d apps × %d rows",
			sum.ApplicationsScanned, sum.StuckApplications, sum.Resources, len(doc.Items), apps, scanRows)
	}
	for _, it := range doc.Items {
		if it.Error != "" || it.ModelMismatch || len(it.Tracking) == 0 {
			b.Fatalf("unprune scan: %s of %s not read as tracked: %+v", it.Resource, it.Application.Name, it)
		}
	}
}

// checkKubectlApps fails unless kubectl's list holds every seeded app and row.
func checkKubectlApps(b *testing.B, out []byte, apps int) {
	b.Helper()
	var list struct {
		Items []struct {
			Status struct {
				Resources []struct {
					RequiresPruning bool `json:"requiresPruning"`
				} `json:"resources"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		b.Fatalf("kubectl output: %v", err)
	}
	rows := 0
	for _, it := range list.Items {
		for _, r := range it.Status.Resources {
			if r.RequiresPruning {
				rows++
			}
		}
	}
	if len(list.Items) != apps || rows != apps*scanRows {
		b.Fatalf("kubectl: %d apps, %d rows requiring pruning; seeded %d apps × %d rows", len(list.Items), rows, apps, scanRows)
	}
}

// unlimitedKube is a typed client speaking protobuf, with no client-side rate limit: seeding
// hundreds of thousands of ConfigMaps is bound by the API server alone.
func unlimitedKube(b *testing.B, env *labtest.Env) kubernetes.Interface {
	b.Helper()
	cfg := rest.CopyConfig(env.REST)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// seedScanApps adds Applications [from, to) carrying selector's label: scanRows rows each, all
// requiring pruning of ConfigMaps created here with the app's tracking-id, spread over the
// namespaces. The status is seeded directly: this measures scan's reading, not Argo CD.
func seedScanApps(b *testing.B, env *labtest.Env, kube kubernetes.Interface, selector string, namespaces []string, from, to int) {
	b.Helper()
	key, value, _ := strings.Cut(selector, "=")
	forEach(b, (to-from)*scanRows, func(k int) error {
		i, r := from+k/scanRows, k%scanRows
		app, ns := fmt.Sprintf("scan-%05d", i), namespaces[i%len(namespaces)]
		name := fmt.Sprintf("%s-%02d", app, r)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": fmt.Sprintf("%s:/ConfigMap:%s/%s", app, ns, name)}}}
		_, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
	dyn := unlimited(b, env)
	forEach(b, to-from, func(k int) error {
		i := from + k
		app, ns := fmt.Sprintf("scan-%05d", i), namespaces[i%len(namespaces)]
		rows := make([]any, scanRows)
		for r := range rows {
			rows[r] = map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": fmt.Sprintf("%s-%02d", app, r),
				"status": "OutOfSync", "requiresPruning": true}
		}
		application := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": app, "namespace": argocdScanNamespace, "labels": map[string]any{key: value}},
			"spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}},
			"status": map[string]any{"sync": map[string]any{"status": "OutOfSync"}, "resources": rows},
		}}
		_, err := dyn.Resource(labtest.GVRApplication).Namespace(argocdScanNamespace).Create(context.Background(), application, metav1.CreateOptions{})
		return err
	})
}

// profileScan runs the scan once more in process, when UNPRUNE_BENCH_PROFILE names a directory, and
// writes a CPU profile and an allocation profile there (go tool pprof), with the peak heap seen.
func profileScan(b *testing.B, env *labtest.Env, selector string) {
	b.Helper()
	dir := os.Getenv("UNPRUNE_BENCH_PROFILE")
	if dir == "" {
		return
	}
	base := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "-"))
	cpu, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		b.Fatal(err)
	}
	defer cpu.Close()
	runtime.GC()
	peak, stop := heapPeak()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cli.Execute(context.Background(), "unprune", []string{"--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(),
		"--argocd-namespace", argocdScanNamespace, "scan", "-A", "-l", selector, "-o", "json"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	pprof.StopCPUProfile()
	stop()
	if code != cli.ExitFindings {
		b.Fatalf("in-process scan exit %d\n%s", code, errOut.String())
	}
	mem, err := os.Create(base + ".alloc.pprof")
	if err != nil {
		b.Fatal(err)
	}
	defer mem.Close()
	if err := pprof.Lookup("allocs").WriteTo(mem, 0); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "  profiles in %s.{cpu,alloc}.pprof; in-process peak heap %.0f MiB\n", base, float64(*peak)/(1<<20))
}

// heapPeak samples the heap in use every 10 ms until stop is called.
func heapPeak() (*uint64, func()) {
	var peak uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return &peak, func() { close(done); <-finished }
}
