// Package engine is the flow every changing command shares, below the command line: select the
// objects, read them live, plan, apply the safety refusals, then preview, ask the API server for a
// dry run, or apply with a journal — and verify with Argo CD. It returns typed results; the cli
// package turns flags into requests and results into output and exit codes.
//
// Data flows one way, each phase returning a value the next takes and none changing what it was
// given: request → Plan* (read in bulk, pure plan by package plan) → *Planned → Apply → *Applied →
// Verify → Verified; the caller builds its report from the three (Result). The objects are read and
// patched through cluster.Objects, whichever backend serves them.
package engine

import (
	"time"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/cluster"
	"github.com/unprune/unprune/internal/journal"
	"github.com/unprune/unprune/internal/plan"
	"github.com/unprune/unprune/internal/verify"
)

// DryRun is how far a changing command goes, as kubectl's dry-run option.
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

// Decision is what became of one object, as planned or as carried out.
type Decision struct {
	Outcome Outcome
	// Reason is a machine-readable code: a refusal code, or a failure class.
	Reason string
	// Message explains a refusal, a failure or a skip.
	Message string
}

// Item is one object of a plan. Planning fills it once; nothing changes it afterwards.
type Item struct {
	// App is the Application the object belongs to; nil for objects named outside any app.
	App *AppRun
	// Row is the app's status row, when there is one.
	Row     *argocd.Resource
	Objects cluster.Objects
	Ref     cluster.Ref
	// Live is the object as read before planning.
	Live *cluster.Object
	Plan plan.Plan
	// Decision is the planned outcome: Planned, Unchanged, Refused, Gone or Failed.
	Decision
	// Entry is the index of the item's entry in the journal an undo restores; -1 otherwise.
	Entry int
	// Phase is the step of the change that patches it (Step.Phase): a move hands the tracking over
	// in phase 0 and takes its marks off in phase 1, once Argo CD has shown the handover.
	Phase int
}

// rowKey is the key of the item's row in an app's status (argocd.Resource.Key).
func (it *Item) rowKey() string {
	if it.Row != nil {
		return it.Row.Key()
	}
	return argocd.Resource{Group: it.Ref.Group, Kind: it.Ref.Kind, Namespace: it.Ref.Namespace, Name: it.Ref.Name}.Key()
}

// AppRun is one Application of a plan.
type AppRun struct {
	App      argocd.Application
	Instance string
	// Objects is the app's destination cluster; nil when it could not be reached.
	Objects cluster.Objects
	// Message says why the app was not processed (destination unreachable, operation running).
	Message string
}

// Ref is namespace/name.
func (a *AppRun) Ref() string { return a.App.Ref() }

// Planner plans one item from its live object: when the plan is made, and again by Apply when a
// patch meets a conflict and the object is read anew.
type Planner interface {
	Plan(it *Item, live *cluster.Object) plan.Plan
}

// Planned is what a Plan* function returns: the apps and, per object, what was read and decided.
// Nothing is changed yet; Apply carries it out and leaves it as it is.
type Planned struct {
	Command  string
	Strategy string
	Apps     []*AppRun
	Items    []*Item
	// Warnings for the user, from planning.
	Warnings []string
	// Renamed is what a rename journal keeps of the renamed Application.
	Renamed *journal.Renamed
	// AllOrNothing changes nothing when any object is refused or unreadable.
	AllOrNothing bool
	planner      Planner
}

// Counts tallies planned outcomes.
func (p *Planned) Counts() map[Outcome]int {
	m := map[Outcome]int{}
	for _, it := range p.Items {
		m[it.Outcome]++
	}
	return m
}

// Preview is what a preview does with a plan: nothing, each item as planned.
func (p *Planned) Preview() *Applied {
	a := &Applied{Mode: ModePreview, Items: make([]ItemResult, len(p.Items))}
	for i, it := range p.Items {
		a.Items[i] = ItemResult{Decision: it.Decision, Plan: it.Plan}
	}
	return a
}

// ItemResult is what became of one item of a plan.
type ItemResult struct {
	Decision
	Attempts int
	// Plan is the plan carried out: the item's, or the one made again after a conflict.
	Plan plan.Plan
	// Object is the object as the patch left it (nil when none was applied).
	Object *cluster.Object `json:"-"`
}

// Applied is what Apply (or Restore) did with a plan.
type Applied struct {
	Mode Mode
	// Items are the results of the plan's items, in its order.
	Items []ItemResult
	// Journal is the journal's path, when one was written.
	Journal string
	// JournalErr is a failure to write the journal after patches were sent.
	JournalErr error
	// Interrupted is true when a signal stopped the run before every patch was sent.
	Interrupted bool
}

// Counts tallies outcomes.
func (a *Applied) Counts() map[Outcome]int {
	m := map[Outcome]int{}
	for _, it := range a.Items {
		m[it.Outcome]++
	}
	return m
}

// Verified is, per app of a plan (in its order), what Argo CD showed afterwards; nil for an app
// that was not waited for.
type Verified []*verify.Result

// Result is a changing command's run, phase by phase: what was planned, what was done (nil before
// Apply: a preview), what Argo CD showed (nil when nothing was verified). Reports are built from it.
type Result struct {
	Planned  *Planned
	Applied  *Applied
	Verified Verified
	// Change and Executed are the change planned and what its run did (nil before Execute).
	Change   *Change
	Executed *Executed
}

// ResultOf is a change's run as reports read it: x nil for a preview of it.
func ResultOf(c *Change, x *Executed, v Verified) Result {
	r := Result{Planned: c.Planned, Change: c, Executed: x, Verified: v}
	if x != nil {
		r.Applied = x.Applied
	}
	return r
}

// Done is what was done: the plan as previewed before Apply.
func (r Result) Done() *Applied {
	if r.Applied == nil {
		return r.Planned.Preview()
	}
	return r.Applied
}

// Engine runs requests against backends.
type Engine struct {
	// ArgoCD is the installation; nil for commands that need none (undo, guard on objects).
	ArgoCD cluster.ArgoCD
	// Settings are Argo CD's tracking settings; needed by detach.
	Settings argocd.Settings
	Journals *journal.Store
	// CompactWhileReporting lets Execute return once every outcome is on disk, and compact the
	// journal into one document while the caller reports: the caller must call
	// Executed.WaitJournal before it ends and before it reads JournalErr.
	CompactWhileReporting bool
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
	// CheckTimeout bounds how long a check waits for Argo CD to compare an app; 0 means
	// CheckTimeout.
	CheckTimeout time.Duration
	// Connect and ArgoCDOf reach what a journal recorded, for undo and for the rollback of a run
	// whose check failed.
	Connect  Connect
	ArgoCDOf ArgoCDOf
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

func (e *Engine) poll() time.Duration {
	if e.Poll > 0 {
		return e.Poll
	}
	return verify.DefaultPoll
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
