package exposition

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/audit"
	"github.com/unprune/unprune/internal/risk"
	"github.com/unprune/unprune/internal/watch/exposition/expositiontest"
)

func summary(app argocd.Application, rows ...audit.Row) Summary {
	return Summarize(app, rows, nil)
}

func TestEventsOnTransitionsOnly(t *testing.T) {
	app := testApp(ns("a"), ns("b"))
	rec := &expositiontest.Recorder{}
	var listed []string
	existing := map[string][]string{}
	e := NewEvents(rec.Write, func(_ context.Context, _ string, _ types.UID, reason string) ([]string, error) {
		listed = append(listed, reason)
		return existing[reason], nil
	}, EventOptions{})
	ctx := context.Background()
	step := func(s Summary) {
		t.Helper()
		e.Observe("argocd/app", s)
		if left := e.Deliver(ctx); left != 0 {
			t.Fatalf("%d Events left", left)
		}
	}
	e.SetLeading(true)
	// First evaluation after a start: what it sees is checked against the Events already there.
	existing[ReasonHighRiskRequiresPruning] = []string{"Namespace/a requires pruning: …"}
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true)))
	if len(rec.Sent) != 0 || len(listed) != 1 {
		t.Fatalf("an already announced row was announced again: %v (listed %v)", rec.Sent, listed)
	}
	// The same state again: nothing.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true)))
	// A second high-risk row starts requiring pruning, unguarded: one Event, naming the commands.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, true), row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.Sent) != 1 || !strings.HasPrefix(rec.Sent[0], ReasonHighRiskRequiresPruning+": Namespace/b requires pruning") ||
		!strings.Contains(rec.Sent[0], "unprune detach argocd/app Namespace/b <Yes>") || !strings.Contains(rec.Sent[0], "unprune guard protect Namespace/b <Yes> (with unprune guard policy <GuardMerge> <GuardKinds> namespaces <Apply>)") ||
		!strings.Contains(rec.Sent[0], "the 3 objects in it") {
		t.Fatalf("events: %q", rec.Sent)
	}
	// a loses its guard: one UnguardedHighRiskPrune.
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)))
	step(summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.Sent) != 2 || !strings.HasPrefix(rec.Sent[1], ReasonUnguardedHighRiskPrune+": Namespace/a requires pruning and nothing guards it") {
		t.Fatalf("events: %q", rec.Sent)
	}
	// Released, then stuck again: a new transition, a new Event. Each release is a Normal Event
	// naming its resource.
	step(summary(app))
	if len(rec.Normal) != 2 || !strings.HasPrefix(rec.Normal[0], ReasonHighRiskPruneResolved+": Namespace/a no longer requires pruning") ||
		!strings.HasPrefix(rec.Normal[1], ReasonHighRiskPruneResolved+": Namespace/b no longer requires pruning") {
		t.Fatalf("normal events after the release: %q", rec.Normal)
	}
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false)))
	if len(rec.Sent) != 3 {
		t.Fatalf("events: %q", rec.Sent)
	}
	// Guarded again: a Normal Event naming the guard.
	guardedB := row(app, ns("b"), audit.Now, risk.High, true)
	guardedB.Guards = []risk.Guard{"AdmissionPolicy"}
	step(summary(app, guardedB))
	if len(rec.Sent) != 3 || len(rec.Normal) != 3 || rec.Normal[2] != ReasonHighRiskPruneGuarded+": Namespace/b still requires pruning and is guarded again (AdmissionPolicy): a sync with prune does not delete it." {
		t.Fatalf("after guarding b: %q %q", rec.Sent, rec.Normal)
	}
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false)))
	// Normal-risk rows never make Events.
	step(summary(app, row(app, ns("b"), audit.Now, risk.High, false), row(app, cm("c"), audit.Now, risk.Normal, false)))
	if len(rec.Sent) != 4 || len(rec.Normal) != 3 {
		t.Fatalf("events: %q %q", rec.Sent, rec.Normal)
	}
}

