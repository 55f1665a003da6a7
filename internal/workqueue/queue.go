package workqueue

import "sync"

// Options configure a Queue. The zero value of each field picks a default.
type Options[K comparable] struct {
	// Name labels the queue's metrics.
	Name string
	// Metrics records what the queue does; nil: unregistered metrics.
	Metrics *Metrics
	// Clock times delays and metrics; nil: RealClock().
	Clock Clock
	// RateLimiter computes AddRateLimited's delays; nil: DefaultRateLimiter.
	RateLimiter RateLimiter[K]
}

// Queue is a rate-limited work queue of keys. All methods are safe for
// concurrent use. Create it with New; after use, call ShutDown (or
// ShutDownWithDrain) to end its delay goroutine, if AddAfter started one,
// and to remove it from its Metrics.
type Queue[K comparable] struct {
	name    string
	clock   Clock
	limiter RateLimiter[K]
	metrics *Metrics

	mu           sync.Mutex
	cond         *sync.Cond // signalled when queue grows, processing empties or shutdown starts
	queue        []K        // FIFO of keys ready for Get; each is also in dirty
	dirty        map[K]struct{}
	processing   map[K]struct{}
	shuttingDown bool
	drain        bool // a ShutDownWithDrain waits for processing to empty
	m            queueMetrics[K]

	delay delayState[K]
}

// New returns a running queue.
func New[K comparable](o Options[K]) *Queue[K] {
	if o.Clock == nil {
		o.Clock = RealClock()
	}
	if o.RateLimiter == nil {
		o.RateLimiter = DefaultRateLimiter[K]()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	q := &Queue[K]{
		name:       o.Name,
		clock:      o.Clock,
		limiter:    o.RateLimiter,
		metrics:    o.Metrics,
		dirty:      make(map[K]struct{}),
		processing: make(map[K]struct{}),
		m:          newQueueMetrics[K](o.Metrics, o.Name, o.Clock),
	}
	q.cond = sync.NewCond(&q.mu)
	q.delay.init()
	q.metrics.inFlight.add(q)
	return q
}

// Add queues k, unless it is queued already. If k is being processed, it
// is queued again when Done(k) is called. After ShutDown, Add does nothing.
func (q *Queue[K]) Add(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(k)
}

func (q *Queue[K]) addLocked(k K) {
	if q.shuttingDown {
		return
	}
	if _, ok := q.dirty[k]; ok {
		return
	}
	q.dirty[k] = struct{}{}
	q.m.added(k)
	if _, ok := q.processing[k]; ok {
		return // Done queues it
	}
	q.push(k)
}

func (q *Queue[K]) push(k K) {
	q.queue = append(q.queue, k)
	q.m.queued()
	q.cond.Signal()
}

// Get blocks until a key is ready and hands it out; the caller must call
// Done(k) when finished with it. Once the queue is shut down and empty, Get
// returns shutdown = true.
func (q *Queue[K]) Get() (k K, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shuttingDown {
		q.cond.Wait()
	}
	if len(q.queue) == 0 {
		return k, true
	}
	k = q.queue[0]
	var zero K
	q.queue[0] = zero // let the backing array drop its reference
	q.queue = q.queue[1:]
	delete(q.dirty, k)
	q.processing[k] = struct{}{}
	q.m.got(k)
	return k, false
}

// Done marks k as processed. If k was added while being processed, it is
// queued again now. Done of a key not handed out by Get does nothing.
func (q *Queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.processing[k]; !ok {
		return
	}
	delete(q.processing, k)
	q.m.done(k)
	if _, ok := q.dirty[k]; ok {
		q.push(k)
	}
	if q.shuttingDown && len(q.processing) == 0 {
		q.cond.Broadcast() // a ShutDownWithDrain may be waiting
	}
}

// Len returns the number of keys ready for Get (not counting keys waiting
// for a delay, nor dirty keys being processed).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// ShutDown makes the queue ignore new keys, drops delayed keys, and makes Get
// return shutdown = true once the keys already queued are handed out.
func (q *Queue[K]) ShutDown() { q.shutDown(false) }

// ShutDownWithDrain is ShutDown, then waits until every key handed out by Get
// is Done. Calling it from a worker that holds a key deadlocks.
func (q *Queue[K]) ShutDownWithDrain() { q.shutDown(true) }

func (q *Queue[K]) shutDown(drain bool) {
	q.stopDelay()
	q.mu.Lock()
	q.shuttingDown = true
	q.drain = drain // a plain ShutDown ends a concurrent drain
	q.cond.Broadcast()
	for q.drain && len(q.processing) > 0 {
		q.cond.Wait()
	}
	q.mu.Unlock()
	q.metrics.inFlight.remove(q)
}

// ShuttingDown reports whether ShutDown has been called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shuttingDown
}

func (q *Queue[K]) metricsName() string { return q.name }

func (q *Queue[K]) inFlight() (unfinished, longest float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.m.inFlight()
}
