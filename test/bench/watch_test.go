//go:build lab

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/lab/labtest"
)

// watchRows is the number of status rows of each Application the watch benchmark seeds.
const watchRows = 50

// watchApps is how many Applications BenchmarkWatch seeds: 2,000 unless UNPRUNE_BENCH_WATCH_APPS says.
func watchApps(b *testing.B) int {
	if s := os.Getenv("UNPRUNE_BENCH_WATCH_APPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("UNPRUNE_BENCH_WATCH_APPS=%q", s)
		}
		return n
	}
	return 2000
}

// BenchmarkWatch seeds N Applications × 50 rows requiring pruning of ConfigMaps that exist (as the
// scan benchmark seeds them), runs `unprune watch` and `kubectl get applications -w -o json` side by
// side, then changes one app's status at a time (one row stops or starts requiring pruning) and times,
// from the change, when kubectl prints the changed Application and when the watch's metric for that
// app shows it. The watch is polled every 25 ms, each poll a whole scrape, so its figure carries up to
// a poll's interval and a scrape's duration: it also prints the time to the request of the scrape
// that showed the change, and what one scrape takes alone. It prints median and p95 of each, the
// watch's time to evaluate every app at start, and both peak RSS.
func BenchmarkWatch(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	env := labtest.Get(b)
	apps := watchApps(b)
	ns := labtest.UniqueName("argocd-watch")
	for _, obj := range []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "argocd-cm", "namespace": ns},
			"data": map[string]any{"application.resourceTrackingMethod": "annotation"}},
	} {
		if err := env.Create(context.Background(), obj); err != nil {
			b.Fatal(err)
		}
	}
	namespaces := make([]string, 40)
	for i := range namespaces {
		namespaces[i] = labtest.UniqueName("watch")
		env.CreateNamespace(b, namespaces[i])
	}
	start := time.Now()
	seedWatchApps(b, env, ns, namespaces, apps)
	fmt.Fprintf(os.Stdout, "\nseeded %d Applications × %d rows in %.0fs\n", apps, watchRows, time.Since(start).Seconds())

	w := startBenchWatch(b, bin, env.State.Kubeconfig, ns)
	started := time.Now()
	waitFor(b, 30*time.Minute, "the watch to evaluate every app", func() bool {
		s := w.scrape(b)
		return s["unprune_applications_watched"] == float64(apps) && s["unprune_evaluations_total"] >= float64(apps)
	})
	initial := time.Since(started)
	w.profile(b, "evaluated")
	k := startKubectlWatch(b, env, ns, fmt.Sprintf("watch-%05d", apps-1))
	// What one poll costs on its own: reading and scanning every series, with nothing changing.
	var scrapes []float64
	for range 20 {
		t0 := time.Now()
		w.each(b, func(string) bool { return true })
		scrapes = append(scrapes, time.Since(t0).Seconds())
	}
	b.ResetTimer()
	var watchLat, watchAsked, kubectlLat []float64
	const changes = 20
	for c := range changes {
		app := fmt.Sprintf("watch-%05d", (c/2*97)%apps)
		// Each app twice: one row fewer (49 normal-risk rows requiring pruning), then back to 50.
		want := watchRows - 1
		pruning := c%2 == 1
		if pruning {
			want = watchRows
		}
		key := `unprune_resources_requiring_pruning{application="` + app + `"`
		patch := fmt.Sprintf(`[{"op":"replace","path":"/status/resources/0/requiresPruning","value":%t}]`, pruning)
		seen := k.expect(app, pruning)
		t0 := time.Now()
		if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(ns).Patch(context.Background(), app, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		var asked time.Time
		waitFor(b, time.Minute, app+" in the metrics", func() bool {
			at := time.Now()
			if w.scrapeLine(b, key, `risk="normal"`) != float64(want) {
				return false
			}
			asked = at
			return true
		})
		watchLat = append(watchLat, time.Since(t0).Seconds())
		// The scrape that showed it was asked for then: the metric was set before that (give or take
		// the handler's start), and after the previous poll.
		watchAsked = append(watchAsked, asked.Sub(t0).Seconds())
		select {
		case at := <-seen:
			kubectlLat = append(kubectlLat, at.Sub(t0).Seconds())
		case <-time.After(time.Minute):
			b.Fatalf("kubectl -w never printed %s", app)
		}
	}
	b.StopTimer()
	w.profile(b, "end")
	heap := w.scrape(b)["go_memstats_heap_inuse_bytes"]
	watchRSS, kubectlRSS := peakRSS(b, w.cmd.Process.Pid), peakRSS(b, k.cmd.Process.Pid)
	fmt.Fprintf(os.Stdout, "\n%s: %d apps × %d rows, %d status changes\n", b.Name(), apps, watchRows, changes)
	fmt.Fprintf(os.Stdout, "  %-48s %.1f s\n", "unprune watch: start to every app evaluated", initial.Seconds())
	fmt.Fprintf(os.Stdout, "  %-48s median %.3f s, p95 %.3f s\n", "status change → unprune watch metric", percentile(watchLat, 50), percentile(watchLat, 95))
	fmt.Fprintf(os.Stdout, "  %-48s median %.3f s, p95 %.3f s\n", "  … to the request of the scrape that showed it", percentile(watchAsked, 50), percentile(watchAsked, 95))
	fmt.Fprintf(os.Stdout, "  %-48s median %.3f s, p95 %.3f s\n", "  one scrape of /metrics, nothing changing", percentile(scrapes, 50), percentile(scrapes, 95))
	fmt.Fprintf(os.Stdout, "  %-48s median %.3f s, p95 %.3f s\n", "status change → kubectl get -w -o json prints it", percentile(kubectlLat, 50), percentile(kubectlLat, 95))
	fmt.Fprintf(os.Stdout, "  %-48s %.0f MiB\n", "peak RSS unprune watch", float64(watchRSS)/1024)
	fmt.Fprintf(os.Stdout, "  %-48s %.0f MiB\n", "peak RSS kubectl get -w", float64(kubectlRSS)/1024)
	fmt.Fprintf(os.Stdout, "  %-48s %.0f MiB\n", "unprune watch Go heap in use at the end", heap/(1<<20))
	b.ReportMetric(percentile(watchLat, 50), "watch-median-s")
	b.ReportMetric(percentile(kubectlLat, 50), "kubectl-median-s")
	b.ReportMetric(float64(watchRSS)/1024, "watch-MiB")
}

