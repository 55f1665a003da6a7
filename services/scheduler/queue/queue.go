// Package queue is the scheduler's queue of pods waiting for a node, the
// equivalent of Kubernetes' PriorityQueue. A pod is in exactly one place:
//
//	activeQ        ready to be tried: a heap by priority (higher first),
//	               then by when it entered (earlier first)
//	backoffQ       failed recently: waits out its backoff, which doubles with
//	               each attempt (PodInitialBackoff .. PodMaxBackoff), then
//	               moves to activeQ; while activeQ is empty, a pod that
//	               was unschedulable (not one that met an error) is popped
//	               from here at once, as Kubernetes' SchedulerPopFromBackoffQ
//	               does (an idle scheduler does not wait out a backoff: a
//	               preemptor whose victims left binds at once)
//	unschedulable  fit nowhere last time: waits until something that could
//	               help happens (MoveAllToActiveOrBackoff: a node added or
//	               changed, a pod deleted, an allocation dropped), or until
//	               it has waited MaxInUnschedulable
//	in flight      popped, being scheduled or bound
//
// The scheduling loop runs:
//
//	qp, ok := q.Pop()                 // blocks; ok is false once closed
//	... schedule qp ...
//	q.Done(qp.UID())                  // placed (or skipped)
//	// or, when it fits nowhere or failed:
//	q.AddUnschedulableIfNotPresent(qp, cycle, unschedulable)
//
// where cycle is SchedulingCycle() read right after Pop. If something that
// could help happened while the pod was in flight (its cycle is not after
// the last move request), the pod goes to backoffQ rather than
// unschedulable, so the event is not missed. Updates and deletes of a pod
// in flight are remembered and applied when it comes back.
//
// The package owns these queues, the backoff and their timers (Run). It
// does not decide which events help (the scheduler calls
// MoveAllToActiveOrBackoff) nor which pods are its to schedule.
package queue

import (
	"container/heap"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/framework"
)

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	// Timestamp is when the pod last entered the queue.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod first entered the queue (for
	// the scheduling latency SLI).
	InitialAttemptTimestamp time.Time
	// Attempts counts the times the pod was popped.
	Attempts int
	// UnschedulablePlugins rejected the pod in its last attempt.
	UnschedulablePlugins []string

	backoffUntil time.Time
	errored      bool      // its last attempt failed with an error
	since        time.Time // entered the unschedulable set
	seq          uint64    // ties on Timestamp keep arrival order
	where        location
	index        int // in its heap
}

type location int

const (
	nowhere location = iota
	inActive
	inBackoff
	inUnschedulable
)

// Options configure a Queue.
type Options struct {
	Clock              workqueue.Clock // nil: the real clock
	InitialBackoff     time.Duration   // default 1s
	MaxBackoff         time.Duration   // default 10s
	MaxInUnschedulable time.Duration   // default 5m
}

// Queue is the scheduling queue. It is safe for concurrent use.
type Queue struct {
	clock          workqueue.Clock
	initialBackoff time.Duration
	maxBackoff     time.Duration
	maxUnsched     time.Duration

	mu            sync.Mutex
	cond          *sync.Cond
	active        podHeap
	backoff       podHeap
	unschedulable map[string]*QueuedPodInfo
	pods          map[string]*QueuedPodInfo // every queued (not in flight) pod by uid
	inFlight      map[string]*flight
	seq           uint64
	cycle         int64 // incremented by every Pop
	moveRequest   int64 // the cycle of the last MoveAllToActiveOrBackoff
	// pluginMoves holds, per plugin, the cycle of the last
	// MoveRejectedBy(plugin).
	pluginMoves map[string]int64
	closed      bool
	wake        chan struct{}
}

// flight is what happened to a pod while it was in flight.
type flight struct {
	latest  *framework.PodInfo // the newest version
	updated bool               // latest came after Pop
	changed bool               // an update could make it schedulable
	deleted bool
}

