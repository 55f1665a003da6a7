package replicaset

import (
	"sync"
	"sync/atomic"
)

// slowStartInitialBatchSize is the first batch of a slow start
// (Kubernetes' controller.SlowStartInitialBatchSize).
const slowStartInitialBatchSize = 1

// maxInFlight bounds the calls a slow start (or a scale-down) makes at
// once, whatever the batch size. Kubernetes starts a goroutine per call of
// a batch (up to 256 with a burst of 500); more calls in flight than the
// apiserver serves at once only lengthen each batch's slowest call, which
// the next batch waits for. 128 keeps the apiserver busy through a
// batch's tail and the sync between batches (a 10,000-pod ramp measured
// 5,200-5,500 pods/s with 64, 6,000-7,700 with 128), and stays within one
// user's fair share of the apiserver's seats (150 by default); 256 went
// past it and was refused.
const maxInFlight = 128

// slowStartBatches returns the batch sizes of a slow start of n calls:
// initial, twice that, and so on, the last batch taking what is left
// (1, 2, 4, 8, 5 for n = 20).
func slowStartBatches(n, initial int) []int {
	var out []int
	for size := max(initial, 1); n > 0; size *= 2 {
		b := min(size, n)
		out = append(out, b)
		n -= b
	}
	return out
}

// slowStart calls fn count times in batches of growing size (see
// slowStartBatches), the calls of a batch concurrently (at most maxInFlight
// at a time). A batch with an error is the last: a call that fails (quota,
// an invalid template, the apiserver refusing) would most likely fail for
// every pod, so the ReplicaSet does not send a flood of doomed calls. It
// returns how many calls succeeded and the first error.
func slowStart(count, initial int, fn func() error) (int, error) {
	done := 0
	for _, size := range slowStartBatches(count, initial) {
		ok, err := parallel(size, func(int) error { return fn() })
		done += ok
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// parallel calls fn(0) to fn(size-1) on at most maxInFlight goroutines and
// returns the number of calls that succeeded and the first error.
func parallel(size int, fn func(i int) error) (int, error) {
	var (
		next, ok atomic.Int64
		errOnce  sync.Once
		first    error
		wg       sync.WaitGroup
	)
	for range min(size, maxInFlight) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(size); i = next.Add(1) - 1 {
				if err := fn(int(i)); err != nil {
					errOnce.Do(func() { first = err })
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), first
}