// seedWatchApps creates n Applications of watchRows rows each, requiring pruning of ConfigMaps
// created with the app's tracking-id, spread over the namespaces. The status is seeded directly.
func seedWatchApps(b *testing.B, env *labtest.Env, argocdNS string, namespaces []string, n int) {
	b.Helper()
	kube := unlimitedKube(b, env)
	forEach(b, n*watchRows, func(k int) error {
		i, r := k/watchRows, k%watchRows
		app, ns := fmt.Sprintf("watch-%05d", i), namespaces[i%len(namespaces)]
		name := fmt.Sprintf("%s-%02d", app, r)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Annotations: map[string]string{"argocd.argoproj.io/tracking-id": fmt.Sprintf("%s:/ConfigMap:%s/%s", app, ns, name)}}}
		_, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
	dyn := unlimited(b, env)
	forEach(b, n, func(i int) error {
		app, ns := fmt.Sprintf("watch-%05d", i), namespaces[i%len(namespaces)]
		rows := make([]any, watchRows)
		for r := range rows {
			rows[r] = map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": fmt.Sprintf("%s-%02d", app, r),
				"status": "OutOfSync", "requiresPruning": true}
		}
		application := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": app, "namespace": argocdNS},
			"spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "file:///nonexistent", "path": "manifests", "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}},
			"status": map[string]any{"sync": map[string]any{"status": "OutOfSync"}, "resources": rows},
		}}
		_, err := dyn.Resource(labtest.GVRApplication).Namespace(argocdNS).Create(context.Background(), application, metav1.CreateOptions{})
		return err
	})
}

type benchWatch struct {
	cmd  *exec.Cmd
	addr string
	// pprof serves the watch's Go profiles when UNPRUNE_BENCH_WATCH_PROFILE names a directory.
	pprof      string
	profileDir string
}

var (
	benchServingRE = regexp.MustCompile(`serving metrics on http://([0-9.:]+)/metrics`)
	benchPprofRE   = regexp.MustCompile(`serving Go profiles on http://([0-9.:]+)/debug/pprof/`)
)

// profile saves the watch's heap profile as DIR/watch-heap-<apps>-<when>.pprof (go tool pprof
// -sample_index=inuse_space), when UNPRUNE_BENCH_WATCH_PROFILE names DIR.
func (w *benchWatch) profile(b *testing.B, when string) {
	if w.profileDir == "" {
		return
	}
	resp, err := http.Get("http://" + w.pprof + "/debug/pprof/heap")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	path := fmt.Sprintf("%s/watch-heap-%d-%s.pprof", w.profileDir, watchApps(b), when)
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "  heap profile: %s\n", path)
}

