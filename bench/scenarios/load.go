package scenarios

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// load is a closed-loop load: clients goroutines each call op back to back.
// After warmup a window opens for duration (longer if fewer than minOps
// completed in it); the operations that complete inside the window are
// counted and timed, and the process CPU spent in it is measured.
type load struct {
	clients  int
	warmup   time.Duration
	duration time.Duration
	minOps   int64
	// interval, when set, paces each client: an operation starts at most
	// every interval (a polite client); the pause is not latency.
	interval time.Duration
	// op performs operation seq of client; an error ends the load.
	op func(ctx context.Context, client, seq int) error
}

// loadResult is what a load measured in its window.
type loadResult struct {
	ops     int64
	elapsed time.Duration
	cpu     time.Duration
	latency Histogram
}

func (r *loadResult) perSecond() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// add accumulates another window's result (rounds of the same load).
func (r *loadResult) add(o *loadResult) {
	r.ops += o.ops
	r.elapsed += o.elapsed
	r.cpu += o.cpu
	r.latency.Merge(&o.latency)
}

// cpuPerOp is the process CPU per operation, in microseconds.
func (r *loadResult) cpuPerOp() float64 {
	if r.ops == 0 {
		return 0
	}
	return float64(r.cpu.Microseconds()) / float64(r.ops)
}

func (l load) run(parent context.Context) (*loadResult, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		measuring  atomic.Bool
		windowOps  atomic.Int64
		enough     = make(chan struct{}) // closed when minOps completed in the window
		enoughOnce sync.Once
		wg         sync.WaitGroup
		errOnce    sync.Once
		firstErr   error
	)
	if l.minOps <= 0 {
		close(enough)
	}
	settle()
	hists := make([]Histogram, l.clients)
	for c := range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				start := time.Now()
				err := l.op(ctx, c, seq)
				if err != nil {
					if ctx.Err() == nil {
						errOnce.Do(func() { firstErr = err })
						cancel()
					}
					return
				}
				if measuring.Load() {
					hists[c].Record(time.Since(start))
					if windowOps.Add(1) == l.minOps {
						enoughOnce.Do(func() { close(enough) })
					}
				}
				if l.interval > 0 {
					if d := time.Until(start.Add(l.interval)); d > 0 {
						pause := time.NewTimer(d)
						select {
						case <-ctx.Done():
						case <-pause.C:
						}
						pause.Stop()
					}
				}
			}
		}()
	}

	res := &loadResult{}
	wait := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	wait(l.warmup)
	cpu0, t0 := cpuTime(), time.Now()
	measuring.Store(true)
	wait(l.duration)
	select {
	case <-enough:
	case <-ctx.Done():
	}
	measuring.Store(false)
	res.ops, res.elapsed, res.cpu = windowOps.Load(), time.Since(t0), cpuTime()-cpu0
	cancel()
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	for i := range hists {
		res.latency.Merge(&hists[i])
	}
	return res, nil
}
