//go:build lab

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// BenchmarkDetachVerify measures the wait after the patches, against a real application
// controller (v3.6.1, annotation tracking): 1,000 ConfigMaps a commit added and a revert removed
// require pruning, and in the same run, on two such apps, in an order that turns with the run,
//
//   - unprune detach --all --yes (the default wait), the built binary, releases one and waits until
//     Argo CD shows it Synced;
//   - the baseline releases the other with the plain patch loop, asks Argo CD to refresh, and polls
//     the Application until it is Synced: the same wait, done by hand.
//
// Both clocks start at the same event, seen by the same observer: a watch on the app's ConfigMaps,
// started before the release, notes when the last of them lost its tracking-id. unprune's clock
// stops when its process exits (it has shown Synced), the baseline's when its poll sees Synced.
// unprune's own elapsedSeconds (from after its journal is written) is printed beside, for reference.
//
// The goal is Synced shown ≤ 3 s after the last patch.
func BenchmarkDetachVerify(b *testing.B) {
	bin, err := unpruneBinary()
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	env := labtest.Get(b)
	install := env.ArgoCD(b, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	dyn := unlimited(b, env)
	var unpruneWait, manualWait, ratio, reported, total stats
	b.ResetTimer()
	for run := range runs {
		ours, theirs := stuckApp(b, install, dyn, n), stuckApp(b, install, dyn, n)
		u, manual := pair(run,
			func() unpruneRun { return unpruneRelease(b, bin, env, install, ours, n) },
			func() time.Duration { return manualRelease(b, env, dyn, theirs, n) })
		var doc printer.ChangeReport
		if err := json.Unmarshal(u.process.stdout, &doc); err != nil || doc.Summary.Applied != n || len(doc.Summary.Applications) != 1 {
			b.Fatalf("detach report: %v applied %d of %d\n%s", err, doc.Summary.Applied, n, u.process.stdout)
		}
		v := doc.Summary.Applications[0].Verification
		if v == nil || !v.Verified || !v.Synced {
			b.Fatalf("detach did not show %s Synced: %+v", ours.Name, v)
		}
		unpruneWait = append(unpruneWait, u.wait.Seconds())
		manualWait = append(manualWait, manual.Seconds())
		ratio = append(ratio, u.wait.Seconds()/manual.Seconds())
		reported = append(reported, v.ElapsedSeconds)
		total = append(total, u.process.took.Seconds())
	}
	b.ReportMetric(unpruneWait.median(), "s-last-patch-to-synced")
	b.ReportMetric(ratio.median(), "wait/manual-wait")
	fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs, %d objects, real application controller\n", b.Name(), runs, n)
	fmt.Fprintf(os.Stdout, "  %-32s %s s  (goal ≤ 3)\n", "unprune: last release → exit", unpruneWait)
	fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "by hand: last release → Synced", manualWait)
	fmt.Fprintf(os.Stdout, "  %-32s %s\n", "unprune ÷ by hand", ratio)
	fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune's own elapsedSeconds", reported)
	fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune detach, start to exit", total)
}

// unpruneRun is one unprune detach with the wait: its process, and the time from the moment the
// watch saw the last ConfigMap released to the process's exit.
type unpruneRun struct {
	process measurement
	wait    time.Duration
}

// unpruneRelease runs the built unprune detach on app with the default wait.
func unpruneRelease(b *testing.B, bin string, env *labtest.Env, install *labtest.Install, app *labtest.App, n int) unpruneRun {
	b.Helper()
	w := watchRelease(b, env, app.DestNamespace, n)
	d := process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(), "--argocd-namespace", install.Namespace(),
		"detach", app.Name, "--all", "--yes", "-o", "json")
	if d.code != 0 {
		b.Fatalf("unprune detach %s exit %d\n%s", app.Name, d.code, d.stdout)
	}
	return unpruneRun{process: d, wait: d.exited.Sub(w.wait(b))}
}