// New returns an empty queue. Call Run to move pods out of backoff.
func New(o Options) *Queue {
	if o.Clock == nil {
		o.Clock = workqueue.RealClock()
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.MaxBackoff < o.InitialBackoff {
		o.MaxBackoff = o.InitialBackoff
	}
	if o.MaxInUnschedulable <= 0 {
		o.MaxInUnschedulable = 5 * time.Minute
	}
	q := &Queue{
		clock:          o.Clock,
		initialBackoff: o.InitialBackoff,
		maxBackoff:     o.MaxBackoff,
		maxUnsched:     o.MaxInUnschedulable,
		active:         podHeap{less: activeLess},
		backoff:        podHeap{less: backoffLess},
		unschedulable:  map[string]*QueuedPodInfo{},
		pods:           map[string]*QueuedPodInfo{},
		inFlight:       map[string]*flight{},
		pluginMoves:    map[string]int64{},
		wake:           make(chan struct{}, 1),
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// activeLess: higher priority first, then earlier arrival.
func activeLess(a, b *QueuedPodInfo) bool {
	pa, pb := a.Priority(), b.Priority()
	if pa != pb {
		return pa > pb
	}
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	return a.seq < b.seq
}

func backoffLess(a, b *QueuedPodInfo) bool {
	if !a.backoffUntil.Equal(b.backoffUntil) {
		return a.backoffUntil.Before(b.backoffUntil)
	}
	return a.seq < b.seq
}

// Add queues a new pod (or updates it if already queued).
func (q *Queue) Add(pi *framework.PodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addOrUpdateLocked(pi)
}

// Update replaces a queued pod by its newer version. A pod waiting as
// unschedulable whose spec, labels or annotations changed is retried
// (after its backoff); a pod not queued is added.
func (q *Queue) Update(pi *framework.PodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addOrUpdateLocked(pi)
}

func (q *Queue) addOrUpdateLocked(pi *framework.PodInfo) {
	uid := pi.UID()
	if f, ok := q.inFlight[uid]; ok {
		if mayHelp(f.latest.Pod, pi.Pod) {
			f.changed = true
		}
		f.latest, f.updated = pi, true
		return
	}
	qp, ok := q.pods[uid]
	if !ok {
		now := q.clock.Now()
		qp = &QueuedPodInfo{PodInfo: pi, Timestamp: now, InitialAttemptTimestamp: now}
		q.pushActive(qp)
		return
	}
	old := qp.PodInfo
	qp.PodInfo = pi
	switch qp.where {
	case inActive:
		heap.Fix(&q.active, qp.index)
	case inBackoff:
	case inUnschedulable:
		if mayHelp(old.Pod, pi.Pod) {
			delete(q.unschedulable, uid)
			q.activeOrBackoffLocked(qp, q.clock.Now())
		}
	}
}

// mayHelp reports whether an update of a pod could make it fit: its spec
// (selectors, tolerations, requests...), labels or annotations changed,
// not only its status or metadata bookkeeping.
func mayHelp(old *corev1.Pod, cur *corev1.Pod) bool {
	if !proto.Equal(old.GetSpec(), cur.GetSpec()) {
		return true
	}
	om, cm := old.GetMetadata(), cur.GetMetadata()
	return !maps.Equal(om.GetLabels(), cm.GetLabels()) || !maps.Equal(om.GetAnnotations(), cm.GetAnnotations())
}

func (q *Queue) pushActive(qp *QueuedPodInfo) {
	q.seq++
	qp.seq = q.seq
	qp.where = inActive
	heap.Push(&q.active, qp)
	q.pods[qp.UID()] = qp
	q.cond.Signal()
}

func (q *Queue) pushBackoff(qp *QueuedPodInfo) {
	q.seq++
	qp.seq = q.seq
	qp.where = inBackoff
	heap.Push(&q.backoff, qp)
	q.pods[qp.UID()] = qp
	q.poke()
	if !qp.errored {
		q.cond.Signal() // Pop may take it while activeQ is empty
	}
}

// activeOrBackoffLocked sends qp to activeQ if its backoff is over, else
// to backoffQ.
func (q *Queue) activeOrBackoffLocked(qp *QueuedPodInfo, now time.Time) {
	if now.Before(qp.backoffUntil) {
		q.pushBackoff(qp)
	} else {
		q.pushActive(qp)
	}
}

// poke wakes Run to recompute its timer.
func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Delete removes the pod with uid wherever it is; a pod in flight is
// dropped when it comes back.
func (q *Queue) Delete(uid string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f, ok := q.inFlight[uid]; ok {
		f.deleted = true
		return
	}
	qp, ok := q.pods[uid]
	if !ok {
		return
	}
	q.removeLocked(qp)
}

func (q *Queue) removeLocked(qp *QueuedPodInfo) {
	switch qp.where {
	case inActive:
		heap.Remove(&q.active, qp.index)
	case inBackoff:
		heap.Remove(&q.backoff, qp.index)
	case inUnschedulable:
		delete(q.unschedulable, qp.UID())
	}
	qp.where = nowhere
	delete(q.pods, qp.UID())
}

// Pop returns the next pod to schedule, waiting for one; ok is false once
// the queue is closed.
func (q *Queue) Pop() (qp *QueuedPodInfo, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && q.poppableBackoffLocked() == nil && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, false
	}
	if q.active.Len() > 0 {
		qp = heap.Pop(&q.active).(*QueuedPodInfo)
	} else {
		qp = q.poppableBackoffLocked()
		heap.Remove(&q.backoff, qp.index)
	}
	qp.where = nowhere
	delete(q.pods, qp.UID())
	qp.Attempts++
	q.cycle++
	q.inFlight[qp.UID()] = &flight{latest: qp.PodInfo}
	return qp, true
}

// poppableBackoffLocked is the pod Pop takes from backoffQ when activeQ is
// empty: of the pods there that were unschedulable (not errored), the one
// whose backoff ends first; nil if none.
func (q *Queue) poppableBackoffLocked() *QueuedPodInfo {
	var best *QueuedPodInfo
	for _, qp := range q.backoff.items {
		if !qp.errored && (best == nil || backoffLess(qp, best)) {
			best = qp
		}
	}
	return best
}

// SchedulingCycle is the number of pods popped so far.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cycle
}

// Done ends a popped pod's flight (it was placed, or is no longer ours).
func (q *Queue) Done(uid string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, uid)
}

