package readcache

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/unprune/unprune/internal/cluster"
)

// A failed live read is not an answer. Timeouts, 5xx, Forbidden and unreachable clusters say
// nothing about an object's guards: caching one for the TTL as if it did would count a guarded
// resource as unguarded (and announce it) and a cascade as empty. So the caches keep the last good
// answer — an object, or that it is not there — and serve it, with its age, while reading again
// fails; a read that never succeeded is unknown, which the metrics say as such. Failed reads are
// retried with a backoff that grows to the TTL.

// answer is one live read as a cache keeps it.
type answer[V any] struct {
	value V
	// err is the answer's own error (the object is not found) or, with no good answer yet, why the
	// read failed.
	err error
	// readAt is when the good answer was read, in Unix nanoseconds; zero when there is none.
	readAt int64
	// failures are the failed reads in a row since; the next read waits backoff(failures).
	failures int
}

func (a answer[V]) good() bool { return a.readAt != 0 }

// isAnswer tells a read that answered (the object, or that it is not there) from one that failed.
func isAnswer(err error) bool { return err == nil || cluster.IsNotFound(err) }

// firstRetry is how soon a failed read is tried again; each failure in a row doubles it, up to the
// TTL.
const firstRetry = 500 * time.Millisecond

func backoff(failures int, ttl time.Duration) time.Duration {
	d := firstRetry
	for i := 1; i < failures && d < ttl; i++ {
		d *= 2
	}
	return min(d, ttl)
}

// answers caches reads by key.
type answers[V any] struct {
	name  string
	cache *lru[answer[V]]
	ttl   time.Duration
	now   func() time.Time
	stale *staleAnswers
}

func newAnswers[V any](name string, size int, ttl time.Duration, now func() time.Time, stale *staleAnswers) *answers[V] {
	if now == nil {
		now = time.Now
	}
	a := &answers[V]{name: name, cache: newLRU[answer[V]](size, ttl, now), ttl: ttl, now: now, stale: stale}
	a.cache.evicted = func(key string) { stale.done(name + "|" + key) }
	return a
}

// cached is the answer to use without reading: one read within the TTL, or the last good answer
// (else the failure) while a failed read backs off.
func (a *answers[V]) cached(key string) (answer[V], bool) { return a.cache.get(key) }

// record keeps what a read returned and returns the answer to use: the read's own when it answered;
// else the last good answer, served stale; else the failure.
func (a *answers[V]) record(key string, value V, err error) answer[V] {
	if isAnswer(err) {
		r := answer[V]{value: value, err: err, readAt: a.now().UnixNano()}
		a.cache.put(key, r)
		a.stale.done(a.name + "|" + key)
		return r
	}
	r, _ := a.cache.peek(key)
	r.failures++
	if !r.good() {
		r.value, r.err = value, err
	} else {
		a.stale.serve(a.name+"|"+key, time.Unix(0, r.readAt))
	}
	a.cache.putFor(key, r, backoff(r.failures, a.ttl))
	return r
}

// expired is a good answer read longer ago than the TTL, still held.
func (a *answers[V]) expired(key string) (answer[V], bool) {
	r, ok := a.cache.peek(key)
	return r, ok && r.good()
}

// forget drops key: the watch saw the object change.
func (a *answers[V]) forget(key string) {
	a.cache.remove(key)
	a.stale.done(a.name + "|" + key)
}

// staleAnswers are the last good answers served in place of reads that fail, with when they were
// read: their age is how old what the metrics show can be. Every cache of an ArgoCD shares them.
type staleAnswers struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func newStaleAnswers() *staleAnswers { return &staleAnswers{m: map[string]time.Time{}} }

func (s *staleAnswers) serve(key string, readAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = readAt
}

func (s *staleAnswers) done(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// doneUnder forgets every answer whose key starts with prefix (a destination's caches, dropped).
func (s *staleAnswers) doneUnder(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			delete(s.m, k)
		}
	}
}

// oldest is when the oldest answer served stale was read; zero when none is.
func (s *staleAnswers) oldest() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out time.Time
	for _, at := range s.m {
		if out.IsZero() || at.Before(out) {
			out = at
		}
	}
	return out
}

// record is what one evaluation could not read, with no good answer to fall back on: it decides
// which rows' guards are unknown. An evaluation carries it in its context (WithUnread), through
// audit, to the caches.
type record struct {
	mu sync.Mutex
	// destination: the app's destination cluster could not be reached at all.
	destination bool
	// objects are the live objects (cluster.Ref.Key) whose read failed.
	objects map[string]bool
	// policy: unprune's admission policy (or its binding) could not be read.
	policy bool
	// fresh forbids answers older than the TTL: the evaluation is the one after their refresh.
	fresh bool
	// behind are the LISTs refreshing answers older than the TTL the evaluation was given.
	behind []<-chan singleflight.Result
}

type recordKey struct{}

// WithUnread starts an evaluation's record of what it could not read, carried in the context it
// returns; fresh forbids answers older than the TTL (the evaluation is the one after their refresh).
func WithUnread(ctx context.Context, fresh bool) context.Context {
	return context.WithValue(ctx, recordKey{}, &record{objects: map[string]bool{}, fresh: fresh})
}

// recordOf is the evaluation's record; nil outside an evaluation (its methods then do nothing).
func recordOf(ctx context.Context) *record {
	u, _ := ctx.Value(recordKey{}).(*record)
	return u
}

func (u *record) object(key string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.objects[key] = true
}

// mayAnswerBehind reports whether the evaluation may be given answers older than the TTL while
// they are read again: only an evaluation (not another read) that is not the one after a refresh.
func (u *record) mayAnswerBehind() bool { return u != nil && !u.fresh }

// refreshing records a LIST refreshing answers the evaluation was given older than the TTL.
func (u *record) refreshing(ch <-chan singleflight.Result) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.behind = append(u.behind, ch)
}

func (u *record) failedPolicy() {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.policy = true
}

func (u *record) failedDestination() {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.destination = true
}

// Unread is what an evaluation could not read, with no good answer to fall back on — it decides
// which rows' guards are unknown — and the LISTs it left behind.
type Unread struct {
	// Destination: the app's destination cluster could not be reached at all.
	Destination bool
	// Objects are the live objects (cluster.Ref.Key) whose read failed.
	Objects map[string]bool
	// Policy: unprune's admission policy (or its binding) could not be read.
	Policy bool
	// Behind are the LISTs refreshing answers older than the TTL the evaluation used: its judgement
	// stands for the metrics until they are done, and is made again after.
	Behind []<-chan singleflight.Result
}

// Any reports whether anything could not be read.
func (u Unread) Any() bool { return u.Destination || u.Policy || len(u.Objects) > 0 }

// UnreadOf is what the evaluation ctx carries (WithUnread) could not read so far; nothing outside
// an evaluation.
func UnreadOf(ctx context.Context) Unread {
	u := recordOf(ctx)
	if u == nil {
		return Unread{}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	objects := make(map[string]bool, len(u.objects))
	for k := range u.objects {
		objects[k] = true
	}
	return Unread{Destination: u.destination, Objects: objects, Policy: u.policy, Behind: slices.Clone(u.behind)}
}
