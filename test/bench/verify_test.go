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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/unprune/unprune/internal/printer"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// BenchmarkDetachVerify measures the wait after the patches, against a real application
// controller (v3.6.1, annotation tracking): 1,000 ConfigMaps a commit added and a revert removed
// require pruning, and in the same run, on two such apps,
//
//   - unprune detach --all --yes (the default wait) releases one and waits until Argo CD shows it
//     Synced: its report's verification.elapsedSeconds is the time from the last patch to Synced;
//   - the baseline releases the other with the plain patch loop, asks Argo CD to refresh, and polls
//     the Application until it is Synced: the same wait, done by hand, from the loop's end.
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
	var unpruneWait, manualWait, ratio, total stats
	b.ResetTimer()
	for range runs {
		ours, theirs := stuckApp(b, install, dyn, n), stuckApp(b, install, dyn, n)
		d := process(b, bin, "--kubeconfig", env.State.Kubeconfig, "--journal-dir", b.TempDir(), "--argocd-namespace", install.Namespace(),
			"detach", ours.Name, "--all", "--yes", "-o", "json")
		var doc printer.ChangeReport
		if err := json.Unmarshal(d.stdout, &doc); err != nil || doc.Summary.Applied != n || len(doc.Summary.Applications) != 1 {
			b.Fatalf("detach report: %v applied %d of %d\n%s", err, doc.Summary.Applied, n, d.stdout)
		}
		v := doc.Summary.Applications[0].Verification
		if v == nil || !v.Verified || !v.Synced {
			b.Fatalf("detach did not show %s Synced: %+v", ours.Name, v)
		}
		unpruneWait = append(unpruneWait, v.ElapsedSeconds)
		total = append(total, d.took.Seconds())

		manual := manualRelease(b, dyn, theirs, n)
		manualWait = append(manualWait, manual.Seconds())
		ratio = append(ratio, v.ElapsedSeconds/manual.Seconds())
	}
	b.ReportMetric(unpruneWait.median(), "s-last-patch-to-synced")
	b.ReportMetric(ratio.median(), "wait/manual-wait")
	fmt.Fprintf(os.Stdout, "\n%-34s min / median / max of %d runs, %d objects, real application controller\n", b.Name(), runs, n)
	fmt.Fprintf(os.Stdout, "  %-32s %s s  (goal ≤ 3)\n", "unprune: last patch → Synced", unpruneWait)
	fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "by hand: loop end → Synced", manualWait)
	fmt.Fprintf(os.Stdout, "  %-32s %s\n", "unprune ÷ by hand", ratio)
	fmt.Fprintf(os.Stdout, "  %-32s %s s\n", "unprune detach, start to exit", total)
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
// Argo CD to refresh, and returns how long after the loop the app showed Synced.
func manualRelease(b *testing.B, dyn dynamic.Interface, app *labtest.App, n int) time.Duration {
	b.Helper()
	s := set{app: app.Name, namespace: app.DestNamespace, mode: "annotation"}
	for i := range n {
		s.names = append(s.names, fmt.Sprintf("cm-%05d", i))
	}
	patchLoop(b, dyn, s, true)
	done := time.Now()
	app.Refresh(b)
	deadline := done.Add(2 * time.Minute)
	for {
		st := app.Status(b)
		if st.Sync == "Synced" {
			return time.Since(done)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not Synced 2m after its ConfigMaps were released by hand: %s", app.Name, st)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval; the deadline above bounds the wait
	}
}
