// Package parallel runs independent calls with bounded concurrency: the API client's QPS/burst
// limits the request rate, this bounds how many requests are in flight.
package parallel

import "sync"

// ForEach calls fn(i) for every i in [0, n), at most workers at a time (at least one), and returns
// when all calls have returned. fn must be safe to call concurrently.
func ForEach(n, workers int, fn func(i int)) {
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
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
