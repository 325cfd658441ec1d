package exposition

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
)

// Event reasons, on the Application.
const (
	// ReasonHighRiskRequiresPruning (Warning): a high-risk resource started requiring pruning.
	ReasonHighRiskRequiresPruning = "HighRiskRequiresPruning"
	// ReasonUnguardedHighRiskPrune (Warning): a high-risk resource that requires pruning lost its
	// last guard.
	ReasonUnguardedHighRiskPrune = "UnguardedHighRiskPrune"
	// ReasonHighRiskPruneResolved (Normal): a high-risk resource no longer requires pruning (released,
	// back in git, or gone).
	ReasonHighRiskPruneResolved = "HighRiskPruneResolved"
	// ReasonHighRiskPruneGuarded (Normal): a high-risk resource that requires pruning is guarded again.
	ReasonHighRiskPruneGuarded = "HighRiskPruneGuarded"
)

// EventWriter creates one Event. The watch writes its Events itself rather than through client-go's
// recorder: the recorder's correlator merges more than 10 similar Events of an object in 10 minutes
// into one "(combined from similar events)" naming only the last resource, and drops them past 25
// — in the big incident (dozens of Namespaces of one app at once) most would be lost. Here every
// transition is its own Event, written until the API server accepts it.
type EventWriter func(ctx context.Context, ev *corev1.Event) error

// EventLister lists the messages of the Events with reason on the object of uid, in namespace: a new
// leader asks it before announcing what it saw while it was not leading, which the old leader may
// already have announced.
type EventLister func(ctx context.Context, namespace string, uid types.UID, reason string) ([]string, error)

// transition is one Event to send.
type transition struct {
	app      appRef
	reason   string
	resource string
	message  string
}

type appRef struct {
	Namespace, Name string
	UID             types.UID
}

func (t transition) id() string {
	return t.app.Namespace + "/" + t.app.Name + "|" + t.reason + "|" + t.resource
}

