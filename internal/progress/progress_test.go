package progress

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// clock is a hand-moved time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                       { return c.t }
func (c *clock) advance(d time.Duration)              { c.t = c.t.Add(d) }
func newReporter(c *clock, w *bytes.Buffer) *Reporter { return &Reporter{w: w, now: c.now} }

func TestNoReporterIsANoOp(t *testing.T) {
	s := Start(context.Background(), "reading", 10)
	if s != nil {
		t.Fatalf("Start without a Reporter = %v, want nil", s)
	}
	s.Add(1)
	s.Finish()
}

func TestFastWorkDrawsNothing(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	ctx := NewContext(context.Background(), newReporter(c, &out))
	s := Start(ctx, "reading live objects", 3)
	for range 3 {
		c.advance(100 * time.Millisecond)
		s.Add(1)
	}
	s.Finish()
	if out.Len() != 0 {
		t.Fatalf("work shorter than Delay drew %q", out.String())
	}
}

func TestSlowWorkDrawsThenErases(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	ctx := NewContext(context.Background(), newReporter(c, &out))
	read := Start(ctx, "reading live objects", 1000)
	c.advance(Delay)
	read.Add(340)
	if got, want := out.String(), "\r\x1b[Kreading live objects 340/1000"; got != want {
		t.Fatalf("after Delay drew %q, want %q", got, want)
	}
	out.Reset()
	c.advance(Interval / 2)
	read.Add(1)
	if out.Len() != 0 {
		t.Fatalf("redrew within Interval: %q", out.String())
	}
	patch := Start(ctx, "patching", 5)
	c.advance(Delay)
	patch.Add(2)
	if got, want := out.String(), "\r\x1b[Kreading live objects 341/1000 · patching 2/5"; got != want {
		t.Fatalf("two steps drew %q, want %q", got, want)
	}
	out.Reset()
	read.Finish()
	if got, want := out.String(), "\r\x1b[Kpatching 2/5"; got != want {
		t.Fatalf("finishing one of two steps drew %q, want %q", got, want)
	}
	out.Reset()
	patch.Add(10)
	patch.Finish()
	if got, want := out.String(), "\r\x1b[K"; got != want {
		t.Fatalf("finishing the last step wrote %q, want the erase sequence %q", got, want)
	}
}
