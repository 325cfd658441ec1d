// Package engine is the flow every changing command shares, below the command line: select the
// objects, read them live, plan, apply the safety refusals, then preview, ask the API server for a
// dry run, or apply with a journal — and verify with Argo CD. It returns typed results; the cli
// package turns flags into requests and results into output and exit codes.
//
// Data flows one way: request → read (in bulk) → pure plan (package plan) → execute → verify →
// Result. The objects are read and patched through cluster.Objects, whichever backend serves them.
package engine

import (
	"fmt"
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// DryRun is how far a changing command goes, as kubectl's --dry-run.
type DryRun int

const (
	// DryRunClient previews: nothing is sent to the cluster.
	DryRunClient DryRun = iota
	// DryRunServer sends every patch with dryRun=All: the API server and its admission checks
	// judge them, nothing persists.
	DryRunServer
	// DryRunNone applies.
	DryRunNone
)

// ParseDryRun reads a --dry-run value; "" means the default (client, or none with --yes).
func ParseDryRun(s string, yes bool) (DryRun, error) {
	switch s {
	case "":
		if yes {
			return DryRunNone, nil
		}
		return DryRunClient, nil
	case "client":
		return DryRunClient, nil
	case "server":
		return DryRunServer, nil
	case "none":
		if !yes {
			return 0, fmt.Errorf("--dry-run=none applies changes: add --yes to confirm")
		}
		return DryRunNone, nil
	}
	return 0, fmt.Errorf(`--dry-run=%q: use "client" (preview), "server" (the API server judges, nothing persists) or "none" (apply, with --yes)`, s)
}

// Mode names a DryRun in reports.
func (d DryRun) Mode() Mode {
	switch d {
	case DryRunServer:
		return ModeServerDryRun
	case DryRunNone:
		return ModeApply
	}
	return ModePreview
}

// Mode is what a run did, in reports.
type Mode string

const (
	ModePreview      Mode = "Preview"
	ModeServerDryRun Mode = "ServerDryRun"
	ModeApply        Mode = "Apply"
)

// Outcome is what happened to one object.
type Outcome string

const (
	OutcomePlanned        Outcome = "Planned"        // a change is planned (preview)
	OutcomeUnchanged      Outcome = "Unchanged"      // nothing to change
	OutcomeRefused        Outcome = "Refused"        // a safety rule keeps unprune away
	OutcomeGone           Outcome = "Gone"           // the object no longer exists; skipped
	OutcomeDryRunAccepted Outcome = "DryRunAccepted" // the API server accepted the patch in a dry run
	OutcomeApplied        Outcome = "Applied"        // patched
	OutcomeRestored       Outcome = "Restored"       // undo patched it back
	OutcomeFailed         Outcome = "Failed"         // the patch (or the read) failed
	OutcomeNotAttempted   Outcome = "NotAttempted"   // interrupted before its patch was sent
)

// ReasonAlreadyReleased marks an Unchanged object that the app's status still lists but that carries
// no tracking of the app any more: released by an earlier, interrupted run (or by hand) before Argo
// CD compared the app again. The run goes on with the others and waits for Argo CD to drop it.
const ReasonAlreadyReleased = "AlreadyReleased"

// Changed reports outcomes that changed the object.
func (o Outcome) Changed() bool { return o == OutcomeApplied || o == OutcomeRestored }

// Item is one object of a run.
type Item struct {
	// App is the Application the object belongs to; nil for guard changes.
	App *AppRun
	// Row is the app's status row, when there is one.
	Row     *argocd.Resource
	Objects cluster.Objects
	Ref     cluster.Ref
	// Live is the object as read before planning (after a conflict, as read last).
	Live *cluster.Object
	Plan plan.Plan

	Outcome Outcome
	// Reason is a machine-readable code: a refusal code, or a failure class.
	Reason string
	// Message explains a refusal, a failure or a skip.
	Message  string
	Attempts int
	// Entry is the index of the item's journal entry; -1 when it has none.
	Entry int

	// replan plans again from a freshly read object after a conflict.
	replan func(*cluster.Object) plan.Plan
}

// Changes are the changes planned or made.
func (it *Item) Changes() []journal.Change { return it.Plan.Changes }

// AppRun is one Application of a run.
type AppRun struct {
	App      argocd.Application
	Instance string
	// Objects is the app's destination cluster; nil when it could not be reached.
	Objects cluster.Objects
	// Message says why the app was not processed (destination unreachable, operation running).
	Message string
	// Verification is what Argo CD showed afterwards, when the run waited for it.
	Verification *verify.Result
}

// Ref is namespace/name.
func (a *AppRun) Ref() string { return a.App.Ref() }

// Run is the outcome of a changing command.
type Run struct {
	Command  string
	Strategy string
	Mode     Mode
	Apps     []*AppRun
	Items    []*Item
	// Journal is the journal's path, when one was written.
	Journal string
	// JournalErr is a failure to write the journal after patches were sent.
	JournalErr error
	// Interrupted is true when a signal stopped the run before every patch was sent.
	Interrupted bool
	// Warnings for the user.
	Warnings []string
	// Renamed is what a rename journal keeps of the renamed Application.
	Renamed *journal.Renamed
}

// Counts tallies outcomes.
func (r *Run) Counts() map[Outcome]int {
	m := map[Outcome]int{}
	for _, it := range r.Items {
		m[it.Outcome]++
	}
	return m
}

// Engine runs requests against backends.
type Engine struct {
	// ArgoCD is the installation; nil for commands that need none (undo, guard on objects).
	ArgoCD cluster.ArgoCD
	// Settings are Argo CD's tracking settings; needed by detach.
	Settings argocd.Settings
	Journals *journal.Store
	// Workers bounds concurrent patches; the client's QPS/burst bound the rate.
	Workers int
	// Attempts bounds conflict retries per object (re-read, re-plan, patch); 0 means 3.
	Attempts int
	// ToolVersion is recorded in journals.
	ToolVersion string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll is how often verification reads the app; 0 means 100ms.
	Poll time.Duration
	// Grace bounds how long patches already dispatched may take to finish after an interruption,
	// so that the journal records their real outcome; 0 means 10s.
	Grace time.Duration
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) workers() int {
	if e.Workers > 0 {
		return e.Workers
	}
	return 32
}

func (e *Engine) grace() time.Duration {
	if e.Grace > 0 {
		return e.Grace
	}
	return 10 * time.Second
}

func (e *Engine) attempts() int {
	if e.Attempts > 0 {
		return e.Attempts
	}
	return 3
}
