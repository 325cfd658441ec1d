//go:build lab

package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unprune/unprune/lab"
	"github.com/unprune/unprune/lab/labtest"
)

const (
	instanceLabel = "app.kubernetes.io/instance"
	trackingID    = "argocd.argoproj.io/tracking-id"
)

// cells are the Argo CD versions and tracking methods the incident is reproduced on.
var cells = []struct {
	version, tracking string
	wantLabel         bool
	wantAnnotation    bool
}{
	{"v3.6.1", "label", true, false},
	{"v3.6.1", "annotation", false, true},
	{"v3.6.1", "annotation+label", true, true},
	{"v2.14.11", "label", true, false},
	{"v2.14.11", "annotation", false, true},
}

// TestIncidentAndManualFix reproduces the incident on each cell — a Namespace committed, synced,
// reverted, leaving the app OutOfSync with the Namespace requiring pruning — and then applies the
// manual fix with kubectl: the app reaches Synced and the Namespace is untouched.
func TestIncidentAndManualFix(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	for _, c := range cells {
		t.Run(c.version+"/"+c.tracking, func(t *testing.T) {
			t.Parallel()
			install := env.ArgoCD(t, lab.ArgoCDConfig{Version: c.version, Tracking: c.tracking})
			app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true})
			ns := labtest.UniqueName("precious")
			t.Cleanup(func() { env.DeleteNamespace(ns) })
			reverted := app.Incident(t, ns, nil)

			live, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			label, hasLabel := live.Labels[instanceLabel]
			annotation, hasAnnotation := live.Annotations[trackingID]
			if hasLabel != c.wantLabel || hasAnnotation != c.wantAnnotation {
				t.Fatalf("tracking metadata on the live namespace: label %q (%t), annotation %q (%t); want label %t, annotation %t",
					label, hasLabel, annotation, hasAnnotation, c.wantLabel, c.wantAnnotation)
			}
			if hasLabel && label != app.Name {
				t.Errorf("label %s=%q, want the app name %q", instanceLabel, label, app.Name)
			}
			wantID := fmt.Sprintf("%s:/Namespace:%s/%s", app.Name, app.DestNamespace, ns)
			if hasAnnotation && annotation != wantID {
				t.Errorf("annotation %s=%q, want %q", trackingID, annotation, wantID)
			}
			uid := live.UID

			// The manual fix, exactly as an operator types it.
			args := []string{"--kubeconfig", env.State.Kubeconfig}
			if hasLabel {
				kubectl(t, env, append(args, "label", "namespace", ns, instanceLabel+"-")...)
			}
			if hasAnnotation {
				kubectl(t, env, append(args, "annotate", "namespace", ns, trackingID+"-")...)
			}
			start := time.Now()
			s := app.WaitSynced(t, reverted)
			t.Logf("Synced %.2fs after the manual fix", time.Since(start).Seconds())
			if _, listed := s.Find("Namespace", ns); listed {
				t.Errorf("the namespace is still in the app's resources: %s", s)
			}
			after, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("namespace after the fix: %v", err)
			}
			if after.UID != uid || after.DeletionTimestamp != nil || after.Status.Phase != "Active" {
				t.Errorf("namespace changed: uid %s→%s, deletionTimestamp %v, phase %s", uid, after.UID, after.DeletionTimestamp, after.Status.Phase)
			}
			// Nothing re-adds the metadata: the resource is no longer in git.
			if op := app.Sync(t, true); op.Phase != "Succeeded" {
				t.Errorf("prune sync after the fix: %s %s", op.Phase, op.Message)
			}
			if _, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{}); err != nil {
				t.Errorf("a prune sync after the fix deleted the namespace: %v", err)
			}
		})
	}
}

// TestPruneSyncDeletesTrackedNamespace is the trap: with automated prune off, a manual sync with
// prune still deletes a tracked, reverted namespace.
func TestPruneSyncDeletesTrackedNamespace(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: false})
	ns := labtest.UniqueName("doomed")
	t.Cleanup(func() { env.DeleteNamespace(ns) })
	app.Incident(t, ns, nil)

	op := app.Sync(t, true)
	if op.Phase != "Succeeded" {
		t.Fatalf("prune sync: %s %s", op.Phase, op.Message)
	}
	labtest.Eventually(t, 60*time.Second, "namespace "+ns+" to be gone", func() (bool, string) {
		got, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, deletionTimestamp %v", got.Status.Phase, got.DeletionTimestamp)
	})
}

// TestPruneSyncOfKubeSystemIsForbidden: kube-system survives the same trap only because the API server
// refuses to delete it, and Argo CD reports that refusal in the operation state. Not parallel:
// kube-system is shared by the whole lab.
func TestPruneSyncOfKubeSystemIsForbidden(t *testing.T) {
	env := labtest.Get(t)
	install := env.ArgoCD(t, lab.ArgoCDConfig{Version: "v3.6.1", Tracking: "annotation+label"})
	app := install.CreateApp(t, labtest.AppOptions{Repo: labtest.NewRepo(t), Automated: true, AutoPrune: false})
	t.Cleanup(func() { env.Untrack(t, "kube-system") })
	app.Incident(t, "kube-system", nil)

	op := app.Sync(t, true)
	if op.Phase == "Succeeded" {
		t.Fatalf("a prune sync of kube-system succeeded: %s", op.Message)
	}
	found := false
	for _, r := range op.Results {
		if r.Kind == "Namespace" && r.Name == "kube-system" && strings.Contains(r.Message, "forbidden") {
			found = true
		}
	}
	if !found && !strings.Contains(op.Message, "forbidden") {
		t.Fatalf("operation %s %q, results %+v: no Forbidden message for kube-system", op.Phase, op.Message, op.Results)
	}
	if _, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestNoAccessUserIsForbidden: the lab's second user has no RBAC rights at all.
func TestNoAccessUserIsForbidden(t *testing.T) {
	t.Parallel()
	env := labtest.Get(t)
	ns := labtest.UniqueName("rbac")
	env.CreateNamespace(t, ns)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.State.NoAccessKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Namespaces().Patch(labtest.Context(t), ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("patch as %s: got %v, want Forbidden", lab.NoAccessUser, err)
	}
	got, err := env.Kube.CoreV1().Namespaces().Get(labtest.Context(t), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, touched := got.Labels["touched"]; touched {
		t.Fatal("the forbidden patch changed the namespace")
	}
}

// kubectl runs the lab's own kubectl, built with the API server.
func kubectl(t *testing.T, env *labtest.Env, args ...string) string {
	t.Helper()
	out, err := exec.Command(env.State.Kubectl, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
