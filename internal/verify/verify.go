// Package verify proves a release worked the way Argo CD itself reports it: it asks the application
// controller for a refresh and waits until the Application's own status shows the objects released
// and the app Synced — or says exactly what still keeps it OutOfSync.
package verify

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
)

// Expectation is how a released object should look in the app's status afterwards.
type Expectation int

const (
	// Gone: untracked objects disappear from .status.resources.
	Gone Expectation = iota
	// Ignored: kept objects stay listed (requiring pruning) but no longer make the app OutOfSync.
	Ignored
)

// Outcome is what the app's status said last.
type Outcome struct {
	Synced    bool
	Elapsed   time.Duration
	App       cluster.Application
	Lingering []cluster.Resource // released objects still counted as the expectation forbids
	OutOfSync []cluster.Resource // other rows keeping the app OutOfSync
}

// Refresh asks Argo CD to compare the app again, the way `argocd app get --refresh` does: the
// controller removes the annotation when it has done so.
func Refresh(ctx context.Context, c *cluster.Client, app cluster.Application) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"normal"}}}`, argocd.AnnotationRefresh)
	_, err := c.Dynamic.Resource(cluster.GVRApplication).Namespace(app.Namespace).Patch(ctx, app.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "unprune"})
	if err != nil {
		return fmt.Errorf("request a refresh of Application %s: %w", app.Ref(), err)
	}
	return nil
}

// Wait polls the app until the released objects meet the expectation and the app is Synced, or the
// timeout passes; the last status is returned either way. A refresh the controller consumed with a
// comparison already under way (it clears the annotation when that ends) is asked for again.
func Wait(ctx context.Context, c *cluster.Client, app cluster.Application, released []cluster.Resource, want Expectation, timeout, interval time.Duration) (Outcome, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	asked := start
	for {
		a, err := c.GetApplication(ctx, app.Namespace, app.Name)
		if err != nil {
			return Outcome{}, err
		}
		o := Judge(a, released, want)
		o.Elapsed = time.Since(start)
		if o.Synced || time.Now().After(deadline) {
			return o, nil
		}
		if !a.RefreshPending && time.Since(asked) > 2*time.Second {
			if err := Refresh(ctx, c, app); err != nil {
				return o, err
			}
			asked = time.Now()
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Judge compares an app's status with the expectation.
func Judge(a cluster.Application, released []cluster.Resource, want Expectation) Outcome {
	o := Outcome{App: a}
	isReleased := map[string]bool{}
	for _, r := range released {
		isReleased[key(r)] = true
	}
	for _, r := range a.Resources {
		if isReleased[key(r)] {
			if want == Gone {
				o.Lingering = append(o.Lingering, r)
			}
			continue
		}
		if r.Status == "OutOfSync" || r.RequiresPruning {
			o.OutOfSync = append(o.OutOfSync, r)
		}
	}
	o.Synced = a.SyncStatus == "Synced" && len(o.Lingering) == 0
	return o
}

func key(r cluster.Resource) string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}
