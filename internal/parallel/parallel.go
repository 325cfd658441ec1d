// Package parallel runs independent calls with bounded concurrency: the API client's QPS/burst
// limits the request rate, this bounds how many requests are in flight.
package parallel

import (
	"context"
	"sync"
)

// ForEach calls fn(i) for every i in [0, n), at most workers at a time (at least one), and returns
// when all calls have returned. fn must be safe to call concurrently.
func ForEach(n, workers int, fn func(i int)) {
	ForEachUntil(context.Background(), n, workers, fn)
}

// ForEachUntil is ForEach that stops handing out work once ctx is done: calls already running
// finish, the rest never start. It returns how many calls were started; they are the indexes
// [0, started) in order.
func ForEachUntil(ctx interface{ Done() <-chan struct{} }, n, workers int, fn func(i int)) (started int) {
	if workers < 1 {
		workers = 1
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers && w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
dispatch:
	for i := 0; i < n; i++ {
		// A done context wins over a free worker: select alone picks at random among ready cases.
		select {
		case <-ctx.Done():
			break dispatch
		default:
		}
		select {
		case <-ctx.Done():
			break dispatch
		case next <- i:
			started++
		}
	}
	close(next)
	wg.Wait()
	return started
}
