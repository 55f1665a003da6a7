package flowcontrol

import (
	"context"
	"sync"
	"time"
)

// seats is one pool of seats (one priority level, one kind of request)
// with a fair queue per flow (user) in front of it.
//
// A request needs a number of seats, its width (estimate.go: one, or more
// for a List of many objects), and holds them all while it executes. No
// flow holds more than flowCap seats (the level's seats less a quarter,
// at least one): a flooding user leaves seats free, and another user's
// request takes them at once instead of queueing behind the flood.
// A request takes its seats at once when they are free, its flow stays
// within the cap and has none waiting, and no queued request waits for
// free seats (blocked); otherwise it queues. When seats free, the queues
// are served round-robin among the flows that the head request keeps
// within the cap, one request per turn. When the next request is wider
// than the free seats, dispatching stops until enough are given back (as
// Kubernetes' fair queuing does): the seats freed meanwhile are kept for
// it, so a wide request is not starved by narrow ones.
//
// Everything holds mu, briefly: a map lookup and a few counters. Flows
// are kept while idle (no seat, nobody waiting) so that a user's next
// request allocates nothing; idle flows are dropped when there are more
// than maxIdleFlows.
type seats struct {
	limit       int
	flowCap     int
	maxWidth    int // the widest request: maxSeats, at most flowCap
	queueLength int

	mu        sync.Mutex
	executing int  // seats taken
	waiting   int  // requests queued
	blocked   bool // the next request to dispatch waits for more free seats
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
	executing  int     // seats held
	waiters    []*waiter
	prev, next *flow
	inRing     bool
	// releases[w] gives back w of its seats, made on first use (a
	// request's release allocates nothing).
	releases [maxSeats + 1]func()
}

// waiter is a queued request.
type waiter struct {
	ready      chan struct{} // closed when dispatched
	dispatched bool          // under mu
	flow       *flow
	width      int
	since      time.Time
}

func newSeats(limit, queueLength int) *seats {
	flowCap := max(1, limit-(limit+3)/4)
	return &seats{limit: limit, flowCap: flowCap, maxWidth: min(maxSeats, flowCap), queueLength: queueLength, flows: map[string]*flow{}}
}

// width bounds a request's estimated seats to what the pool can give it.
func (p *seats) width(estimate int) int { return min(max(estimate, 1), p.maxWidth) }

// releaseLocked returns the release of width seats of f (under mu).
func (p *seats) releaseLocked(f *flow, width int) func() {
	r := f.releases[width]
	if r == nil {
		r = func() { p.release(f, width) }
		f.releases[width] = r
	}
	return r
}

// fits says whether a request of width may take seats of f now.
func (p *seats) fits(f *flow, width int) bool {
	return p.executing+width <= p.limit && f.executing+width <= p.flowCap
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

// takeLocked gives width seats to a request of f (under mu).
func (p *seats) takeLocked(f *flow, width int) {
	p.executing += width
	f.executing += width
	f.series.executing.Inc()
	f.series.executingSeats.Add(float64(width))
}

// release gives width of f's seats back and hands free seats to the
// queues.
func (p *seats) release(f *flow, width int) {
	p.mu.Lock()
	p.executing -= width
	f.executing -= width
	f.series.executing.Dec()
	f.series.executingSeats.Sub(float64(width))
	if p.waiting > 0 {
		p.dispatchLocked()
	}
	p.settleLocked(f)
	p.mu.Unlock()
}

// dispatchLocked hands free seats to the head requests of the flows they
// keep within the cap, round-robin, until the next one is wider than the
// free seats (then blocked) or none is left (under mu).
func (p *seats) dispatchLocked() {
	p.blocked = false
	for {
		f := p.head
		for f != nil && f.executing+f.waiters[0].width > p.flowCap {
			f = f.next
		}
		if f == nil {
			return // nobody waits, or only flows at their cap
		}
		w := f.waiters[0]
		if p.executing+w.width > p.limit {
			p.blocked = true // the seats freed from now on are its
			return
		}
		f.waiters[0] = nil
		f.waiters = f.waiters[1:]
		p.waiting--
		f.series.inQueue.Dec()
		p.takeLocked(f, w.width)
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

// acquire gets width seats (from p.width) for a request of flow name: at
// once when they are free for it, else after waiting in its queue until
// they are handed to it, the queue is full, maxWait passes (or less, at
// ctx's deadline) or ctx ends. With dispatched the caller holds the seats
// and gives them back with release; otherwise it holds none. queued is
// the flow's queue length seen, waited how long it waited. s is the
// request's flow schema's metrics (a new flow's).
func (p *seats) acquire(ctx context.Context, name string, s *series, width int, maxWait time.Duration) (release func(), res outcome, queued int, waited time.Duration) {
	p.mu.Lock()
	f := p.flowLocked(name, s)
	if !p.blocked && len(f.waiters) == 0 && p.fits(f, width) {
		p.takeLocked(f, width)
		release = p.releaseLocked(f, width)
		p.mu.Unlock()
		f.series.admitted(0)
		return release, dispatched, 0, 0
	}
	if n := len(f.waiters); n >= p.queueLength {
		p.settleLocked(f)
		p.mu.Unlock()
		return noRelease, queueFull, n, 0
	}
	w := &waiter{ready: make(chan struct{}), flow: f, width: width, since: time.Now()}
	f.waiters = append(f.waiters, w)
	if len(f.waiters) == 1 {
		p.pushBack(f)
	}
	queued = len(f.waiters)
	p.waiting++
	f.series.inQueue.Inc()
	release = p.releaseLocked(f, width)
	// It may be the next to dispatch and wider than the free seats: then
	// the pool is blocked for it.
	p.dispatchLocked()
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
			// The pool may have been blocked for it, or for a request
			// that can go now.
			p.dispatchLocked()
			p.settleLocked(f)
			p.mu.Unlock()
		case res == timedOut && ctx.Err() == nil:
			// The seats came as the wait ended: use them.
			p.mu.Unlock()
			res = dispatched
		default:
			// The seats came as the client left: give them back.
			p.mu.Unlock()
			release()
		}
	}
	waited = time.Since(w.since)
	if res == dispatched {
		f.series.admitted(waited)
		return release, res, queued, waited
	}
	f.series.waitRefused.Observe(waited.Seconds())
	return noRelease, res, queued, waited
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

// state is what tests check: seats taken, requests queued, flows in the
// ring, and whether dispatching waits for free seats.
func (p *seats) state() (executing, waiting, ring int, blocked bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for f := p.head; f != nil; f = f.next {
		ring++
	}
	return p.executing, p.waiting, ring, p.blocked
}
