//go:build lab

// Package bench measures unprune against the lab's real API server. Every figure is a ratio against a
// baseline measured in the same iteration, on the same machine, so that noisy machines still compare.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab/labtest"
	"github.com/unprune/unprune/test/cmdtest"
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

// BenchmarkDetach releases N namespaces of one app three ways, each on its own freshly seeded set:
//
//   - kubectl: the manual ritual, `kubectl label … app.kubernetes.io/instance-` and
//     `kubectl annotate … argocd.argoproj.io/tracking-id-` per object (the baseline);
//   - unprune with --workers=1;
//   - unprune with its default concurrency.
//
// It reports each one's mean time over its runs and unprune's speed-up over the baseline.
func BenchmarkDetach(b *testing.B) {
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			env := labtest.Get(b)
			var kubectlTotal, serialTotal, concurrentTotal time.Duration
			for range runs {
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

				start := time.Now()
				for _, ns := range sets[0].Namespaces {
					kubectl(b, env, "label", "namespace", ns, "app.kubernetes.io/instance-")
					kubectl(b, env, "annotate", "namespace", ns, "argocd.argoproj.io/tracking-id-")
				}
				kubectlTotal += time.Since(start)

				start = time.Now()
				detach(b, env, sets[1].App, "--workers=1")
				serialTotal += time.Since(start)

				start = time.Now()
				detach(b, env, sets[2].App)
				concurrentTotal += time.Since(start)
			}
			perOp := func(d time.Duration) float64 { return float64(d.Milliseconds()) / runs }
			b.ReportMetric(perOp(kubectlTotal), "ms-kubectl/op")
			b.ReportMetric(perOp(serialTotal), "ms-unprune-serial/op")
			b.ReportMetric(perOp(concurrentTotal), "ms-unprune/op")
			b.ReportMetric(float64(kubectlTotal)/float64(concurrentTotal), "x-faster-than-kubectl")
			b.ReportMetric(float64(serialTotal)/float64(concurrentTotal), "x-concurrency-gain")
		})
	}
}

func kubectl(b *testing.B, env *labtest.Env, args ...string) {
	b.Helper()
	out, err := exec.Command(env.State.Kubectl, append([]string{"--kubeconfig", env.State.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func detach(b *testing.B, env *labtest.Env, app string, extra ...string) {
	b.Helper()
	if r := cmdtest.Run(b, env.State.Kubeconfig, b.TempDir(), append([]string{"detach", app, "--all", "--yes", "--wait=false"}, extra...)...); r.Code != cli.ExitOK {
		b.Fatalf("unprune detach exit %d", r.Code)
	}
}