func (t transition) eventType() string {
	switch t.reason {
	case ReasonHighRiskPruneResolved, ReasonHighRiskPruneGuarded:
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// outgoing is a transition queued for the API server.
type outgoing struct {
	t transition
	// check: send only when no Event says it yet (what a new leader saw while following).
	check bool
	// name is the Event's, fixed when queued: a create retried after its answer was lost finds it
	// there (AlreadyExists) instead of writing it twice.
	name string
}

// eventState is what an app's last evaluation announced, by resource key.
type eventState struct {
	pruning   map[string]argocd.Resource
	unguarded map[string]bool
}

// Retries of a failed write or takeover check: from firstEventRetry, doubling, up to maxEventRetry.
const (
	firstEventRetry = 200 * time.Millisecond
	maxEventRetry   = 30 * time.Second
)

// Events turns successive summaries of each app into Events: one per transition, sent by the
// leader only. What a replica sees while it does not lead (or before its first evaluation of an app)
// is pending; when it leads, a pending transition is sent unless an Event already says it — the
// previous leader's, or this replica's before a restart. Events are queued and written in order by
// one sender (Run); a failed write or check is retried with backoff, never dropped; Deliver flushes
// the queue at SIGTERM.
type Events struct {
	write  EventWriter
	list   EventLister
	sent   func(reason string)
	source corev1.EventSource
	now    func() time.Time
	log    func(format string, args ...any)
	retry  time.Duration

	mu      sync.Mutex
	leading bool
	state   map[string]eventState
	pending map[string]transition
	queue   []outgoing
	last    int64 // the last name's suffix, so that names stay unique
	wake    chan struct{}
}

// EventOptions are what NewEvents needs besides the API server's writer and lister; every field
// may be left zero.
type EventOptions struct {
	// Source is every Event's source: the component that writes it and the replica's identity.
	Source corev1.EventSource
	// Sent is told the reason of each Event the API server accepted.
	Sent func(reason string)
	// Log tells of a failed write or check, before it is retried.
	Log func(format string, args ...any)
	// Retry is the wait after a first failed write or check, doubled at each failure in a row up to
	// 30 s; zero: 200 ms.
	Retry time.Duration
}

// NewEvents sends its Events through write, checking with list what an Event already says.
func NewEvents(write EventWriter, list EventLister, opts EventOptions) *Events {
	e := &Events{write: write, list: list, sent: opts.Sent, source: opts.Source, now: time.Now, log: opts.Log, retry: opts.Retry,
		state: map[string]eventState{}, pending: map[string]transition{}, wake: make(chan struct{}, 1)}
	if e.sent == nil {
		e.sent = func(string) {}
	}
	if e.log == nil {
		e.log = func(string, ...any) {}
	}
	if e.retry <= 0 {
		e.retry = firstEventRetry
	}
	return e
}

// Observe records an app's summary and queues the transitions it shows (when leading; else they
// wait as pending).
func (e *Events) Observe(key string, s Summary) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prev, had := e.state[key]
	next := eventState{pruning: map[string]argocd.Resource{}, unguarded: map[string]bool{}}
	app := appRef{Namespace: s.Namespace, Name: s.Name, UID: types.UID(s.UID)}
	var found []transition
	for _, k := range slices.Sorted(maps.Keys(s.HighRiskPruning)) {
		f := s.HighRiskPruning[k]
		next.pruning[k] = f.Resource
		_, wasPruning := prev.pruning[k]
		_, unguarded := s.UnguardedHighRisk[k]
		_, unknown := s.UnknownHighRisk[k]
		// Guards that could not be read leave the last answer standing: no Event says a guard was
		// lost (or regained) because a read failed.
		if unknown {
			next.unguarded[k] = prev.unguarded[k]
		} else if unguarded {
			next.unguarded[k] = true
		}
		t := transition{app: app, resource: f.Resource.String()}
		switch {
		case !wasPruning:
			t.reason, t.message = ReasonHighRiskRequiresPruning, pruningMessage(s, f, unguarded, unknown)
		case unknown:
			continue
		case unguarded && !prev.unguarded[k]:
			t.reason, t.message = ReasonUnguardedHighRiskPrune, unguardedMessage(s, f)
		case !unguarded && prev.unguarded[k]:
			t.reason, t.message = ReasonHighRiskPruneGuarded, guardedMessage(f)
		default:
			continue
		}
		found = append(found, t)
	}
	if had {
		for _, k := range slices.Sorted(maps.Keys(prev.pruning)) {
			if _, still := s.HighRiskPruning[k]; !still {
				r := prev.pruning[k]
				found = append(found, transition{app: app, resource: r.String(), reason: ReasonHighRiskPruneResolved, message: resolvedMessage(r)})
			}
		}
	}
	for _, t := range found {
		switch {
		case e.leading && had:
			e.enqueue(t, false)
		case e.leading:
			e.enqueue(t, true)
		default:
			e.pending[t.id()] = t
		}
	}
	// A transition that reversed before it was announced is not news any more.
	for id, t := range e.pending {
		if t.app.Namespace == s.Namespace && t.app.Name == s.Name && !stillTrue(t, s) {
			delete(e.pending, id)
		}
	}
	e.state[key] = next
	if e.leading {
		e.queuePending()
	}
}

// enqueue queues t under a new name and wakes the sender. The caller holds mu.
func (e *Events) enqueue(t transition, check bool) {
	n := e.now().UnixNano()
	if n <= e.last {
		n = e.last + 1
	}
	e.last = n
	e.queue = append(e.queue, outgoing{t: t, check: check, name: fmt.Sprintf("%s.%x", t.app.Name, n)})
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// queuePending moves what waited for leadership to the queue, to be checked. The caller holds mu.
func (e *Events) queuePending() {
	ids := make([]string, 0, len(e.pending))
	for id := range e.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e.enqueue(e.pending[id], true)
		delete(e.pending, id)
	}
}

func stillTrue(t transition, s Summary) bool {
	in := func(m map[string]Finding) bool {
		for _, f := range m {
			if f.Resource.String() == t.resource {
				return true
			}
		}
		return false
	}
	switch t.reason {
	case ReasonUnguardedHighRiskPrune:
		return in(s.UnguardedHighRisk)
	case ReasonHighRiskPruneResolved:
		return !in(s.HighRiskPruning)
	case ReasonHighRiskPruneGuarded:
		return in(s.HighRiskPruning) && !in(s.UnguardedHighRisk)
	}
	return in(s.HighRiskPruning)
}

// Forget drops an app that is gone.
func (e *Events) Forget(key string, namespace, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.state, key)
	for id, t := range e.pending {
		if t.app.Namespace == namespace && t.app.Name == name {
			delete(e.pending, id)
		}
	}
}

// SetLeading changes leadership. Gaining it queues the pending transitions, to be checked; losing it
// puts what is still queued back to pending — the new leader may send it, so this replica checks
// before sending it should it lead again.
func (e *Events) SetLeading(leading bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = leading
	if leading {
		e.queuePending()
		return
	}
	for _, o := range e.queue {
		e.pending[o.t.id()] = o.t
	}
	e.queue = nil
}

// queued is how many Events wait to be sent.
func (e *Events) queued() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.queue)
}

// Run sends queued Events until ctx is done.
func (e *Events) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		e.Deliver(ctx)
	}
}

// Deliver sends the queue, in order, while leading: a failed check or write is retried with backoff
// until it succeeds or ctx is done. It returns how many are left.
func (e *Events) Deliver(ctx context.Context) int {
	wait := e.retry
	for {
		e.mu.Lock()
		if !e.leading || len(e.queue) == 0 {
			e.mu.Unlock()
			return e.queued()
		}
		o := e.queue[0]
		e.queue = e.queue[1:]
		e.mu.Unlock()
		err := e.send(ctx, o)
		if err == nil {
			wait = e.retry
			continue
		}
		e.mu.Lock()
		if e.leading {
			e.queue = append([]outgoing{o}, e.queue...)
		} else {
			e.pending[o.t.id()] = o.t
		}
		e.mu.Unlock()
		if ctx.Err() != nil {
			return e.queued()
		}
		e.log("error: %v (retrying in %s; %d Events queued)", err, wait, e.queued())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return e.queued()
		case <-t.C:
		}
		wait = min(2*wait, maxEventRetry)
	}
}

