// Package progress shows how far long reads and writes have come, on one line of a terminal.
//
// Work reports through the context: Start finds the Reporter the command put there, and without
// one (scripts, tests, -v logging) every call is a no-op. Nothing is drawn for work that ends
// within Delay, so fast runs never flicker, and the line is erased as soon as no step is running,
// before anything else is printed.
package progress

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

const (
	// Delay is how long work runs before the line appears.
	Delay = 500 * time.Millisecond
	// Interval is the least time between two redraws.
	Interval = 100 * time.Millisecond
)

// Reporter draws the status line of the steps running, e.g.
// "reading live objects 340/1000 · patching 12/500".
type Reporter struct {
	w   io.Writer
	now func() time.Time

	mu    sync.Mutex
	steps []*Step
	last  time.Time
	drawn bool
}

// New returns a Reporter that draws on w, which should be a terminal.
func New(w io.Writer) *Reporter { return &Reporter{w: w, now: time.Now} }

type contextKey struct{}

// NewContext returns ctx carrying r.
func NewContext(ctx context.Context, r *Reporter) context.Context {
	return context.WithValue(ctx, contextKey{}, r)
}

// Step is one piece of work of a known size. A nil *Step is valid and does nothing.
type Step struct {
	r       *Reporter
	what    string
	done    int
	total   int
	started time.Time
}

// Start begins a step of total units, named what ("reading live objects"), on ctx's Reporter;
// it returns nil when ctx has none.
func Start(ctx context.Context, what string, total int) *Step {
	r, _ := ctx.Value(contextKey{}).(*Reporter)
	if r == nil || total <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Step{r: r, what: what, total: total, started: r.now()}
	r.steps = append(r.steps, s)
	return s
}

// Add counts n units done.
func (s *Step) Add(n int) {
	if s == nil {
		return
	}
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s.done = min(s.done+n, s.total)
	r.drawLocked(false)
}

// Finish ends the step; when it was the last one running, the line is erased.
func (s *Step) Finish() {
	if s == nil {
		return
	}
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, t := range r.steps {
		if t == s {
			r.steps = append(r.steps[:i], r.steps[i+1:]...)
			break
		}
	}
	if len(r.steps) == 0 {
		r.clearLocked()
		return
	}
	r.drawLocked(true)
}

// Clear erases the line, if one is drawn; commands call it before they print.
func (r *Reporter) Clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clearLocked()
}

func (r *Reporter) clearLocked() {
	if r.drawn {
		fmt.Fprint(r.w, "\r\x1b[K")
		r.drawn = false
	}
}

// drawLocked redraws when a step has run for Delay and the last redraw is Interval old (or at
// once, when forced and something is drawn already).
func (r *Reporter) drawLocked(force bool) {
	now := r.now()
	if !(force && r.drawn) && now.Sub(r.last) < Interval {
		return
	}
	var parts []string
	for _, s := range r.steps {
		if now.Sub(s.started) >= Delay {
			parts = append(parts, fmt.Sprintf("%s %d/%d", s.what, s.done, s.total))
		}
	}
	if len(parts) == 0 {
		return
	}
	fmt.Fprint(r.w, "\r\x1b[K"+strings.Join(parts, " · "))
	r.last, r.drawn = now, true
}
