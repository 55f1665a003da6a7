package workqueue

import (
	"container/heap"
	"sync"
	"time"
)

// delayState holds the keys waiting for AddAfter's delay and the goroutine
// that adds them when their time comes. The goroutine starts with the first
// delayed key and ends at ShutDown.
type delayState[K comparable] struct {
	mu      sync.Mutex
	waiting waitHeap[K]
	byKey   map[K]*waitEntry[K]
	seq     uint64        // FIFO among keys ready at the same instant
	started bool          // the loop is running
	stopped bool          // ShutDown was called
	wake    chan struct{} // buffered: the heap's head may have changed
	stop    chan struct{} // closed by ShutDown
	exited  chan struct{} // closed by the loop as it ends
}

func (d *delayState[K]) init() {
	d.byKey = make(map[K]*waitEntry[K])
	d.wake = make(chan struct{}, 1)
	d.stop = make(chan struct{})
	d.exited = make(chan struct{})
}

// AddAfter adds k once d has passed on the queue's clock; d <= 0 adds it
// now. If k is already waiting, the earlier of the two times wins. After
// ShutDown, AddAfter does nothing.
func (q *Queue[K]) AddAfter(k K, d time.Duration) {
	if q.ShuttingDown() {
		return
	}
	if d <= 0 {
		q.Add(k)
		return
	}
	readyAt := q.clock.Now().Add(d)

	q.delay.mu.Lock()
	defer q.delay.mu.Unlock()
	s := &q.delay
	if s.stopped {
		return
	}
	if e, ok := s.byKey[k]; ok {
		if !readyAt.Before(e.readyAt) {
			return
		}
		e.readyAt = readyAt
		heap.Fix(&s.waiting, e.index)
	} else {
		s.seq++
		e := &waitEntry[K]{key: k, readyAt: readyAt, seq: s.seq}
		heap.Push(&s.waiting, e)
		s.byKey[k] = e
	}
	if !s.started {
		s.started = true
		go q.delayLoop()
	}
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// delayLoop adds waiting keys as they become ready, sleeping on one timer
// armed for the earliest.
func (q *Queue[K]) delayLoop() {
	s := &q.delay
	defer close(s.exited)
	var (
		timer    Timer
		timerC   <-chan time.Time
		armedFor time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := q.clock.Now()
		var ready []K
		s.mu.Lock()
		for len(s.waiting) > 0 && !s.waiting[0].readyAt.After(now) {
			e := heap.Pop(&s.waiting).(*waitEntry[K])
			delete(s.byKey, e.key)
			ready = append(ready, e.key)
		}
		var next time.Time
		if len(s.waiting) > 0 {
			next = s.waiting[0].readyAt
		}
		s.mu.Unlock()

		for _, k := range ready {
			q.Add(k)
		}
		if timer != nil && !next.Equal(armedFor) {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if timer == nil && !next.IsZero() {
			timer, armedFor = NewTimerAt(q.clock, next), next
			timerC = timer.C()
		}

		select {
		case <-s.stop:
			return
		case <-timerC:
			timer, timerC = nil, nil
		case <-s.wake:
		}
	}
}

// stopDelay drops the waiting keys and ends the loop, if it runs.
func (q *Queue[K]) stopDelay() {
	s := &q.delay
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	started := s.started
	s.waiting, s.byKey = nil, nil
	close(s.stop)
	s.mu.Unlock()
	if started {
		<-s.exited
	}
}

type waitEntry[K comparable] struct {
	key     K
	readyAt time.Time
	seq     uint64
	index   int // in waitHeap, maintained by heap.Interface
}

// waitHeap orders entries by readyAt, then by insertion.
type waitHeap[K comparable] []*waitEntry[K]

func (h waitHeap[K]) Len() int { return len(h) }

func (h waitHeap[K]) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].seq < h[j].seq
}

func (h waitHeap[K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *waitHeap[K]) Push(x any) {
	e := x.(*waitEntry[K])
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *waitHeap[K]) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}
