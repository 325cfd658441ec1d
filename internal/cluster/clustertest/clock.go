package clustertest

import (
	"sync"
	"time"
)

// Clock is one timeline for the fake cluster, the fake controller and the code under test: reading
// it never moves it; every write the fakes serve moves it a second past the last comparison, and
// every comparison starts a second past the last write or comparison, and now is then its start.
// So a comparison that proves a change starts in a later second than the change (reconciledAt has
// second precision), a check after a write sees a comparison older than that write as old, polling
// reads as no time, and a deadline passes after as many comparisons as it has seconds.
type Clock struct {
	mu sync.Mutex
	t  time.Time
	// reconciled is the start of the last comparison.
	reconciled time.Time
}

// NewClock starts a timeline at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the timeline on by d and returns the new time: a reading that lets time pass, for a
// wait that must end.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

func (c *Clock) wrote() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = later(c.t, c.reconciled).Add(time.Second)
}

// compare is the start of a comparison beginning now.
func (c *Clock) compare() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reconciled = later(c.t, c.reconciled).Add(time.Second)
	c.t = c.reconciled
	return c.reconciled
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