// send writes one Event, after checking no Event says it yet when asked to; it counts what the API
// server accepted.
func (e *Events) send(ctx context.Context, o outgoing) error {
	t := o.t
	if o.check {
		msgs, err := e.list(ctx, t.app.Namespace, t.app.UID, t.reason)
		if err != nil {
			return fmt.Errorf("list Events of Application %s/%s: %w", t.app.Namespace, t.app.Name, err)
		}
		if announced(msgs, t.resource) {
			return nil
		}
	}
	now := metav1.NewTime(e.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.app.Namespace, Name: o.name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application",
			Namespace: t.app.Namespace, Name: t.app.Name, UID: t.app.UID},
		Reason: t.reason, Message: t.message, Type: t.eventType(),
		Source:         e.source,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := e.write(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("write Event %s on Application %s/%s: %w", t.reason, t.app.Namespace, t.app.Name, err)
	}
	e.sent(t.reason)
	return nil
}

// announced reports whether one of the messages is about resource: every message starts with it.
func announced(messages []string, resource string) bool {
	for _, m := range messages {
		if strings.HasPrefix(m, resource+" ") {
			return true
		}
	}
	return false
}

func pruningMessage(s Summary, f Finding, unguarded, unknown bool) string {
	guardText := "It is guarded (" + strings.Join(f.Guards, ", ") + ")"
	switch {
	case unknown:
		guardText = "Its guards could not be read (see the watch's log)"
	case unguarded:
		guardText = "Nothing guards it"
	}
	return fmt.Sprintf("%s requires pruning: a sync with prune deletes it%s (%s). %s. Release it, deleting nothing: %s. Or guard it: %s.",
		f.Resource, contentsText(f, s.Uncounted), f.Why, guardText, detachCommand(s, f.Resource), guardCommand(f.Resource))
}

func unguardedMessage(s Summary, f Finding) string {
	return fmt.Sprintf("%s requires pruning and nothing guards it any more: a sync with prune deletes it%s (%s). Guard it: %s. Or release it, deleting nothing: %s.",
		f.Resource, contentsText(f, s.Uncounted), f.Why, guardCommand(f.Resource), detachCommand(s, f.Resource))
}

func guardedMessage(f Finding) string {
	return fmt.Sprintf("%s still requires pruning and is guarded again (%s): a sync with prune does not delete it.", f.Resource, strings.Join(f.Guards, ", "))
}

func resolvedMessage(r argocd.Resource) string {
	return fmt.Sprintf("%s no longer requires pruning: a sync with prune does not delete it any more.", r)
}

// contentsText says what a deletion takes with it. uncounted names the kinds the watch leaves out of
// a Namespace's count (it may not list them cluster-wide): the count is then a minimum, and says so.
func contentsText(f Finding, uncounted string) string {
	c := f.Contents
	if c == nil {
		return ""
	}
	// A partial count (kinds the ServiceAccount may not list) is a minimum, and says so.
	the, its := "the ", "its "
	if c.Partial != "" {
		the, its = "at least ", "at least "
	}
	switch {
	case c.Objects >= 0 && uncounted != "":
		return fmt.Sprintf(" and at least %d objects in it (%s not counted)", c.Objects, uncounted)
	case c.Objects >= 0:
		return fmt.Sprintf(" and %s%d objects in it", the, c.Objects)
	case c.CustomResources >= 0:
		return fmt.Sprintf(" and %s%d custom resources", its, c.CustomResources)
	}
	return ""
}

func detachCommand(s Summary, r argocd.Resource) string {
	return confirmed([]string{"detach"}, s.Namespace+"/"+s.Name, r.String()).String()
}

// confirmed is a command that changes something at once (--yes), as Events recommend them.
func confirmed(path []string, args ...string) option.Command {
	return option.Command{Path: path, Args: args, Options: []option.Setting{option.Flag(option.Yes)}}
}

// guardCommand is `guard protect` for the kinds unprune's admission policy covers, else `guard
// confirm` (Prune=confirm on the object), which guards any kind.
func guardCommand(r argocd.Resource) string {
	for _, k := range guard.Kinds {
		if k.Group == r.Group && k.Kind == r.Kind {
			protect := confirmed([]string{"guard", "protect"}, r.String())
			// --merge: the policy installed may protect more than this kind, which a plain apply drops.
			policy := option.Command{Path: []string{"guard", "policy"}, Options: []option.Setting{option.Flag(option.GuardMerge), {Name: option.GuardKinds, Value: k.Flag}, option.Flag(option.Apply)}}
			return fmt.Sprintf("%v (with %v)", protect, policy)
		}
	}
	return confirmed([]string{"guard", "confirm"}, r.String()).String()
}