func startBenchWatch(b *testing.B, bin, kubeconfig, ns string, extra ...string) *benchWatch {
	b.Helper()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--argocd-namespace", ns, "--argocd-version", "v3.6.1",
		"watch", "--leader-elect=false", "--app-namespaces=", "--metrics-bind-address", "127.0.0.1:0"}, extra...)...)
	dir := os.Getenv("UNPRUNE_BENCH_WATCH_PROFILE")
	if dir != "" {
		cmd.Args = append(cmd.Args, "--pprof-bind-address", "127.0.0.1:0")
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	addr, pprofAddr := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := benchServingRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			if m := benchPprofRE.FindStringSubmatch(sc.Text()); m != nil {
				pprofAddr <- m[1]
			}
			if os.Getenv("UNPRUNE_BENCH_VERBOSE") != "" {
				fmt.Fprintln(os.Stderr, "watch:", sc.Text())
			}
		}
	}()
	w := &benchWatch{cmd: cmd, profileDir: dir}
	select {
	case w.addr = <-addr:
	case <-time.After(time.Minute):
		b.Fatal("unprune watch did not start serving metrics")
	}
	if dir != "" {
		select {
		case w.pprof = <-pprofAddr:
		case <-time.After(time.Minute):
			b.Fatal("unprune watch did not start serving profiles")
		}
	}
	return w
}

// scrape returns the unlabelled samples of the watch's metrics.
func (w *benchWatch) scrape(b *testing.B) map[string]float64 {
	out := map[string]float64{}
	w.each(b, func(line string) bool {
		if name, v, ok := strings.Cut(line, " "); ok && !strings.Contains(name, "{") {
			out[name], _ = strconv.ParseFloat(v, 64)
		}
		return true
	})
	return out
}

// scrapeLine returns the value of the first line starting with prefix and containing also; -1 if none.
func (w *benchWatch) scrapeLine(b *testing.B, prefix, also string) float64 {
	v := -1.0
	w.each(b, func(line string) bool {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, also) {
			v, _ = strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return false
		}
		return true
	})
	return v
}

func (w *benchWatch) each(b *testing.B, fn func(string) bool) {
	resp, err := http.Get("http://" + w.addr + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !fn(sc.Text()) {
			_, _ = io.Copy(io.Discard, resp.Body)
			return
		}
	}
}

// kubectlWatch is `kubectl get applications -w -o json` decoding each object it prints.
type kubectlWatch struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	waiting map[string]chan time.Time // app|requiresPruning of row 0 → when seen
}

// startKubectlWatch runs kubectl with --watch-only (at 2,000 apps, kubectl stalled printing the
// initial list as JSON) and returns once it prints a change: the ping annotation of app.
func startKubectlWatch(b *testing.B, env *labtest.Env, ns, app string) *kubectlWatch {
	b.Helper()
	k := &kubectlWatch{waiting: map[string]chan time.Time{}}
	k.cmd = exec.Command(kubectlBinary(b, env), "--kubeconfig", env.State.Kubeconfig, "get", "applications.argoproj.io", "-n", ns,
		"-w", "--watch-only", "--output-watch-events=false", "-o", "json")
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = k.cmd.Process.Kill(); _ = k.cmd.Wait() })
	go k.read(out)
	// kubectl prints nothing until its watch is open: ping until it prints the ping.
	deadline := time.Now().Add(10 * time.Minute)
	for ping := 0; ; ping++ {
		seen := k.expect(app, fmt.Sprint("ping-", ping))
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"unprune.dev/bench-ping":"ping-%d"}}}`, ping)
		if _, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(ns).Patch(context.Background(), app, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-seen:
			return k
		case <-time.After(2 * time.Second):
		}
		if time.Now().After(deadline) {
			b.Fatal("kubectl get -w never printed a change")
		}
	}
}

// read decodes each object kubectl prints and signals who waits for it.
func (k *kubectlWatch) read(out io.Reader) {
	dec := json.NewDecoder(bufio.NewReaderSize(out, 1<<20))
	for {
		var obj struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Status struct {
				Resources []struct {
					RequiresPruning bool `json:"requiresPruning"`
				} `json:"resources"`
			} `json:"status"`
		}
		if err := dec.Decode(&obj); err != nil {
			return
		}
		now := time.Now()
		keys := []string{obj.Metadata.Name + "|" + obj.Metadata.Annotations["unprune.dev/bench-ping"]}
		if len(obj.Status.Resources) > 0 {
			keys = append(keys, fmt.Sprintf("%s|%t", obj.Metadata.Name, obj.Status.Resources[0].RequiresPruning))
		}
		k.mu.Lock()
		for _, key := range keys {
			if ch, ok := k.waiting[key]; ok {
				ch <- now
				delete(k.waiting, key)
			}
		}
		k.mu.Unlock()
	}
}

// expect registers interest in app's next object with state (row 0 requiring pruning: true/false,
// or a ping).
func (k *kubectlWatch) expect(app string, state any) <-chan time.Time {
	ch := make(chan time.Time, 1)
	k.mu.Lock()
	k.waiting[fmt.Sprintf("%s|%v", app, state)] = ch
	k.mu.Unlock()
	return ch
}

func waitFor(b *testing.B, timeout time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// peakRSS reads a running process's peak resident set (VmHWM, KiB).
func peakRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}