func TestEventsFollowerHandsOverPending(t *testing.T) {
	app := testApp(ns("a"), ns("b"), ns("c"))
	rec := &expositiontest.Recorder{}
	existing := map[string][]string{ReasonHighRiskRequiresPruning: {"Namespace/a requires pruning: announced by the old leader"}}
	e := NewEvents(rec.Write, func(_ context.Context, _ string, _ types.UID, reason string) ([]string, error) {
		return existing[reason], nil
	}, EventOptions{})
	// While following: nothing is sent.
	for _, s := range []Summary{
		summary(app),
		summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false), row(app, ns("c"), audit.Now, risk.High, false)),
		// c is released before this replica leads: no longer news.
		summary(app, row(app, ns("a"), audit.Now, risk.High, false), row(app, ns("b"), audit.Now, risk.High, false)),
	} {
		e.Observe("argocd/app", s)
		if n := e.queued(); n != 0 {
			t.Fatalf("a follower would send %d Events", n)
		}
	}
	// Leading: a was announced by the old leader; only b is sent.
	e.SetLeading(true)
	if left := e.Deliver(context.Background()); left != 0 {
		t.Fatalf("%d left", left)
	}
	if len(rec.Sent) != 1 || !strings.Contains(rec.Sent[0], "Namespace/b requires pruning") {
		t.Fatalf("after taking over: %q", rec.Sent)
	}
}

// TestEventsRetryFailedCheck: a transition whose check failed (the list of Events) is retried with
// backoff until it succeeds — not dropped, and not left until the app's next evaluation.
func TestEventsRetryFailedCheck(t *testing.T) {
	app := testApp(ns("a"))
	rec := &expositiontest.Recorder{}
	lists := 0
	e := NewEvents(rec.Write, func(context.Context, string, types.UID, string) ([]string, error) {
		lists++
		if lists <= 2 {
			return nil, fmt.Errorf("connection refused")
		}
		return nil, nil
	}, EventOptions{Retry: time.Millisecond})
	e.SetLeading(true)
	s := summary(app, row(app, ns("a"), audit.Now, risk.High, false))
	e.Observe("argocd/app", s)
	if left := e.Deliver(context.Background()); left != 0 || len(rec.Sent) != 1 || lists != 3 {
		t.Fatalf("after two failed checks: %d left, sent %q, %d lists", left, rec.Sent, lists)
	}
	e.Observe("argocd/app", s)
	if left := e.Deliver(context.Background()); left != 0 || len(rec.Sent) != 1 {
		t.Fatalf("sent again: %q", rec.Sent)
	}
}

func TestContentsText(t *testing.T) {
	for _, c := range []struct {
		contents *risk.Contents
		want     string
	}{
		{nil, ""},
		{&risk.Contents{Objects: 12, CustomResources: -1}, " and the 12 objects in it"},
		{&risk.Contents{Objects: 12, CustomResources: -1, Partial: "at least; 3 kinds unreadable"}, " and at least 12 objects in it"},
		{&risk.Contents{Objects: -1, CustomResources: 4}, " and its 4 custom resources"},
		{&risk.Contents{Objects: -1, CustomResources: -1, Partial: "not counted: forbidden"}, ""},
	} {
		if got := contentsText(Finding{Contents: c.contents}, ""); got != c.want {
			t.Errorf("contentsText(%+v) = %q, want %q", c.contents, got, c.want)
		}
	}
	// Kinds the watch does not count (it may not list them cluster-wide): a minimum that says which.
	if got, want := contentsText(Finding{Contents: &risk.Contents{Objects: 12, CustomResources: -1}}, "Pods, ConfigMaps and Secrets"),
		" and at least 12 objects in it (Pods, ConfigMaps and Secrets not counted)"; got != want {
		t.Errorf("uncounted kinds: %q, want %q", got, want)
	}
}
