package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestForEachCallsEveryIndexOnceWithinTheBound(t *testing.T) {
	for _, tt := range []struct{ n, workers, wantMax int }{{0, 4, 0}, {1, 4, 1}, {50, 4, 4}, {5, 0, 1}} {
		var mu sync.Mutex
		seen := map[int]int{}
		var running, peak atomic.Int32
		ForEach(tt.n, tt.workers, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			time.Sleep(time.Millisecond) // hold the slot so overlapping calls show
			running.Add(-1)
			mu.Lock()
			seen[i]++
			mu.Unlock()
		})
		if len(seen) != tt.n {
			t.Errorf("n=%d: %d indexes called", tt.n, len(seen))
		}
		for i, c := range seen {
			if c != 1 || i < 0 || i >= tt.n {
				t.Errorf("n=%d: index %d called %d times", tt.n, i, c)
			}
		}
		if int(peak.Load()) > tt.wantMax {
			t.Errorf("n=%d workers=%d: %d calls at once, want at most %d", tt.n, tt.workers, peak.Load(), tt.wantMax)
		}
	}
}