// AddUnschedulableIfNotPresent takes back a popped pod that did not get a
// node: it goes to the unschedulable set if it fits nowhere and nothing
// that could help happened since its cycle began; otherwise (an error, an
// update or a move request meanwhile) to backoffQ. A pod deleted in
// flight is dropped; one updated in flight comes back as its newest
// version.
func (q *Queue) AddUnschedulableIfNotPresent(qp *QueuedPodInfo, podCycle int64, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := qp.UID()
	f := q.inFlight[uid]
	delete(q.inFlight, uid)
	if f != nil && f.deleted {
		return
	}
	if _, queued := q.pods[uid]; queued {
		return
	}
	if f != nil && f.updated {
		qp.PodInfo = f.latest
	}
	now := q.clock.Now()
	qp.Timestamp = now
	qp.backoffUntil = now.Add(q.backoffDuration(qp.Attempts))
	qp.errored = !unschedulable
	if !unschedulable || (f != nil && f.changed) || q.moveRequest >= podCycle || q.movedForLocked(qp, podCycle) {
		q.pushBackoff(qp)
		return
	}
	qp.where = inUnschedulable
	qp.since = now
	q.unschedulable[uid] = qp
	q.pods[uid] = qp
}

// backoffDuration is InitialBackoff doubled per attempt after the first,
// at most MaxBackoff.
func (q *Queue) backoffDuration(attempts int) time.Duration {
	d := q.initialBackoff
	for i := 1; i < attempts; i++ {
		d *= 2
		if d >= q.maxBackoff {
			return q.maxBackoff
		}
	}
	return d
}