// stuckApp makes an app whose last commit added n ConfigMaps and whose revert removed them: all n
// require pruning. The ConfigMaps are created live as Argo CD's sync would leave them (with the
// tracking-id it writes): the controller's own sync of 1,000 objects takes minutes here, and
// what is measured is the wait after unprune's patches, not Argo CD's sync.
func stuckApp(b *testing.B, install *labtest.Install, dyn dynamic.Interface, n int) *labtest.App {
	b.Helper()
	repo := labtest.NewRepo(b)
	app := install.CreateApp(b, labtest.AppOptions{Repo: repo})
	if op := app.Sync(b, false); op.Phase != "Succeeded" { // the app's own first ConfigMap
		b.Fatalf("first sync: %s %s", op.Phase, op.Message)
	}
	s := set{app: app.Name, namespace: app.DestNamespace, mode: "annotation"}
	var docs strings.Builder
	for i := range n {
		s.names = append(s.names, fmt.Sprintf("cm-%05d", i))
		fmt.Fprintf(&docs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  k: v\n", s.names[i], s.namespace)
	}
	repo.Write(b, app.Path+"/many.yaml", docs.String())
	added := repo.Commit(b, "add many")
	forEach(b, n, func(i int) error {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": s.names[i], "namespace": s.namespace,
				"annotations": map[string]any{"argocd.argoproj.io/tracking-id": s.trackingID(s.names[i])}},
			"data": map[string]any{"k": "v"}}}
		_, err := dyn.Resource(gvrConfigMap).Namespace(s.namespace).Create(context.Background(), cm, metav1.CreateOptions{})
		return err
	})
	app.RefreshUntil(b, 2*time.Minute, "to be Synced with its "+fmt.Sprint(n)+" ConfigMaps", func(st labtest.Status) bool {
		return st.Revision == added && st.Sync == "Synced" && len(st.Resources) > n
	})
	reverted := repo.Revert(b)
	app.RefreshUntil(b, 2*time.Minute, fmt.Sprintf("to require pruning of %d ConfigMaps", n), func(st labtest.Status) bool {
		pruning := 0
		for _, r := range st.Resources {
			if r.RequiresPruning {
				pruning++
			}
		}
		return st.Revision == reverted && st.Sync == "OutOfSync" && pruning == n
	})
	return app
}

// manualRelease removes the tracking-id of the app's n ConfigMaps with the plain patch loop, asks
// Argo CD to refresh, and returns how long after the watch saw the last ConfigMap released the app
// showed Synced.
func manualRelease(b *testing.B, env *labtest.Env, dyn dynamic.Interface, app *labtest.App, n int) time.Duration {
	b.Helper()
	s := set{app: app.Name, namespace: app.DestNamespace, mode: "annotation"}
	for i := range n {
		s.names = append(s.names, fmt.Sprintf("cm-%05d", i))
	}
	w := watchRelease(b, env, s.namespace, n)
	patchLoop(b, dyn, s, true)
	app.Refresh(b)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := app.Status(b)
		if st.Sync == "Synced" {
			synced := time.Now()
			return synced.Sub(w.wait(b))
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not Synced 2m after its ConfigMaps were released by hand: %s", app.Name, st)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval; the deadline above bounds the wait
	}
}

// releaseWatch notes when the last ConfigMap of a namespace lost its tracking-id.
type releaseWatch struct {
	done chan struct{}
	at   time.Time
	err  error
}

// watchRelease starts watching the n released ConfigMaps (cm-00000…) of namespace, which all carry a
// tracking-id now; the app's own ConfigMap, which keeps its tracking, is not watched.
func watchRelease(b *testing.B, env *labtest.Env, namespace string, n int) *releaseWatch {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	list, err := env.Kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	released := map[string]bool{}
	for i := range n {
		released[fmt.Sprintf("cm-%05d", i)] = true
	}
	tracked := map[string]bool{}
	for _, cm := range list.Items {
		if _, ok := cm.Annotations[trackingID]; ok && released[cm.Name] {
			tracked[cm.Name] = true
		}
	}
	if len(tracked) != n {
		cancel()
		b.Fatalf("namespace %s: %d of the %d ConfigMaps to release carry a tracking-id", namespace, len(tracked), n)
	}
	w := &releaseWatch{done: make(chan struct{})}
	go func() {
		defer cancel()
		defer close(w.done)
		w.err = follow(ctx, env, namespace, list.ResourceVersion, tracked)
		w.at = time.Now()
	}()
	return w
}

const trackingID = "argocd.argoproj.io/tracking-id"

// follow watches from resourceVersion until no name of tracked carries a tracking-id; a watch the
// server ends is resumed from the last event.
func follow(ctx context.Context, env *labtest.Env, namespace, resourceVersion string, tracked map[string]bool) error {
	for {
		wi, err := env.Kube.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
		if err != nil {
			return err
		}
		for ev := range wi.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			resourceVersion = cm.ResourceVersion
			if _, has := cm.Annotations[trackingID]; !has || ev.Type == watch.Deleted {
				delete(tracked, cm.Name)
			}
			if len(tracked) == 0 {
				wi.Stop()
				return nil
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d ConfigMaps of %s still tracked: %w", len(tracked), namespace, err)
		}
	}
}

// wait returns when the last ConfigMap was seen released.
func (w *releaseWatch) wait(b *testing.B) time.Time {
	b.Helper()
	<-w.done
	if w.err != nil {
		b.Fatal(w.err)
	}
	return w.at
}
