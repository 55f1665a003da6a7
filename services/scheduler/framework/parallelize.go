package framework

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// DefaultParallelism is Kubernetes' default number of goroutines per
// parallel step.
const DefaultParallelism = 16

// minPiecesPerWorker: below this many pieces per extra goroutine, the
// goroutine costs more than it saves (a Filter call is ~100ns).
const minPiecesPerWorker = 64

// Parallelizer runs a function over many pieces (nodes) with a bounded
// number of goroutines: at most its parallelism, and never more than
// GOMAXPROCS, since the work is pure CPU.
type Parallelizer struct {
	parallelism int
}

// NewParallelizer returns a Parallelizer of parallelism goroutines
// (DefaultParallelism when not positive).
func NewParallelizer(parallelism int) Parallelizer {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	return Parallelizer{parallelism: parallelism}
}

// Workers is how many goroutines ForEach would use for pieces.
func (p Parallelizer) Workers(pieces int) int {
	w := min(p.parallelism, runtime.GOMAXPROCS(0), pieces/minPiecesPerWorker)
	return max(w, 1)
}

// ForEach calls fn(i) for every i in [0, pieces) until fn returns false:
// then no further pieces are started (pieces already running finish).
// Pieces are handed out in chunks, in increasing order, to the workers.
func (p Parallelizer) ForEach(pieces int, fn func(i int) (more bool)) {
	p.ForEachChunk(pieces, func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			if !fn(i) {
				return false
			}
		}
		return true
	})
}

// maxChunk bounds a chunk, so that an early stop wastes little.
const maxChunk = 64

// ForEachChunk calls fn(lo, hi) for consecutive chunks covering [0,
// pieces), on up to Workers(pieces) goroutines, until fn returns false:
// then no further chunks are started. A single worker takes the chunks in
// order. Chunks hold at most maxChunk pieces.
func (p Parallelizer) ForEachChunk(pieces int, fn func(lo, hi int) (more bool)) {
	if pieces <= 0 {
		return
	}
	workers := p.Workers(pieces)
	if workers == 1 {
		for lo := 0; lo < pieces; lo += maxChunk {
			if !fn(lo, min(lo+maxChunk, pieces)) {
				return
			}
		}
		return
	}
	chunk := max(1, min(pieces/(workers*4), maxChunk))
	var next atomic.Int64
	var stop atomic.Bool
	work := func() {
		for !stop.Load() {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= pieces {
				return
			}
			if !fn(lo, min(lo+chunk, pieces)) {
				stop.Store(true)
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
