//go:build lab

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/budget"
	"github.com/unprune/unprune/internal/cli"
	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

// TestDeletionBudget runs the deletion budget (unprune watch --deletion-budget=5, the webhook
// registered as deploy/components/deletion-budget registers it) against Argo CD's real controller:
//
//   - an automated-prune app loses 8 ConfigMaps from git: its sync deletes none of them, and its
//     operation says why and how to approve; an app losing 3 is pruned as usual;
//   - `unprune guard approve` approves exactly what Argo CD's comparison shows, and the next sync with
//     prune deletes exactly that;
//   - a Namespace holding data, pruned by a sync with PRUNE ticked, is kept until approved, then goes;
//   - an app's own budget (guard budget) wins over the default, and undo takes it back;
//   - an app with the resources finalizer, deleted, deletes nothing until approved;
//   - a person's kubectl delete of a tracked object passes;
//   - an ApplicationSet whose generator drops 3 of its 5 apps, with budget 2, deletes none until
//     approved, then exactly those 3; dropping one more is within the budget.
func TestDeletionBudget(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, version := range labtest.Lines("v3.6.1", "v2.14.11") {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			five := 5
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: version, DeletionBudget: &five})
			argocdNS := "--argocd-namespace=" + install.Namespace()
			approve := func(a *labtest.App) {
				t.Helper()
				if r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "approve", a.Name, "-n", install.Namespace(), "--yes"); r.Code != cli.ExitOK {
					t.Fatalf("guard approve %s: exit %d\n%s\n%s", a.Name, r.Code, r.Stdout, r.Stderr)
				}
			}

			// Two automated-prune apps: one loses 8 ConfigMaps, the other 3.
			eight := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
			three := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
			addConfigMaps := func(a *labtest.App, n int) string {
				for i := range n {
					a.Repo.Write(t, fmt.Sprintf("%s/cm-%d.yaml", a.Path, i),
						fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: %s\ndata:\n  n: %q\n", i, a.DestNamespace, fmt.Sprint(i)))
				}
				rev := a.Repo.Commit(t, fmt.Sprintf("%d ConfigMaps", n))
				a.RefreshUntil(t, labtest.ControllerTimeout, "to sync "+rev, func(s labtest.Status) bool {
					_, ok := s.Find("ConfigMap", fmt.Sprintf("cm-%d", n-1))
					return s.Revision == rev && s.Sync == "Synced" && ok && s.Idle()
				})
				for i := range n {
					a.Repo.Remove(t, fmt.Sprintf("%s/cm-%d.yaml", a.Path, i))
				}
				return a.Repo.Commit(t, fmt.Sprintf("remove the %d ConfigMaps", n))
			}
			exist := func(a *labtest.App, n int) int {
				list, err := env.Kube.CoreV1().ConfigMaps(a.DestNamespace).List(labtest.Context(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				found := 0
				for _, cm := range list.Items {
					if strings.HasPrefix(cm.Name, "cm-") {
						found++
					}
				}
				return found
			}
			// prunedNext: Argo CD's next attempt — a retry of the refused automated sync, or a sync
			// with prune once the retries are spent — deletes the app's n ConfigMaps.
			prunedNext := func(a *labtest.App, n int, when string) {
				t.Helper()
				a.WaitStatus(t, 5*time.Minute, "to finish its automated sync", func(s labtest.Status) bool { return s.Idle() })
				if exist(a, n) > 0 {
					if op := a.Sync(t, true); op.Phase != "Succeeded" {
						t.Fatalf("the sync with prune %s: %s %s", when, op.Phase, operationText(op))
					}
				}
				if left := exist(a, n); left != 0 {
					t.Fatalf("%d of the %d ConfigMaps of %s exist %s; want none", left, n, a.Name, when)
				}
			}
			removed8, removed3 := addConfigMaps(eight, 8), addConfigMaps(three, 3)

			// The app losing 3 is pruned by its automated sync.
			three.RefreshUntil(t, labtest.ControllerTimeout, "to prune its 3 ConfigMaps", func(s labtest.Status) bool {
				return s.Revision == removed3 && s.Sync == "Synced" && s.Idle() && exist(three, 3) == 0
			})

			// The app losing 8: its automated sync is refused on the budget, and deletes none of them.
			// Argo CD retries an automated sync (RetryStrategy{Limit: 5} when the app sets none:
			// controller/appcontroller.go autoSync); every attempt is refused alike.
			var op labtest.Operation
			eight.RefreshUntil(t, labtest.ControllerTimeout, "its automated sync of "+removed8+" to be refused on the budget", func(s labtest.Status) bool {
				op = s.Operation
				return s.Revision == removed8 && strings.Contains(op.Message, "Retrying attempt #2")
			})
			if text := operationText(op); !strings.Contains(text, "deletes 8 objects, more than its budget of 5") || !strings.Contains(text, "unprune guard approve "+eight.Name) {
				t.Errorf("the operation does not say why and how to approve: %s", text)
			}
			if n := exist(eight, 8); n != 8 {
				t.Fatalf("%d of the 8 ConfigMaps exist after two refused attempts; want all 8 (operation %s: %s)", n, op.Phase, operationText(op))
			}
			events, err := env.Kube.CoreV1().Events(install.Namespace()).List(labtest.Context(t), metav1.ListOptions{FieldSelector: "reason=DeletionRefused,involvedObject.name=" + eight.Name})
			if err != nil || len(events.Items) == 0 || !strings.Contains(events.Items[0].Message, "deletes 8 objects") {
				t.Errorf("no Event DeletionRefused on %s saying why (%v): %+v", eight.Name, err, events)
			}
			if m := scrape(t, install.State.Budget.MetricsURL); !strings.Contains(m, `unprune_deletions_refused_total{app="`+install.Namespace()+"/"+eight.Name+`",reason="over_budget"}`) {
				t.Errorf("no refusal counted in %s", install.State.Budget.MetricsURL)
			}

			// Approval: exactly the 8 Argo CD's comparison shows, by UID. Argo CD's next attempt (a
			// retry of the automated sync, or a sync with prune once the retries are spent) deletes them.
			approve(eight)
			approved := budget.Approved(eight.Get(t).GetAnnotations())
			if len(approved) != 8 {
				t.Fatalf("approved %d UIDs; want the 8 ConfigMaps': %v", len(approved), approved)
			}
			prunedNext(eight, 8, "after approval")

			// An app's own budget, set by guard budget: 1, so that losing 2 ConfigMaps is refused,
			// naming the app's annotation; undone, the default of 5 applies again, and Argo CD's next
			// attempt prunes them.
			two := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: true})
			journals := labtest.TempDir(t)
			if r := unprune(t, env, journals, argocdNS, "guard", "budget", two.Name, "1", "-n", install.Namespace(), "--yes"); r.Code != cli.ExitOK {
				t.Fatalf("guard budget: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := two.Get(t).GetAnnotations()[budget.AnnotationBudget]; got != "1" {
				t.Fatalf("%s after guard budget: %q", budget.AnnotationBudget, got)
			}
			removed2 := addConfigMaps(two, 2)
			two.RefreshUntil(t, labtest.ControllerTimeout, "its automated sync of "+removed2+" to be refused on its own budget", func(s labtest.Status) bool {
				op = s.Operation
				return s.Revision == removed2 && strings.Contains(op.Message, "more than its budget of 1 (the app's "+budget.AnnotationBudget+")")
			})
			if n := exist(two, 2); n != 2 {
				t.Fatalf("%d of the 2 ConfigMaps exist after the refusal; want both", n)
			}
			if r := unprune(t, env, journals, argocdNS, "undo", "--latest", "--yes"); r.Code != cli.ExitOK {
				t.Fatalf("undo of guard budget: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if _, ok := two.Get(t).GetAnnotations()[budget.AnnotationBudget]; ok {
				t.Fatalf("%s still set after undo", budget.AnnotationBudget)
			}
			prunedNext(two, 2, "within the default budget")

			// An app with the resources finalizer tracking 8 objects, deleted: its cascade deletes
			// nothing until approved, then exactly what was approved, and the app goes.
			cascading := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, Finalizers: []string{argocd.FinalizerResources}})
			addConfigMaps(cascading, 8)
			cascading.Repo.Revert(t) // the 8 back in git: the app tracks 9 ConfigMaps
			cascading.RefreshUntil(t, labtest.ControllerTimeout, "to track its 8 ConfigMaps again", func(s labtest.Status) bool {
				return s.Sync == "Synced" && s.Idle() && exist(cascading, 8) == 8
			})
			if err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Delete(labtest.Context(t), cascading.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			labtest.Eventually(t, labtest.ControllerTimeout, "the cascade of "+cascading.Name+" to be refused", func() (bool, string) {
				list, err := env.Kube.CoreV1().Events(install.Namespace()).List(labtest.Context(t), metav1.ListOptions{FieldSelector: "reason=DeletionRefused,involvedObject.name=" + cascading.Name})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range list.Items {
					if strings.Contains(e.Message, "this deletion of app") {
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d Events", len(list.Items))
			})
			if n := exist(cascading, 8); n != 8 {
				t.Fatalf("%d of the 8 ConfigMaps exist after the refused cascade; want all 8", n)
			}
			approve(cascading)
			labtest.Eventually(t, labtest.ControllerTimeout, "the approved cascade to delete the app and its ConfigMaps", func() (bool, string) {
				_, err := env.Dynamic.Resource(labtest.GVRApplication).Namespace(install.Namespace()).Get(labtest.Context(t), cascading.Name, metav1.GetOptions{})
				n := exist(cascading, 8)
				return apierrors.IsNotFound(err) && n == 0, fmt.Sprintf("app: %v; %d ConfigMaps", err, n)
			})

			appSetBudget(t, env, install)

			// A Namespace with data, pruned by a sync with PRUNE ticked: kept until approved.
			manual := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t)})
			ns := labtest.UniqueName("data")
			t.Cleanup(func() { env.DeleteNamespace(ns) })
			manual.Incident(t, ns, nil)
			if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(labtest.Context(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}, Data: map[string]string{"balance": "42"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			op = manual.Sync(t, true)
			if op.Phase == "Succeeded" || !strings.Contains(operationText(op), "high-risk") {
				t.Fatalf("a sync pruning Namespace %s: %s %s; want it refused as high-risk", ns, op.Phase, operationText(op))
			}
			live, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil || live.DeletionTimestamp != nil {
				t.Fatalf("Namespace %s after the refused prune: %v (deleting: %v)", ns, err, live != nil && live.DeletionTimestamp != nil)
			}

			// A person's kubectl delete of a tracked object is nobody's business but RBAC's.
			first := manual.Name + "-config"
			if err := env.Kube.CoreV1().ConfigMaps(manual.DestNamespace).Delete(labtest.Context(t), first, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("the admin's DELETE of %s/%s, which app %s tracks: %v", manual.DestNamespace, first, manual.Name, err)
			}

			approve(manual)
			if op := manual.Sync(t, true); op.Phase != "Succeeded" {
				t.Fatalf("the sync with prune after approval: %s %s", op.Phase, operationText(op))
			}
			labtest.Eventually(t, labtest.ControllerTimeout, "Namespace "+ns+" to be deleted", func() (bool, string) {
				_, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})

			// test/prometheus checks the dashboard's budget row and the refusal alert on this scrape:
			// refusals of every reason by now.
			if path := os.Getenv("UNPRUNE_BUDGET_SCRAPE"); path != "" && version == "v3.6.1" {
				m := scrape(t, install.State.Budget.MetricsURL)
				for _, reason := range []string{"over_budget", "high_risk", "applicationset_over_budget"} {
					if !strings.Contains(m, `reason="`+reason+`"`) {
						t.Fatalf("the budget's scrape holds no refusal for %s", reason)
					}
				}
				if err := os.WriteFile(path, []byte(m), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// appSetBudget: an ApplicationSet (list generator, 5 apps) whose own budget `guard budget
// --applicationset` sets to 2 drops 3 elements. Its controller's first DELETEs are recorded on the set
// and refused, its next attempt refused over the budget, with an Event on the set: no app is
// deleted. `guard approve --applicationset` approves the 3, and the controller deletes exactly them.
// Dropping one more is within the budget: deleted on the controller's next attempt.
func appSetBudget(t *testing.T, env *labtest.Env, install *labtest.Install) {
	t.Helper()
	ns := install.Namespace()
	repo := labtest.NewRepo(t)
	name := labtest.UniqueName("set")
	var teams []string
	for range 5 {
		teams = append(teams, labtest.UniqueName("team"))
	}
	if err := env.Create(labtest.Context(t), appSet(name, ns, repo.URL, "", false, teams...)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(gvrApplicationSet).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	apps := env.Dynamic.Resource(labtest.GVRApplication).Namespace(ns)
	existing := func() []string {
		var out []string
		for _, team := range teams {
			if _, err := apps.Get(labtest.Context(t), team, metav1.GetOptions{}); err == nil {
				out = append(out, team)
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		return out
	}
	labtest.Eventually(t, labtest.ControllerTimeout, "the set to generate its 5 apps", func() (bool, string) {
		got := existing()
		return len(got) == 5, fmt.Sprint(got)
	})
	argocdNS := "--argocd-namespace=" + ns
	if r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "budget", name, "2", "--applicationset", "-n", ns, "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("guard budget --applicationset: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	sets := env.Dynamic.Resource(gvrApplicationSet).Namespace(ns)
	annotations := func() map[string]string {
		live, err := sets.Get(labtest.Context(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return live.GetAnnotations()
	}
	if got := annotations()[budget.AnnotationBudget]; got != "2" {
		t.Fatalf("%s on the set after guard budget: %q", budget.AnnotationBudget, got)
	}

	updateSet(t, env, appSet(name, ns, repo.URL, "", false, teams[:2]...))
	labtest.Eventually(t, labtest.ControllerTimeout, "the set's deletions to be refused over its budget", func() (bool, string) {
		list, err := env.Kube.CoreV1().Events(ns).List(labtest.Context(t), metav1.ListOptions{FieldSelector: "reason=DeletionRefused,involvedObject.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "ApplicationSet" && strings.Contains(e.Message, "asked to delete 3 Applications") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d Events; record %s", len(list.Items), annotations()[budget.AnnotationAsked])
	})
	if got := existing(); len(got) != 5 {
		t.Fatalf("apps %v exist after the refusals; want all 5", got)
	}
	if asked := budget.ParseAsked(annotations()); len(asked) != 3 {
		t.Fatalf("the set's record holds %d asks; want the 3 dropped apps: %+v", len(asked), asked)
	}
	if m := scrape(t, install.State.Budget.MetricsURL); !strings.Contains(m, `unprune_deletions_refused_total{app="`+ns+"/"+name+`",reason="applicationset_over_budget"}`) {
		t.Errorf("no refusal of the set counted in %s", install.State.Budget.MetricsURL)
	}

	if r := unprune(t, env, labtest.TempDir(t), argocdNS, "guard", "approve", name, "--applicationset", "-n", ns, "--yes"); r.Code != cli.ExitOK {
		t.Fatalf("guard approve --applicationset: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if approved := budget.Approved(annotations()); len(approved) != 3 {
		t.Fatalf("approved %d UIDs; want the 3 dropped apps': %v", len(approved), approved)
	}
	labtest.Eventually(t, labtest.ControllerTimeout, "the approved 3 apps to be deleted", func() (bool, string) {
		got := existing()
		return slices.Equal(got, teams[:2]), fmt.Sprint(got)
	})

	// One more dropped: 1 unapproved ask within the window, within the budget of 2.
	updateSet(t, env, appSet(name, ns, repo.URL, "", false, teams[:1]...))
	labtest.Eventually(t, labtest.ControllerTimeout, "the set's one deletion within its budget", func() (bool, string) {
		got := existing()
		return slices.Equal(got, teams[:1]), fmt.Sprint(got)
	})
}

// operationText is an operation's message and its resources' messages: Argo CD puts a failed
// task's error (the admission webhook's refusal) on the resource, and a summary on the operation.
func operationText(op labtest.Operation) string {
	parts := []string{op.Message}
	for _, r := range op.Results {
		if r.Message != "" {
			parts = append(parts, fmt.Sprintf("%s/%s: %s", r.Kind, r.Name, r.Message))
		}
	}
	return strings.Join(slices.Compact(parts), "; ")
}

// scrape reads a /metrics page.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
