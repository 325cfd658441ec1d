package watch

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unprune/unprune/internal/argocd"
	"github.com/unprune/unprune/internal/guard"
	"github.com/unprune/unprune/internal/option"
)

// Event reasons, on the Application.
const (
	// ReasonHighRiskRequiresPruning: a high-risk resource started requiring pruning.
	ReasonHighRiskRequiresPruning = "HighRiskRequiresPruning"
	// ReasonUnguardedHighRiskPrune: a high-risk resource that requires pruning lost its last guard.
	ReasonUnguardedHighRiskPrune = "UnguardedHighRiskPrune"
)

// Emitter sends one Event; EventRecorder's Eventf is one (it deduplicates and rate-limits).
type Emitter interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

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

// eventState is what an app's last evaluation announced, by resource key.
type eventState struct {
	pruning   map[string]bool
	unguarded map[string]bool
}

// events turns successive summaries of each app into Events: one per transition, sent by the
// leader only. What a replica sees while it does not lead (or before its first evaluation of an app)
// is pending; when it leads, a pending transition is sent unless an Event already says it — the
// previous leader's, or this replica's before a restart.
type events struct {
	emit Emitter
	list EventLister
	sent func(reason string)

	mu      sync.Mutex
	leading bool
	state   map[string]eventState
	pending map[string]transition
}

func newEvents(emit Emitter, list EventLister, sent func(string)) *events {
	if sent == nil {
		sent = func(string) {}
	}
	return &events{emit: emit, list: list, sent: sent, state: map[string]eventState{}, pending: map[string]transition{}}
}

// observe records an app's summary and returns the transitions to send now. The caller sends them
// with send; pending ones wait for leadership.
func (e *events) observe(key string, s Summary) (now, check []transition) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prev, had := e.state[key]
	next := eventState{pruning: map[string]bool{}, unguarded: map[string]bool{}}
	app := appRef{Namespace: s.Namespace, Name: s.Name, UID: types.UID(s.UID)}
	for _, k := range sortedKeys(s.HighRiskPruning) {
		f := s.HighRiskPruning[k]
		next.pruning[k] = true
		_, unguarded := s.UnguardedHighRisk[k]
		if unguarded {
			next.unguarded[k] = true
		}
		var t transition
		switch {
		case !prev.pruning[k]:
			t = transition{app: app, reason: ReasonHighRiskRequiresPruning, resource: f.Resource.String(), message: pruningMessage(s, f, unguarded)}
		case unguarded && !prev.unguarded[k]:
			t = transition{app: app, reason: ReasonUnguardedHighRiskPrune, resource: f.Resource.String(), message: unguardedMessage(s, f)}
		default:
			continue
		}
		switch {
		case e.leading && had:
			now = append(now, t)
		case e.leading:
			check = append(check, t)
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
		// What could not be checked before (a failed list) is tried again now.
		for id, t := range e.pending {
			check = append(check, t)
			delete(e.pending, id)
		}
	}
	return now, check
}

func stillTrue(t transition, s Summary) bool {
	m := s.HighRiskPruning
	if t.reason == ReasonUnguardedHighRiskPrune {
		m = s.UnguardedHighRisk
	}
	for _, f := range m {
		if f.Resource.String() == t.resource {
			return true
		}
	}
	return false
}

// forget drops an app that is gone.
func (e *events) forget(key string, namespace, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.state, key)
	for id, t := range e.pending {
		if t.app.Namespace == namespace && t.app.Name == name {
			delete(e.pending, id)
		}
	}
}

// setLeading changes leadership; on gaining it, it returns the pending transitions to check.
func (e *events) setLeading(leading bool) []transition {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = leading
	if !leading {
		return nil
	}
	out := make([]transition, 0, len(e.pending))
	for id, t := range e.pending {
		out = append(out, t)
		delete(e.pending, id)
	}
	return out
}

// isLeading reports leadership.
func (e *events) isLeading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// send emits transitions; those in check are emitted only when no Event says them yet.
func (e *events) send(ctx context.Context, now, check []transition) error {
	for i, t := range check {
		msgs, err := e.list(ctx, t.app.Namespace, t.app.UID, t.reason)
		if err != nil {
			e.keep(check[i:])
			return fmt.Errorf("list Events of Application %s/%s: %w", t.app.Namespace, t.app.Name, err)
		}
		if !announced(msgs, t.resource) {
			now = append(now, t)
		}
	}
	for _, t := range now {
		ref := &corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: t.app.Namespace, Name: t.app.Name, UID: t.app.UID}
		e.emit.Eventf(ref, corev1.EventTypeWarning, t.reason, "%s", t.message)
		e.sent(t.reason)
	}
	return nil
}

// keep puts transitions back to pending, to be checked at the next evaluation.
func (e *events) keep(ts []transition) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range ts {
		e.pending[t.id()] = t
	}
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

func pruningMessage(s Summary, f Finding, unguarded bool) string {
	guardText := "It is guarded (" + strings.Join(f.Guards, ", ") + ")"
	if unguarded {
		guardText = "Nothing guards it"
	}
	return fmt.Sprintf("%s requires pruning: a sync with prune deletes it%s (%s). %s. Release it, deleting nothing: %s. Or guard it: %s.",
		f.Resource, contentsText(f), f.Why, guardText, detachCommand(s, f.Resource), guardCommand(f.Resource))
}

func unguardedMessage(s Summary, f Finding) string {
	return fmt.Sprintf("%s requires pruning and nothing guards it any more: a sync with prune deletes it%s (%s). Guard it: %s. Or release it, deleting nothing: %s.",
		f.Resource, contentsText(f), f.Why, guardCommand(f.Resource), detachCommand(s, f.Resource))
}

func contentsText(f Finding) string {
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
			policy := option.Command{Path: []string{"guard", "policy"}, Options: []option.Setting{{Name: option.GuardKinds, Value: k.Flag}, option.Flag(option.Apply)}}
			return fmt.Sprintf("%v (with %v)", protect, policy)
		}
	}
	return confirmed([]string{"guard", "confirm"}, r.String()).String()
}
