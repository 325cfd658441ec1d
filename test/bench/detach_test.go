//go:build lab

// Package bench measures unprune against the lab's real API server. Every figure is a ratio against a
// baseline measured in the same iteration, on the same machine, so that noisy machines still compare.
package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/lab/labtest"
)

// Seeded Argo CD installations (argocd-cm and CRDs, no controller): one per tracking mode the
// benchmarks need, and one for the scan benchmark's thousands of apps alone.
const (
	argocdNamespace      = "argocd"
	argocdLabelNamespace = "argocd-label"
	argocdScanNamespace  = "argocd-scan"
)

func TestMain(m *testing.M) {
	seed := func(ns, method string) func(*labtest.Env) error {
		return func(env *labtest.Env) error {
			return env.SeedArgoCD(context.Background(), ns, "v3.6.1", map[string]string{"application.resourceTrackingMethod": method})
		}
	}
	os.Exit(labtest.Main(m, seed(argocdNamespace, "annotation+label"), seed(argocdLabelNamespace, "label"), seed(argocdScanNamespace, "annotation")))
}

// BenchmarkDetach releases N namespaces of one app three ways, each on its own freshly seeded set,
// each one process started and timed to its exit, in an order that turns with the run:
//
//   - kubectl: one `kubectl patch namespace NS… --type merge` removing the tracking label and
//     annotation, the baseline. It is the manual way done in one process, one merge patch per
//     object, as unprune sends them: like for like, where a kubectl label and a kubectl annotate per
//     object would time 2N process starts instead of the patches. kubectl keeps client-go's default
//     rate limit (5 requests a second after a burst of 10), which is most of its time at 50;
//   - unprune detach with --workers=1, the built binary;
//   - unprune detach with its default concurrency.
//
// Every contestant's outcome is checked: no namespace keeps its tracking metadata. It prints min /
// median / max over the runs and unprune's speed-up over the baseline.
func BenchmarkDetach(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	const repeat = 5 // the sets are small: 5 runs cost little and steady the median
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			env := labtest.Get(b)
			var kubectlSecs, serialSecs, concurrentSecs, speedup, gain stats
			for run := range repeat {
				b.StopTimer()
				sets := make([]labtest.Seeded, 3)
				for s := range sets {
					// The benchmark function runs several times: names must never repeat.
					prefix := labtest.UniqueName("bench")
					names := make([]string, n)
					for k := range names {
						names[k] = fmt.Sprintf("%s-%d", prefix, k)
					}
					sets[s] = env.Seed(b, argocdNamespace, labtest.UniqueName("bench"), names...)
				}
				b.StartTimer()
				var k, serial, concurrent measurement
				alternate(run,
					func() { k = kubectlPatch(b, env, sets[0].Namespaces) },
					func() { serial = detachProcess(b, bin, env, sets[1].App, "--workers=1") },
					func() { concurrent = detachProcess(b, bin, env, sets[2].App) })
				b.StopTimer()
				for _, s := range sets {
					untracked(b, env, s.Namespaces)
				}
				kubectlSecs = append(kubectlSecs, k.took.Seconds())
				serialSecs = append(serialSecs, serial.took.Seconds())
				concurrentSecs = append(concurrentSecs, concurrent.took.Seconds())
				speedup = append(speedup, k.took.Seconds()/concurrent.took.Seconds())
				gain = append(gain, serial.took.Seconds()/concurrent.took.Seconds())
			}
			b.ReportMetric(kubectlSecs.median()*1000, "ms-kubectl/op")
			b.ReportMetric(serialSecs.median()*1000, "ms-unprune-serial/op")
			b.ReportMetric(concurrentSecs.median()*1000, "ms-unprune/op")
			b.ReportMetric(speedup.median(), "x-faster-than-kubectl")
			b.ReportMetric(gain.median(), "x-concurrency-gain")
			fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs, each one process\n", b.Name(), repeat)
			fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "kubectl patch NS… (baseline)", kubectlSecs)
			fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune detach --workers=1", serialSecs)
			fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune detach", concurrentSecs)
			fmt.Fprintf(os.Stdout, "  %-32s %s\n", "kubectl ÷ unprune", speedup)
			fmt.Fprintf(os.Stdout, "  %-32s %s\n", "workers=1 ÷ default", gain)
		})
	}
}

// trackingPatch removes what Argo CD's annotation+label tracking put on a seeded namespace.
const trackingPatch = `{"metadata":{"labels":{"app.kubernetes.io/instance":null},"annotations":{"argocd.argoproj.io/tracking-id":null}}}`

// kubectlPatch is the baseline: one kubectl process patching every namespace.
func kubectlPatch(b *testing.B, env *labtest.Env, namespaces []string) measurement {
	b.Helper()
	args := append([]string{"--kubeconfig", env.State.Kubeconfig, "patch", "namespace"}, namespaces...)
	m := process(b, kubectlBinary(b, env), append(args, "--type", "merge", "-p", trackingPatch)...)
	if m.code != 0 {
		b.Fatalf("kubectl patch exit %d", m.code)
	}
	return m
}

// detachProcess runs the built unprune detach on app, without the wait for Argo CD (no controller
// runs here), and fails unless it exits 0.
func detachProcess(b *testing.B, bin string, env *labtest.Env, app string, extra ...string) measurement {
	b.Helper()
	args := append([]string{"--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(), "--argocd-namespace", argocdNamespace,
		"detach", app, "--all", "--yes", "--wait=false"}, extra...)
	m := process(b, bin, args...)
	if m.code != 0 {
		b.Fatalf("unprune detach %s exit %d", app, m.code)
	}
	return m
}

// untracked fails unless every namespace has lost its tracking-id and instance label.
func untracked(b *testing.B, env *labtest.Env, namespaces []string) {
	b.Helper()
	for _, name := range namespaces {
		ns, err := env.Kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if id, ok := ns.Annotations["argocd.argoproj.io/tracking-id"]; ok {
			b.Fatalf("namespace %s still carries tracking-id %q", name, id)
		}
		if inst, ok := ns.Labels["app.kubernetes.io/instance"]; ok {
			b.Fatalf("namespace %s still carries app.kubernetes.io/instance=%q", name, inst)
		}
	}
}
