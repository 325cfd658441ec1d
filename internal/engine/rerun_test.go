package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
)

// TestRerunWhileArgoCDLagsConverges: after a run that released some objects, Argo CD has not compared
// the app yet (its controller is stopped), so its status still lists them. A rerun of --all plans
// only the others, says who released the first ones, journals only what it patches, and its
// verification says Argo CD has not compared — until the controller comes back.
func TestRerunWhileArgoCDLagsConverges(t *testing.T) {
	w := newWorld(t, "team-a", "team-b", "team-c", "team-d")
	w.argo.Stop()
	e := w.engine()
	first := w.detach(DetachRequest{Resources: []ResourceArg{{Raw: "Namespace/team-a", Kind: "Namespace", Name: "team-a"},
		{Raw: "Namespace/team-b", Kind: "Namespace", Name: "team-b"}}})
	firstDone, err := e.Execute(context.Background(), first, DryRunNone)
	if err != nil || firstDone.Counts()[OutcomeApplied] != 2 {
		t.Fatalf("first run: %v %v", err, outcomes(first.Planned, firstDone.Applied))
	}

	rerun := w.detach(DetachRequest{All: true})
	got := outcomes(rerun.Planned, nil)
	if got["team-a"] != OutcomeUnchanged || got["team-b"] != OutcomeUnchanged || got["team-c"] != OutcomePlanned || got["team-d"] != OutcomePlanned {
		t.Fatalf("rerun outcomes %v", got)
	}
	for _, it := range rerun.Items {
		if it.Outcome != OutcomeUnchanged {
			continue
		}
		if it.Reason != ReasonAlreadyReleased || !strings.Contains(it.Message, firstDone.Journal) {
			t.Errorf("%s: reason %q message %q; want %s naming journal %s", it.Ref.Name, it.Reason, it.Message, ReasonAlreadyReleased, firstDone.Journal)
		}
	}
	rerunDone, err := e.Execute(context.Background(), rerun, DryRunNone)
	if err != nil || rerunDone.Counts()[OutcomeApplied] != 2 {
		t.Fatalf("rerun apply: %v %v", err, outcomes(rerun.Planned, rerunDone.Applied))
	}
	j, _, err := w.store.Load(rerunDone.Journal)
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range j.Entries {
		if entry.Object.Name == "team-a" || entry.Object.Name == "team-b" {
			t.Errorf("the rerun journaled %s again: objects must be released once", entry.Object.Name)
		}
	}

	if v := e.VerifyChange(context.Background(), rerun, rerunDone, 50*time.Millisecond)[0]; v == nil || v.Verified || v.Compared {
		t.Fatalf("with the controller stopped: verification %+v, want not compared", v)
	}
	w.argo.Resume()
	if v := e.VerifyChange(context.Background(), rerun, rerunDone, time.Second)[0]; v == nil || !v.Verified || !v.Compared || !v.Synced {
		t.Fatalf("after the controller resumed: verification %+v", v)
	}
}

// TestRerunOfReleasedOnlyStillWaitsForArgoCD: when every object was released by an earlier run,
// nothing is patched, but the run still waits for the comparison that drops them.
func TestRerunOfReleasedOnlyStillWaitsForArgoCD(t *testing.T) {
	w := newWorld(t, "team-a")
	w.argo.Stop()
	e := w.engine()
	first := w.detach(DetachRequest{All: true})
	if _, err := e.Execute(context.Background(), first, DryRunNone); err != nil {
		t.Fatal(err)
	}
	w.argo.Resume()
	rerun := w.detach(DetachRequest{All: true})
	if rerun.Counts()[OutcomeUnchanged] != 1 || rerun.Items[0].Reason != ReasonAlreadyReleased {
		t.Fatalf("rerun %v reason %q", outcomes(rerun.Planned, nil), rerun.Items[0].Reason)
	}
	rerunDone, err := e.Execute(context.Background(), rerun, DryRunNone)
	if err != nil || rerunDone.Journal != "" {
		t.Fatalf("nothing to patch, yet: %v journal %q", err, rerunDone.Journal)
	}
	before := w.argo.Refreshes()
	if v := e.VerifyChange(context.Background(), rerun, rerunDone, time.Second)[0]; v == nil || !v.Verified || w.argo.Refreshes() == before {
		t.Fatalf("verification %+v after %d refreshes", v, w.argo.Refreshes()-before)
	}
}

// TestReleasedByHandIsNotBlamedOnAJournal: an object whose tracking someone removed by hand is
// released already, and the message does not invent a journal.
func TestReleasedByHandIsNotBlamedOnAJournal(t *testing.T) {
	w := newWorld(t, "team-a")
	w.cluster.Update(w.refs["team-a"], func(o *cluster.Object) {
		delete(o.Labels, argocd.DefaultInstanceLabelKey)
		delete(o.Annotations, argocd.AnnotationTrackingID)
	})
	run := w.detach(DetachRequest{All: true})
	it := run.Items[0]
	if it.Outcome != OutcomeUnchanged || it.Reason != ReasonAlreadyReleased || !strings.Contains(it.Message, "by hand") || strings.Contains(it.Message, journal.Ext) {
		t.Fatalf("%s %s %q", it.Outcome, it.Reason, it.Message)
	}
}

// TestSlowPatchesAreNotCutOffWithoutAnInterruption: the grace for patches in flight starts with an
// interruption. A patch that takes longer than the grace — waiting in a client rate limiter with a
// low --qps, say — must still land when nothing interrupted the run; it once failed with a deadline.
func TestSlowPatchesAreNotCutOffWithoutAnInterruption(t *testing.T) {
	w := newWorld(t, "team-a", "team-b", "team-c")
	w.cluster.PatchDelay = 60 * time.Millisecond
	e := w.engine()
	e.Grace = 10 * time.Millisecond
	run := w.detach(DetachRequest{All: true})
	runDone, err := e.Execute(context.Background(), run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if got := runDone.Counts()[OutcomeApplied]; got != 3 {
		t.Fatalf("applied %d of 3: %v", got, outcomes(run.Planned, runDone.Applied))
	}
}

// TestInterruptionCutsOffPatchesAfterTheGrace: after an interruption, a patch still in flight gets
// the grace and no more; it is recorded as failed, never as applied.
func TestInterruptionCutsOffPatchesAfterTheGrace(t *testing.T) {
	w := newWorld(t, "team-a")
	w.cluster.PatchDelay = 5 * time.Second
	e := w.engine()
	e.Grace = 20 * time.Millisecond
	run := w.detach(DetachRequest{All: true})
	ctx, cancel := context.WithCancel(context.Background())
	// Interrupted once the patch is in flight.
	w.cluster.PatchStarted = func(cluster.Ref) { cancel() }
	start := time.Now()
	runDone, err := e.Execute(ctx, run, DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the patch in flight was not cut off after the grace: the run took %s", took)
	}
	if got := runDone.Items[0].Outcome; got != OutcomeFailed {
		t.Fatalf("outcome %s, want %s", got, OutcomeFailed)
	}
}