// MoveAllToActiveOrBackoff retries every unschedulable pod: something
// happened that could make it fit (event names it, for logs).
func (q *Queue) MoveAllToActiveOrBackoff(event string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for uid, qp := range q.unschedulable {
		delete(q.unschedulable, uid)
		q.activeOrBackoffLocked(qp, now)
	}
	q.moveRequest = q.cycle
}

// MoveRejectedBy retries the unschedulable pods that plugin rejected: for
// an event only that plugin cares about (a pod placed somewhere can only
// help a spread constraint). event names it, for logs.
func (q *Queue) MoveRejectedBy(plugin, event string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pluginMoves[plugin] = q.cycle
	if len(q.unschedulable) == 0 {
		return
	}
	now := q.clock.Now()
	for uid, qp := range q.unschedulable {
		if slices.Contains(qp.UnschedulablePlugins, plugin) {
			delete(q.unschedulable, uid)
			q.activeOrBackoffLocked(qp, now)
		}
	}
}

// movedForLocked reports whether a plugin that rejected qp asked for a
// move since qp's cycle began.
func (q *Queue) movedForLocked(qp *QueuedPodInfo, podCycle int64) bool {
	for _, p := range qp.UnschedulablePlugins {
		if c, ok := q.pluginMoves[p]; ok && c >= podCycle {
			return true
		}
	}
	return false
}

// flushBackoff moves the pods whose backoff ended by now to activeQ, and
// returns when the next one ends (zero if none).
func (q *Queue) flushBackoff(now time.Time) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.backoff.Len() > 0 {
		top := q.backoff.items[0]
		if now.Before(top.backoffUntil) {
			return top.backoffUntil
		}
		heap.Pop(&q.backoff)
		q.pushActive(top)
	}
	return time.Time{}
}

// flushUnschedulable retries the pods that waited MaxInUnschedulable.
func (q *Queue) flushUnschedulable(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for uid, qp := range q.unschedulable {
		if now.Sub(qp.since) >= q.maxUnsched {
			delete(q.unschedulable, uid)
			q.activeOrBackoffLocked(qp, now)
		}
	}
}

// unschedulableFlushPeriod is how often Run looks for pods that waited
// too long as unschedulable.
const unschedulableFlushPeriod = 30 * time.Second

// Run moves pods out of backoff when it ends, and long-waiting
// unschedulable pods back, until ctx ends; then it closes the queue.
func (q *Queue) Run(ctx context.Context) {
	defer q.Close()
	nextFlush := q.clock.Now().Add(unschedulableFlushPeriod)
	for {
		now := q.clock.Now()
		if !now.Before(nextFlush) {
			q.flushUnschedulable(now)
			nextFlush = now.Add(unschedulableFlushPeriod)
		}
		wakeAt := nextFlush
		if next := q.flushBackoff(now); !next.IsZero() && next.Before(wakeAt) {
			wakeAt = next
		}
		timer := workqueue.NewTimerAt(q.clock, wakeAt)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		case <-q.wake:
			timer.Stop()
		}
	}
}

// Close wakes every Pop, which then returns ok false.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Lengths are the sizes of the queues, for metrics.
type Lengths struct {
	Active, Backoff, Unschedulable, InFlight int
}

// Lengths returns the number of pods in each place.
func (q *Queue) Lengths() Lengths {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Lengths{Active: q.active.Len(), Backoff: q.backoff.Len(), Unschedulable: len(q.unschedulable), InFlight: len(q.inFlight)}
}

// podHeap is a heap of queued pods that tracks each pod's index.
type podHeap struct {
	items []*QueuedPodInfo
	less  func(a, b *QueuedPodInfo) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPodInfo)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	qp.index = -1
	return qp
}
