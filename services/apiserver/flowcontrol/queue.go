package flowcontrol

import (
	"context"
	"sync"
	"time"
)

// seats is one pool of seats (one priority level, one kind of request)
// with a fair queue per flow (user) in front of it.
//
// No flow holds more than flowCap seats (the level's seats less a
// quarter, at least one): a flooding user leaves a seat free, and another
// user's request takes it at once instead of queueing behind the flood.
// A request takes a free seat when its flow is under the cap and has none
// waiting; otherwise it queues. When a seat frees, the queues are served
// round-robin among the flows under the cap, one request per turn.
//
// Everything holds mu, briefly: a map lookup and a few counters. Flows
// are kept while idle (no seat, nobody waiting) so that a user's next
// request allocates nothing; idle flows are dropped when there are more
// than maxIdleFlows.
type seats struct {
	limit       int
	flowCap     int
	queueLength int

	mu        sync.Mutex
	executing int
	waiting   int
	flows     map[string]*flow
	idle      int // flows with no seat and nobody waiting
	// The ring of flows with waiters, in the order they are served: the
	// head gives one request, then goes to the back if it has more.
	head, tail *flow

	// queuedHook, when set (tests), runs after a request is queued.
	queuedHook func()
}

// maxIdleFlows bounds the idle flows kept for reuse.
const maxIdleFlows = 1024

// flow is one user's seats and queue in one pool.
type flow struct {
	name       string
	series     *series // the metrics of its first request's flow schema
	executing  int
	waiters    []*waiter
	prev, next *flow
	inRing     bool
	release    func() // gives back one of its seats
}

// waiter is a queued request.
type waiter struct {
	ready      chan struct{} // closed when dispatched
	dispatched bool          // under mu
	flow       *flow
	since      time.Time
}

func newSeats(limit, queueLength int) *seats {
	return &seats{limit: limit, flowCap: max(1, limit-(limit+3)/4), queueLength: queueLength, flows: map[string]*flow{}}
}

// flowLocked returns the flow of name, making it if needed (under mu).
func (p *seats) flowLocked(name string, s *series) *flow {
	if f := p.flows[name]; f != nil {
		if f.executing == 0 && len(f.waiters) == 0 {
			p.idle--
		}
		return f
	}
	if p.idle > maxIdleFlows {
		p.dropIdle()
	}
	f := &flow{name: name, series: s}
	f.release = func() { p.release(f) }
	p.flows[name] = f
	return f
}

// settleLocked counts f as idle if it is (under mu).
func (p *seats) settleLocked(f *flow) {
	if f.executing == 0 && len(f.waiters) == 0 {
		p.idle++
	}
}

func (p *seats) dropIdle() {
	for name, f := range p.flows {
		if f.executing == 0 && len(f.waiters) == 0 {
			delete(p.flows, name)
		}
	}
	p.idle = 0
}

// release gives one of f's seats back and hands free seats to the queues.
func (p *seats) release(f *flow) {
	p.mu.Lock()
	p.executing--
	f.executing--
	f.series.executing.Dec()
	if p.waiting > 0 {
		p.dispatchLocked()
	}
	p.settleLocked(f)
	p.mu.Unlock()
}

// dispatchLocked hands free seats to waiters of flows under the cap,
// round-robin (under mu).
func (p *seats) dispatchLocked() {
	for p.executing < p.limit {
		f := p.head
		for f != nil && f.executing >= p.flowCap {
			f = f.next
		}
		if f == nil {
			return // nobody waits, or only flows at their cap
		}
		w := f.waiters[0]
		f.waiters[0] = nil
		f.waiters = f.waiters[1:]
		p.waiting--
		p.executing++
		f.executing++
		f.series.inQueue.Dec()
		f.series.executing.Inc()
		w.dispatched = true
		close(w.ready)
		p.unlink(f)
		if len(f.waiters) > 0 {
			p.pushBack(f)
		}
	}
}

// outcome is how a wait ended.
type outcome int

const (
	dispatched outcome = iota
	queueFull
	timedOut
	cancelled
)

// acquire gets a seat for a request of flow name: at once when one is
// free for it, else after waiting in its queue until a seat is handed to
// it, the queue is full, maxWait passes (or less, at ctx's deadline) or
// ctx ends. With dispatched the caller holds a seat and gives it back with
// f.release; otherwise it holds none. queued is the flow's queue length
// seen, waited how long it waited. s is the request's flow schema's
// metrics (a new flow's).
func (p *seats) acquire(ctx context.Context, name string, s *series, maxWait time.Duration) (f *flow, res outcome, queued int, waited time.Duration) {
	p.mu.Lock()
	f = p.flowLocked(name, s)
	if p.executing < p.limit && f.executing < p.flowCap && len(f.waiters) == 0 {
		p.executing++
		f.executing++
		f.series.executing.Inc()
		p.mu.Unlock()
		f.series.admitted(0)
		return f, dispatched, 0, 0
	}
	if n := len(f.waiters); n >= p.queueLength {
		p.settleLocked(f)
		p.mu.Unlock()
		return f, queueFull, n, 0
	}
	w := &waiter{ready: make(chan struct{}), flow: f, since: time.Now()}
	f.waiters = append(f.waiters, w)
	if len(f.waiters) == 1 {
		p.pushBack(f)
	}
	queued = len(f.waiters)
	p.waiting++
	f.series.inQueue.Inc()
	p.mu.Unlock()
	if p.queuedHook != nil {
		p.queuedHook()
	}

	if deadline, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, time.Until(deadline))
	}
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	res = dispatched
	select {
	case <-w.ready:
	case <-ctx.Done():
		res = cancelled
		if ctx.Err() == context.DeadlineExceeded {
			res = timedOut
		}
	case <-timer.C:
		res = timedOut
	}
	if res != dispatched {
		p.mu.Lock()
		switch {
		case !w.dispatched:
			p.remove(w)
			f.series.inQueue.Dec()
			p.settleLocked(f)
			p.mu.Unlock()
		case res == timedOut && ctx.Err() == nil:
			// The seat came as the wait ended: use it.
			p.mu.Unlock()
			res = dispatched
		default:
			// The seat came as the client left: give it back.
			p.mu.Unlock()
			p.release(f)
		}
	}
	waited = time.Since(w.since)
	if res == dispatched {
		f.series.admitted(waited)
	} else {
		f.series.waitRefused.Observe(waited.Seconds())
	}
	return f, res, queued, waited
}

// remove takes a waiter that gave up out of its flow's queue (under mu).
func (p *seats) remove(w *waiter) {
	f := w.flow
	for i, x := range f.waiters {
		if x == w {
			copy(f.waiters[i:], f.waiters[i+1:])
			f.waiters[len(f.waiters)-1] = nil
			f.waiters = f.waiters[:len(f.waiters)-1]
			p.waiting--
			break
		}
	}
	if len(f.waiters) == 0 {
		p.unlink(f)
	}
}

func (p *seats) pushBack(f *flow) {
	f.prev, f.next, f.inRing = p.tail, nil, true
	if p.tail != nil {
		p.tail.next = f
	} else {
		p.head = f
	}
	p.tail = f
}

func (p *seats) unlink(f *flow) {
	if !f.inRing {
		return
	}
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		p.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		p.tail = f.prev
	}
	f.prev, f.next, f.inRing = nil, nil, false
}

// state is what tests check: seats taken, requests queued, flows kept.
func (p *seats) state() (executing, waiting, ring int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for f := p.head; f != nil; f = f.next {
		ring++
	}
	return p.executing, p.waiting, ring
}
